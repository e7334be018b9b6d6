//! Spawning a run's process and ending it — the OS-level part of the runner.
//!
//! * The agent runs in its **own process group**, so a timeout or cancel reaches every child it
//!   forked (SIGTERM to the group, a grace period, then SIGKILL to the group).
//! * stdout and stderr go **straight to files** in the run directory: the run keeps going and its
//!   output is kept even if the engine dies.
//! * It runs under a tiny `sh` wrapper that writes the agent's exit code to `exit_code` in the run
//!   directory. After an engine crash the new engine is not the process's parent and cannot
//!   `wait()` for it; the file tells it how the run ended, and the file's time when.
//! * The wrapper also **keeps the wall-clock timeout itself once no engine follows the run**:
//!   the limit travels with the run, so a run started by a CLI that returned, or left behind by a
//!   crash, still ends on time. It learns that its engine is gone from its stdin — a pipe whose
//!   other end only the engine holds, so the engine's exit (however it happens) ends it. While
//!   the engine follows the run the engine keeps the limit, and a run that ends before its engine
//!   costs the wrapper no timer at all (a burst of short runs pays for no `sleep` processes).
//! * When no engine follows the run any more, the wrapper also has what is left of its logs
//!   scrubbed of secrets after it records the exit code and before it exits ([`super::scrub`]):
//!   nobody settles a run while its wrapper lives, so whoever settles it later does not have to
//!   read its logs, and the exit-code file's time is still the moment the agent ended.

use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::run_dir::RunDir;
/// The blank exit-code file made at spawn: wide enough for any code, written over in place.
pub(crate) const EXIT_CODE_ROOM: &str = "                \n";

/// Whole seconds, rounded up — what the wrapper counts in: a limit or a grace is never cut short.
pub(crate) fn whole_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// `sh -c WRAPPER nightshift-run <exit file> <timeout secs, 0 = none> <deadline, epoch secs> <grace secs> <scrubber or ""> <program> <args…>`,
/// or `… "" <command>` for a shell command (see [`spawn`]).
///
/// The exit code is written in one small write, without a temporary file and `mv` (an exec per run):
/// nobody reads it before the wrapper has exited — the engine after `wait`, recovery only once the
/// wrapper's process is gone — and a blank file (killed mid-write) reads as "no exit code".
/// The file is created at spawn with room for the code ([`EXIT_CODE_ROOM`]) and written in place
/// (`1<>`: no truncation), so recording how the run ended needs no new disk space — the run that
/// filled the disk still has its exit code.
/// The wrapper survives the SIGTERM sent to its own group (it must record the exit code); the
/// agent is started with default signal handling (a caught signal resets on exec) and stdin from
/// `/dev/null`. The watcher is a subshell in the same group (a fork, no exec): it reads the pipe
/// (moved to fd 3: `sh` gives background jobs `/dev/null` as stdin) until the engine's end closes, then marks the run `unwatched` and, with a limit, wakes once a second —
/// reading the wall clock (`date`) when it starts, every 30 s and once the seconds it slept reach
/// what was left, so a suspend cannot stretch the limit. The wrapper ends (and reaps) the watcher
/// when the agent exits, unless the watcher is ending the run (it then still owes the group its
/// SIGKILL).
pub(crate) const WRAPPER: &str = r#"f="$1"; t="$2"; d="$3"; g="$4"; x="$5"; shift 5
r="${f%/*}"
trap : TERM INT HUP
exec 3<&0 </dev/null
if [ -z "$1" ]; then ( eval "shift 2; unset f t d g x r; $2" ) 3<&- & c=$!; else "$@" 3<&- & c=$!; fi
( trap : TERM INT HUP
  while read -r _ <&3; do :; done
  exec 3<&-
  : > "$r/unwatched"
  [ "$t" -gt 0 ] || exit 0
  n=0; left=$((d - $(date +%s)))
  while kill -0 "$c" 2>/dev/null; do
    if [ "$n" -ge "$left" ] || { [ "$n" -gt 0 ] && [ $((n % 30)) -eq 0 ]; }; then
      if [ "$(date +%s)" -ge "$d" ] && kill -0 "$c" 2>/dev/null; then
        date +%s > "$r/timed_out"
        kill -TERM 0
        n=0
        while kill -0 "$c" 2>/dev/null && [ "$n" -lt "$g" ]; do sleep 1; n=$((n + 1)); done
        kill -KILL 0
      fi
    fi
    sleep 1; n=$((n + 1))
  done ) & w=$!
