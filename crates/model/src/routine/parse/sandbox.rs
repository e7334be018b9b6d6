//! `sandbox: on|off` and `sandbox_hide:` — whether the routine's runs are put in the machine's
//! sandbox and what more it hides (`allow.hosts` and `allow.dirs` are read with `allow:`).

use super::cx::Cx;
use super::Fields;
use crate::sandbox::{check_folder, Sandbox, Switch};

pub(super) fn sandbox(cx: &mut Cx<'_>, f: &Fields<'_>) -> Sandbox {
    let mut sandbox = Sandbox::default();
    if let Some(node) = f.get("sandbox") {
        match cx.string(node, "sandbox").as_deref().map(|s| s.trim().to_ascii_lowercase()) {
            // agents-cli writes its own switch as a boolean: asking for a sandbox is honoured;
            // `false` (what it writes by default) does not opt out of Nightshift's.
            Some(word) if word == "on" || word == "true" => sandbox.asked = Some(Switch::On),
            Some(word) if word == "off" => sandbox.asked = Some(Switch::Off),
            Some(word) if word == "false" => {
                cx.warn(node.pos(), "agents-cli's `sandbox: false` is not taken as `sandbox: off`: Nightshift's default applies (its sandbox for agent routines, none for commands); write `sandbox: off` to opt out");
                return sandbox_hide(cx, f, sandbox);
            }
            Some(other) => cx.err(node.pos(), format!("unknown sandbox \"{other}\" (expected on — its runs see the machine read-only, its secrets hidden, the network only through Nightshift's proxy — or off)")),
            None => {}
        }
        sandbox.asked_by = Some("sandbox:");
    }
    sandbox_hide(cx, f, sandbox)
}

/// `sandbox_hide:`, each path checked where it is written.
fn sandbox_hide(cx: &mut Cx<'_>, f: &Fields<'_>, mut sandbox: Sandbox) -> Sandbox {
    if let Some(node) = f.get("sandbox_hide") {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        for (text, pos) in cx.string_items(node, "sandbox_hide") {
            match check_folder("sandbox_hide", &text, home.as_deref(), false) {
                Ok(path) => sandbox.hide.push(path),
                Err(why) => cx.err(pos, why),
            }
        }
    }
    sandbox
}
