//! `sandbox: on|off` and `sandbox_hide:` — whether the routine's runs are put in the machine's
//! sandbox and what more it hides (`allow.hosts` and `allow.dirs` are read with `allow:`).

use super::cx::Cx;
use super::Fields;
use crate::sandbox::{check_folder, Sandbox, Switch};

pub(super) fn sandbox(cx: &mut Cx<'_>, f: &Fields<'_>) -> Sandbox {
    let mut sandbox = Sandbox::default();
    if let Some(node) = f.get("sandbox") {
        match cx.string(node, "sandbox").as_deref().map(|s| s.trim().to_ascii_lowercase()) {
            Some(word) if word == "on" || word == "true" => sandbox.asked = Some(Switch::On),
            Some(word) if word == "off" || word == "false" => sandbox.asked = Some(Switch::Off),
            Some(other) => cx.err(node.pos(), format!("unknown sandbox \"{other}\" (expected on — its runs see the machine read-only, its secrets hidden, the network only through Nightshift's proxy — or off)")),
            None => {}
        }
        sandbox.asked_by = Some("sandbox:");
    }
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