while :; do wait "$c"; s=$?; kill -0 "$c" 2>/dev/null || break; done
[ -e "$r/timed_out" ] || { kill -KILL "$w" 2>/dev/null; wait "$w" 2>/dev/null; }
printf '%s\n' "$s" 1<> "$f"
if [ -n "$x" ] && [ -e "$r/unwatched" ]; then "$x" __scrub-run-logs "$r" 3<&- >/dev/null 2>&1; fi
exit "$s""#;

/// The shell the wrapper runs in.
const WRAPPER_SHELL: &str = "/bin/sh";

/// Do both paths name the same file (after links: `/usr/bin/sh` and `/bin/sh` on a merged /usr)?
/// Two `stat`s on every spawn, not a walk of each path's links.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Everything needed to start one run's process.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The complete environment of the child (nothing else is inherited).
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub run_dir: PathBuf,
    /// The wall-clock limit the wrapper enforces (`None`: none), and the grace between SIGTERM
    /// and SIGKILL.
    pub timeout: Option<Duration>,
    pub kill_grace: Duration,
    /// The binary the wrapper asks to scrub the logs when no engine follows the run any more
    /// (it serves [`super::scrub::SCRUB_ARG`]); `None`: whoever settles the run scrubs them.
    pub scrubber: Option<PathBuf>,
}

pub struct RunProcess {
    pub child: Box<dyn ChildWrapper>,
    pub pid: u32,
    /// The process's start time as the OS reports it: with the pid it identifies the process
    /// across pid reuse.
    pub start_time: Option<String>,
    /// When the wall-clock limit runs out (`None`: no limit). The engine keeps it while it follows
    /// the run; the wrapper once it does not.
    pub deadline: Option<std::time::SystemTime>,
    /// The engine's end of the wrapper's stdin: dropping it (or this process ending) tells the
    /// wrapper that nobody follows the run any more.
    _watched: std::io::PipeWriter,
}

pub fn spawn(spec: &SpawnSpec) -> std::io::Result<RunProcess> {
    std::fs::create_dir_all(&spec.run_dir)?;
    let dir = RunDir::at(&spec.run_dir);
    let stdout = std::fs::File::create(dir.stdout())?;
    let stderr = std::fs::File::create(dir.stderr())?;
    let exit_file = dir.exit_code();
    std::fs::write(&exit_file, EXIT_CODE_ROOM)?;

    let mut cmd = tokio::process::Command::new(WRAPPER_SHELL);
    // 0 means no limit.
    let timeout = spec.timeout.map(whole_secs).unwrap_or(0);
    // The deadline is wall-clock time (the system's, whatever clock the engine runs on).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let deadline = (timeout > 0).then(|| std::time::UNIX_EPOCH + Duration::from_secs(now.saturating_add(timeout)));
    for stale in [dir.timed_out(), dir.unwatched()] {
        let _ = std::fs::remove_file(stale);
    }
    cmd.arg("-c")
        .arg(WRAPPER)
        .arg("nightshift-run")
        .arg(&exit_file)
        .arg(timeout.to_string())
        .arg(now.saturating_add(timeout).to_string())
        .arg(whole_secs(spec.kill_grace).max(1).to_string())
        .arg(spec.scrubber.as_deref().unwrap_or(Path::new("")));
    // `sh -c COMMAND` (a command routine) runs in a fork of the wrapper's own shell — the same
    // `sh`, one exec per run fewer; its positional parameters and the wrapper's variables are
    // cleared first, as in a fresh `sh -c`. (`$$` is then the wrapper's pid, which lives exactly
    // as long as the run.)
    match spec.args.as_slice() {
        [flag, command] if flag == "-c" && same_file(&spec.program, Path::new(WRAPPER_SHELL)) => cmd.arg("").arg(command),
        _ => cmd.arg(&spec.program).args(&spec.args),
    };
    cmd.env_clear().envs(&spec.env);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    // Both ends are close-on-exec here; the child gets the read end as its stdin, and no other
    // child of this process inherits the write end.
    let (watch, watched) = std::io::pipe()?;
    cmd.stdin(Stdio::from(watch)).stdout(Stdio::from(stdout)).stderr(Stdio::from(stderr));
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader());
    let child = wrapped.spawn()?;
    let pid = child.id().ok_or_else(|| std::io::Error::other("the process exited before its pid could be read"))?;
    Ok(RunProcess { child, pid, start_time: process_start_time(pid), deadline, _watched: watched })
}

