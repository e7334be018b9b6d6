//! The machine's sandbox on an SSH host: built there by the same helper as here (the Nightshift
//! binary's `__sandbox-run`, [`super::sandbox::helper`]), which is shipped to the host once per build
//! (`~/.nightshift/bin/nightshift-helper-…`, over the SSH channel like everything else) and asked
//! there whether bubblewrap works (`__sandbox-probe`).
//!
//! Why ship it rather than ask for one installed there: the helper and the plan the engine writes
//! are one build's pair — a helper of another version could read the plan otherwise. Only the
//! headless `nightshiftctl` is shipped (the desktop app's binary needs GTK and WebKit, which a
//! server has not), so its C library must be one the host has (a host older than the build
//! machine says so in words: the helper cannot start there).

use crate::runner::remote::{no_ssh, quote, Failure, Target};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// What a host puts a run in its sandbox with: the helper there and its bubblewrap.
#[derive(Debug, Clone, PartialEq)]
pub struct Ready {
    pub helper: String,
    pub bwrap: String,
}

/// Why a host will not build a sandbox.
#[derive(Debug, Clone, PartialEq)]
pub enum NotReady {
    /// Reaching it failed (as for any SSH command).
    Failure(Failure),
    /// It answered, and cannot (another system, no bubblewrap, user namespaces off): the fix in words.
    Cannot(String),
}

/// Where shipped helpers live on a host, under its `$HOME`.
const REMOTE_BIN: &str = ".nightshift/bin";
/// The shipped helpers' names start so (the others are removed when a new one arrives).
const PREFIX: &str = "nightshift-helper-";

/// The binary to ship for the engine running as `exe`: `nightshiftctl` beside it (the desktop
/// app's binary needs a desktop's libraries), else `exe` itself.
pub fn helper_to_ship(exe: &Path) -> PathBuf {
    let ctl = exe.with_file_name("nightshiftctl");
    match exe.file_name().is_some_and(|n| n == "nightshiftctl") || !ctl.is_file() {
        true => exe.to_path_buf(),
        false => ctl,
    }
}

/// The name a build of the helper has on a host: its version and what identifies the file (its
/// size and modification time), so a new build is shipped and the same one never twice.
fn shipped_name(local: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(local).map_err(|e| format!("cannot read the sandbox helper {}: {e}", local.display()))?;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs());
    Ok(format!("{PREFIX}{}-{}-{mtime}", env!("CARGO_PKG_VERSION"), meta.len()))
}

/// `uname -sm` of a machine that can run this build's helper.
fn this_system() -> String {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        other => other,
    };
    format!("{os} {}", std::env::consts::ARCH)
}

/// Make `target` ready to sandbox runs: the helper `local` there (shipped if it is not), and
/// bubblewrap working there.
pub async fn prepare(target: &Target, local: &Path) -> Result<Ready, NotReady> {
    let name = shipped_name(local).map_err(NotReady::Cannot)?;
    let looked = target
        .output(&format!("sh -c {}", quote(&format!("uname -sm; echo \"$HOME\"; [ -x \"$HOME/{REMOTE_BIN}/{name}\" ] && echo present || echo absent"))))
        .await
        .map_err(NotReady::Failure)?;
    // The last three lines: a login shell's startup files may print before.
    let lines: Vec<&str> = looked.lines().collect();
    let [system, home, present] = &lines[lines.len().saturating_sub(3)..] else {
        return Err(NotReady::Cannot(format!("{} did not say what system it is (got {:?})", target.host, looked.trim())));
    };
    if system.trim() != this_system() {
        return Err(NotReady::Cannot(format!(
            "{} is {}, and this Nightshift's sandbox helper is built for {}: no sandbox can be built there; set `sandbox: off` on the routine, or run it on a {} host",
            target.host,
            system.trim(),
            this_system(),
            this_system()
        )));
    }
    let helper = format!("{}/{REMOTE_BIN}/{name}", home.trim());
    if present.trim() != "present" {
        ship(target, local, &name).await?;
    }
    let said = target.output(&format!("sh -c {}", quote(&format!("{} {} 2>&1 || true", quote(&helper), super::sandbox::helper::PROBE_ARG)))).await.map_err(NotReady::Failure)?;
    let last = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    match (last.strip_prefix("ok "), last.strip_prefix("no ")) {
        (Some(bwrap), _) => Ok(Ready { helper, bwrap: bwrap.trim().to_string() }),
        (_, Some(why)) => Err(NotReady::Cannot(format!("on {}: {why}", target.host))),
        _ => {
            // The desktop app ships its own binary only when no `nightshiftctl` is beside it.
            let why = match local.file_name().is_some_and(|n| n == "nightshiftctl") {
                true => String::new(),
                false => "; it was the desktop app's own binary, which needs a desktop's libraries: put `nightshiftctl` beside it (the packages do; from a checkout: `cargo build -p nightshiftctl`)".into(),
            };
            Err(NotReady::Cannot(format!("the sandbox helper could not start on {} ({}){why}; set `sandbox: off` on the routine, or run it where it can", target.host, said.trim())))
        }
    }
}

/// Copy the helper to the host over the channel, under a name of its own until it is whole;
/// earlier builds' helpers there are removed (a run still using one keeps its open file).
async fn ship(target: &Target, local: &Path, name: &str) -> Result<(), NotReady> {
    tracing::info!(host = %target.host, helper = %local.display(), "shipping the sandbox helper to the host");
    let script = format!(
        "set -e; b=\"$HOME/{REMOTE_BIN}\"; mkdir -p \"$b\"; t=\"$b/.upload.$$\"; cat > \"$t\"; chmod 755 \"$t\"; mv -f \"$t\" \"$b/{name}\"; \
         for f in \"$b\"/{PREFIX}*; do [ \"$f\" = \"$b/{name}\" ] || rm -f \"$f\"; done"
    );
    let mut file = tokio::fs::File::open(local).await.map_err(|e| NotReady::Cannot(format!("cannot read the sandbox helper {}: {e}", local.display())))?;
    let mut child = target.ssh(&format!("sh -c {}", quote(&script))).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| NotReady::Failure(no_ssh(e)))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A copy cut short shows in ssh's exit status below: the half-written file is never used.
        let _ = tokio::io::copy(&mut file, &mut stdin).await;
    }
    let out = child.wait_with_output().await.map_err(|e| NotReady::Failure(no_ssh(e)))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(NotReady::Failure(Failure::of(&target.host, &out.stderr, out.status.code()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_desktop_app_ships_nightshiftctl_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let (app, ctl) = (dir.path().join("nightshift"), dir.path().join("nightshiftctl"));
        std::fs::write(&app, b"app").unwrap();
        assert_eq!(helper_to_ship(&app), app, "no nightshiftctl beside it: itself");
        std::fs::write(&ctl, b"ctl").unwrap();
        assert_eq!(helper_to_ship(&app), ctl);
        assert_eq!(helper_to_ship(&ctl), ctl);
    }

    #[test]
    fn a_build_has_one_name_and_a_new_build_another() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("nightshiftctl");
        std::fs::write(&exe, b"one build").unwrap();
        let first = shipped_name(&exe).unwrap();
        assert!(first.starts_with(&format!("{PREFIX}{}-9-", env!("CARGO_PKG_VERSION"))), "{first}");
        assert_eq!(shipped_name(&exe).unwrap(), first);
        std::fs::write(&exe, b"another build").unwrap();
        assert_ne!(shipped_name(&exe).unwrap(), first);
        assert_eq!(this_system(), "Linux x86_64".replace("x86_64", std::env::consts::ARCH));
    }
}
