//! One running app per home. The first `nightshift` holds an exclusive lock for its life and
//! listens on a Unix socket; a second launch finds the lock taken, hands its arguments over the
//! socket (`--run-now NAME`, `--quit`, or none: show the window) and exits once the running app
//! has them. A lock, not the socket file, decides who is first, so a socket left by a killed app
//! is simply replaced and two launches at the same moment cannot both become the app. The app
//! removes its socket when it quits ([`Leaving::leave`]); a launch in that moment waits for the
//! lock and becomes the next app instead of failing.
//!
//! Both files live in the user's runtime directory (`$XDG_RUNTIME_DIR`, else the temp directory),
//! named after the user and the home's data directory: socket paths are short there, and two
//! homes (`NIGHTSHIFT_HOME`) are two apps.

use nightshift_core::Home;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a second launch waits for the running app (starting, or busy) to take its arguments.
const HAND_OVER_WITHIN: Duration = Duration::from_secs(10);

/// The longest request taken: a second launch's arguments (a routine's name, a flag) are a few
/// bytes; anything past this is not read, and the request is refused.
const MAX_REQUEST: u64 = 64 * 1024;

pub enum Claim {
    /// This is the app: serve second launches with [`Listener::serve`].
    First(Listener),
    /// The running app has this launch's arguments.
    Handed,
}

pub struct Listener {
    socket: UnixListener,
    path: PathBuf,
    /// Held (and locked) for the life of the process.
    _lock: std::fs::File,
}

/// The app's socket file, to remove when the app quits.
pub struct Leaving {
    path: PathBuf,
}

impl Leaving {
    /// Remove the socket: from here on a launch waits for the lock (freed as this process exits)
    /// instead of handing its request to an app that is going away.
    pub fn leave(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The lock and socket paths for `home`.
fn paths(home: &Home) -> (PathBuf, PathBuf) {
    use std::hash::{Hash, Hasher};
    let dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|d| d.is_dir()).unwrap_or_else(std::env::temp_dir);
    let data_dir = std::fs::canonicalize(home.data_dir()).unwrap_or_else(|_| home.data_dir().to_path_buf());
    // SipHash with fixed keys: the same name in every process of this binary.
    let mut hasher = std::hash::DefaultHasher::new();
    data_dir.hash(&mut hasher);
    // SAFETY: getuid has no preconditions.
    let stem = format!("nightshift-{}-{:016x}", unsafe { libc::getuid() }, hasher.finish());
    (dir.join(format!("{stem}.lock")), dir.join(format!("{stem}.sock")))
}

/// Become the app for `home`, or hand `argv` to the one that is.
pub fn claim(home: &Home, argv: &[String]) -> Result<Claim, String> {
    let (lock_path, socket_path) = paths(home);
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
    let start = Instant::now();
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return listen(socket_path, lock).map(Claim::First);
        }
        // The app may hold the lock a moment before it listens, or be quitting (its socket gone,
        // its lock about to be freed): try both again until one answers.
        match UnixStream::connect(&socket_path) {
            Ok(stream) => return hand_over(stream, argv).map(|()| Claim::Handed),
            Err(_) if start.elapsed() < HAND_OVER_WITHIN => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("Nightshift is running but does not answer at {} ({e}); quit it (or end its process) and start it again", socket_path.display())),
        }
    }
}

/// Listen on `socket_path`, replacing a socket left by a killed app (the lock says it is gone).
fn listen(socket_path: PathBuf, lock: std::fs::File) -> Result<Listener, String> {
    let _ = std::fs::remove_file(&socket_path);
    let socket = UnixListener::bind(&socket_path).map_err(|e| format!("cannot listen on {}: {e}", socket_path.display()))?;
    // Only this user may hand the app a request (the temp directory, unlike the runtime
    // directory, is shared).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&socket_path, std::fs::Permissions::from_mode(0o600)).map_err(|e| format!("cannot restrict {}: {e}", socket_path.display()))?;
    Ok(Listener { socket, path: socket_path, _lock: lock })
}