/// The exit code the wrapper recorded, if the run's process has finished.
pub fn recorded_exit_code(run_dir: &Path) -> Option<i32> {
    std::fs::read_to_string(RunDir::at(run_dir).exit_code()).ok()?.trim().parse().ok()
}

/// Record the exit code the engine saw when the wrapper could not (killed before it wrote, or
/// its write failed): written over the blank file in place, so it needs no new disk space, and
/// never over a code the wrapper wrote.
pub fn record_exit_code(run_dir: &Path, code: i32) -> std::io::Result<()> {
    use std::io::Write;
    if recorded_exit_code(run_dir).is_some() {
        return Ok(());
    }
    let mut f = std::fs::OpenOptions::new().write(true).open(RunDir::at(run_dir).exit_code())?;
    f.write_all(format!("{code}\n").as_bytes())
}

/// Did the wrapper time the run out?
pub fn timed_out_by_wrapper(run_dir: &Path) -> bool {
    RunDir::at(run_dir).timed_out().exists()
}

/// When the run's process ended, as its files tell: the exit-code file's time (written the moment
/// the agent exited), else the last write to its logs. For a run settled long after it ended.
pub fn ended_at(run_dir: &Path) -> Option<chrono::DateTime<chrono::Utc>> {
    let dir = RunDir::at(run_dir);
    let mtime = |file: PathBuf| std::fs::metadata(file).and_then(|m| m.modified()).ok();
    // The blank file made at spawn says nothing about the end.
    let exited = recorded_exit_code(run_dir).and_then(|_| mtime(dir.exit_code()));
    let at = exited.or_else(|| [dir.stdout(), dir.stderr(), dir.timed_out()].into_iter().filter_map(mtime).max())?;
    Some(at.into())
}

/// SIGTERM the whole group, wait up to `grace` for every member to be gone, then SIGKILL the group
/// (children that ignore SIGTERM included). `reap` is called while waiting: the engine's own
/// wrapper, once exited, is a zombie member of the group until it is reaped, and must not make
/// the grace last to its end.
///
/// SIGTERM is sent again 0.5 s and 2 s in: a process caught between `fork` and `exec` when the
/// first one came runs its parent's handler (the wrapper ignores TERM) and then execs with the
/// default action restored — it would otherwise live out the whole grace (an hour, at the limit).
pub async fn terminate_group_reaping(pgid: u32, grace: Duration, mut reap: impl FnMut()) {
    signal_group(pgid, libc::SIGTERM);
    let start = tokio::time::Instant::now();
    let deadline = start + grace;
    let mut resends = [Duration::from_millis(500), Duration::from_secs(2)].into_iter().peekable();
    while tokio::time::Instant::now() < deadline {
        reap();
        if !group_alive(pgid) {
            return;
        }
        if resends.next_if(|at| start.elapsed() >= *at).is_some() {
            signal_group(pgid, libc::SIGTERM);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    signal_group(pgid, libc::SIGKILL);
}

/// [`terminate_group_reaping`] for a group this process is not the parent of (nothing to reap).
pub async fn terminate_group(pgid: u32, grace: Duration) {
    terminate_group_reaping(pgid, grace, || {}).await
}

pub fn signal_group(pgid: u32, sig: i32) {
    // SAFETY: killpg has no memory-safety preconditions; ESRCH (already gone) is fine.
    unsafe {
        libc::killpg(pgid as libc::pid_t, sig);
    }
}

/// Does any process of the group still exist?
pub fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::killpg(pgid as libc::pid_t, 0) == 0 }
}

