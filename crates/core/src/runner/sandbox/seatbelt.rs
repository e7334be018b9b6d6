//! The sandbox on macOS — **untested**: no Mac is at hand where this is built. The same [`Plan`]
//! as bubblewrap's, as a `sandbox-exec` profile (Seatbelt's SBPL) the helper starts the agent
//! under, with the proxy on a loopback port outside instead of a network namespace: the machine
//! read-only but the plan's writable folders and the user's temporary folders, the hidden list
//! neither readable nor writable, the keychain's services not reachable, and no connection out
//! but to the proxy's port and the plan's forwarded loopback ports.
//!
//! What differs from Linux: there is no private `/tmp` (macOS's `/private/tmp` and the per-user
//! `/private/var/folders` stay writable) and no network namespace (loopback is filtered by port).

use super::Plan;
use std::path::{Path, PathBuf};

/// The program that applies a profile.
pub const SANDBOX_EXEC: &str = "sandbox-exec";

/// The keychain's services: a run may not ask them for another login's secrets.
const KEYCHAIN_SERVICES: &[&str] = &["com.apple.SecurityServer", "com.apple.securityd.xpc", "com.apple.security.agent"];

impl Plan {
    /// The profile for this plan, the proxy listening on `127.0.0.1:<proxy_port>`. Later rules win
    /// over earlier ones in SBPL: what is hidden is denied after what is writable is allowed.
    pub fn seatbelt_profile(&self, proxy_port: u16) -> String {
        let mut p = String::from("(version 1)\n(allow default)\n");
        p.push_str("(deny file-write*)\n(allow file-write*\n");
        for w in self.writable.iter().map(|w| real(w)) {
            p.push_str(&format!("  (subpath {})\n", quoted(&w)));
        }
        p.push_str("  (subpath \"/private/tmp\")\n  (subpath \"/private/var/folders\")\n");
        p.push_str("  (literal \"/dev/null\")\n  (literal \"/dev/zero\")\n  (regex #\"^/dev/tty\")\n  (regex #\"^/dev/fd/\"))\n");
        // `mode: plan`'s folder (visible, not writable) is read-only by the rule above.
        if !self.hidden.is_empty() {
            p.push_str("(deny file-read* file-write*\n");
            for h in self.hidden.iter().map(|h| real(h)) {
                p.push_str(&format!("  (subpath {})\n", quoted(&h)));
            }
            p.push_str(")\n");
        }
        p.push_str("(deny mach-lookup\n");
        for service in KEYCHAIN_SERVICES {
            p.push_str(&format!("  (global-name \"{service}\")\n"));
        }
        p.push_str(")\n(deny network-outbound)\n(allow network-outbound\n  (remote unix-socket)\n");
        for port in std::iter::once(proxy_port).chain(self.forwards.iter().copied()) {
            p.push_str(&format!("  (remote ip \"localhost:{port}\")\n"));
        }
        p.push_str(")\n");
        p
    }
}

/// The path the kernel sees (macOS's `/tmp` is `/private/tmp`); as written when it does not exist.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A path as an SBPL string.
fn quoted(path: &Path) -> String {
    format!("\"{}\"", path.display().to_string().replace('\\', "\\\\").replace('"', "\\\""))
}

/// Can `sandbox-exec` apply a profile here? The one to use, or why not.
pub fn probe(path_var: Option<&str>) -> Result<PathBuf, String> {
    let exec = crate::fsutil::find_on_path(SANDBOX_EXEC, path_var).ok_or_else(|| "`sandbox-exec` was not found (it is part of macOS); set `sandbox: off` on the routine".to_string())?;
    let out = std::process::Command::new(&exec)
        .args(["-p", "(version 1)\n(allow default)\n", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{} could not be started: {e}", exec.display()))?;
    match out.status.success() {
        true => Ok(exec),
        false => Err(format!("sandbox-exec cannot apply a profile here ({}); set `sandbox: off` on the routine", String::from_utf8_lossy(&out.stderr).trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_says_the_plan() {
        let plan = Plan {
            writable: vec!["/work/app".into(), "/runs/r1".into()],
            hidden: vec!["/Users/me/.ssh".into(), "/Users/me/say \"hi\"".into()],
            forwards: vec![11434],
            cwd: Some("/work/app".into()),
            ..Plan::default()
        };
        let p = plan.seatbelt_profile(40123);
        let at = |needle: &str| p.find(needle).unwrap_or_else(|| panic!("{needle:?} not in\n{p}"));
        // Writes denied, then the plan's folders allowed; hidden denied after both.
        assert!(at("(deny file-write*)") < at("(subpath \"/work/app\")"));
        assert!(at("(subpath \"/runs/r1\")") < at("(deny file-read* file-write*"));
        assert!(at("(deny file-read* file-write*") < at("(subpath \"/Users/me/.ssh\")"));
        assert!(p.contains(r#"(subpath "/Users/me/say \"hi\"")"#), "quotes escaped:\n{p}");
        assert!(p.contains("(global-name \"com.apple.SecurityServer\")"));
        // No network out but the proxy and the forwarded port.
        assert!(at("(deny network-outbound)") < at("(remote ip \"localhost:40123\")"));
        assert!(p.contains("(remote ip \"localhost:11434\")"));
        assert_eq!(p.matches("(remote ip").count(), 2);
        assert_eq!(p.matches('(').count(), p.matches(')').count(), "balanced:\n{p}");
    }
}