/// Send `argv` to the running app and wait until it has them.
fn hand_over(mut stream: UnixStream, argv: &[String]) -> Result<(), String> {
    let _ = stream.set_read_timeout(Some(HAND_OVER_WITHIN));
    let mut line = serde_json::to_vec(argv).map_err(|e| e.to_string())?;
    line.push(b'\n');
    stream.write_all(&line).map_err(|e| format!("could not reach the running Nightshift: {e}"))?;
    let mut answer = String::new();
    BufReader::new(&stream).read_line(&mut answer).map_err(|e| format!("the running Nightshift did not answer: {e}"))?;
    if answer.trim() != "ok" {
        return Err("the running Nightshift did not take the request; try again".into());
    }
    Ok(())
}

impl Listener {
    /// Hand each second launch's arguments to `on` (on a thread of its own), after telling that
    /// launch they arrived. The answer removes the socket when the app quits.
    pub fn serve(self, on: impl Fn(Vec<String>) + Send + 'static) -> Leaving {
        let leaving = Leaving { path: self.path.clone() };
        let spawned = std::thread::Builder::new().name("second-launch".into()).spawn(move || {
            let _lock = self._lock;
            for stream in self.socket.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(HAND_OVER_WITHIN));
                let mut line = String::new();
                if BufReader::new((&stream).take(MAX_REQUEST)).read_line(&mut line).is_err() {
                    continue;
                }
                match serde_json::from_str::<Vec<String>>(&line) {
                    Ok(argv) => {
                        let _ = stream.write_all(b"ok\n");
                        on(argv);
                    }
                    Err(e) => tracing::warn!(error = %e, "ignored a second launch's request that is not a list of arguments"),
                }
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot take second launches' requests");
        }
        leaving
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_launch_hands_its_arguments_to_the_first_and_a_killed_apps_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        std::env::set_var("XDG_RUNTIME_DIR", &runtime);
        let home = Home::at(dir.path().join("home"));
        home.bootstrap().unwrap();
        // A socket file left by an app that was killed: nobody listens there.
        let (_, socket_path) = paths(&home);
        drop(UnixListener::bind(&socket_path).unwrap());
        assert!(socket_path.exists());

        let Ok(Claim::First(listener)) = claim(&home, &[]) else { panic!("the first launch is the app") };
        let (tx, rx) = std::sync::mpsc::channel();
        let leaving = listener.serve(move |argv| tx.send(argv).unwrap());
        let argv: Vec<String> = ["nightshift", "--run-now", "hello"].map(String::from).to_vec();
        assert!(matches!(claim(&home, &argv), Ok(Claim::Handed)));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), argv);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&socket_path).unwrap().permissions().mode() & 0o777, 0o600, "only this user may hand requests over");

        // A request past the bound is not read whole and not taken; the next one is.
        let huge = vec!["x".repeat(MAX_REQUEST as usize)];
        assert!(claim(&home, &huge).is_err(), "an oversized request was taken");
        assert!(matches!(claim(&home, &argv), Ok(Claim::Handed)));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), argv, "only the request within the bound reached the app");

        // Another home is another app.
        let other = Home::at(dir.path().join("other"));
        other.bootstrap().unwrap();
        let Ok(Claim::First(quitting)) = claim(&other, &[]) else { panic!("another home's first launch is its app") };

        // The app quits: its socket goes at once…
        leaving.leave();
        assert!(!socket_path.exists(), "the socket outlived the app");
        // …and a launch in that moment waits for the lock and becomes the next app (here another
        // home's app quitting: its lock, unlike the served one's, is in this test's hands).
        Leaving { path: quitting.path.clone() }.leave();
        let next = std::thread::spawn(move || matches!(claim(&other, &[]), Ok(Claim::First(_))));
        std::thread::sleep(Duration::from_millis(300));
        assert!(!next.is_finished(), "a launch took over while the app still held its lock");
        drop(quitting);
        assert!(next.join().unwrap(), "the launch did not become the next app");
    }
}