/// Is `pid` alive *and* the same process we started (same start time)? Zombies count as gone.
pub fn same_process_alive(pid: u32, start_time: Option<&str>) -> bool {
    match (process_start_time(pid), start_time) {
        (Some(now), Some(then)) => now == then && !is_zombie(pid),
        (Some(_), None) => !is_zombie(pid),
        (None, _) => false,
    }
}

#[cfg(target_os = "linux")]
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses; fields resume after the last ')'.
    let after = &stat[stat.rfind(')')? + 2..];
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// The process's start time: clock ticks since boot on Linux (field 22 of /proc/PID/stat).
#[cfg(target_os = "linux")]
pub fn process_start_time(pid: u32) -> Option<String> {
    stat_fields(pid)?.get(19).cloned()
}

/// Has `pid` exited without being waited for (a zombie)?
#[cfg(target_os = "linux")]
pub fn is_zombie(pid: u32) -> bool {
    stat_fields(pid).and_then(|f| f.first().cloned()).is_some_and(|s| s == "Z" || s == "X")
}

/// The process's parent (field 4 of /proc/PID/stat).
#[cfg(target_os = "linux")]
pub fn parent_pid(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// The process's short name (/proc/PID/comm, at most 15 bytes).
#[cfg(target_os = "linux")]
pub fn process_name(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|n| n.trim_end().to_string())
}

/// Every descendant of `root` (its children, their children…), read from /proc.
#[cfg(target_os = "linux")]
pub fn descendants(root: u32) -> Vec<u32> {
    let parent_of: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent_pid(pid)?)))
        .collect();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        out.extend(parent_of.iter().filter(|(_, pp)| *pp == cur).map(|(p, _)| *p));
        i += 1;
    }
    out.remove(0);
    out
}

/// The process's start time as `ps` prints it (macOS and other Unixes).
#[cfg(not(target_os = "linux"))]
pub fn process_start_time(pid: u32) -> Option<String> {
    let out = std::process::Command::new("ps").args(["-o", "lstart=", "-p", &pid.to_string()]).output().ok()?;
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

#[cfg(not(target_os = "linux"))]
pub fn is_zombie(pid: u32) -> bool {
    std::process::Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim_start().starts_with('Z'))
        .unwrap_or(false)
}

/// Identity of this process (the engine), stored as the owner of the runs it supervises.
pub fn self_identity() -> (u32, String) {
    let pid = std::process::id();
    (pid, process_start_time(pid).unwrap_or_default())
}


#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_asks_for_the_scrub_the_binaries_serve() {
        assert!(WRAPPER.contains(&format!("\"$x\" {} \"$r\"", super::super::scrub::SCRUB_ARG)));
        assert!(WRAPPER.contains(crate::run_dir::UNWATCHED_FILE) && WRAPPER.contains(crate::run_dir::TIMED_OUT_FILE));
    }

    #[test]
    fn descendants_are_found_below_a_process_only() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let found = descendants(std::process::id());
        assert!(found.contains(&child.id()), "{found:?}");
        assert!(!found.contains(&std::process::id()));
        assert!(!found.contains(&1));
        assert_eq!(parent_pid(child.id()), Some(std::process::id()));
        assert_eq!(process_name(child.id()).as_deref(), Some("sleep"));
        assert!(!is_zombie(child.id()));
        child.kill().unwrap();
        // Killed and not yet waited for: a zombie until reaped.
        let start = std::time::Instant::now();
        while !is_zombie(child.id()) {
            assert!(start.elapsed() < std::time::Duration::from_secs(5), "never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.wait().unwrap();
    }
}
