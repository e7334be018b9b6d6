//! agents-cli's routine keys that are not Nightshift's own, and what Nightshift does with each —
//! so a user moving over keeps every routine file as it is and is told plainly what differs.
//!
//! A key is **taken** under another name (`endAt` is `end_at`), **accepted with a warning** that
//! says what is ignored and why (the routine still runs as its author meant), or **refused** where
//! running it would do something else than its author meant (an error that says what to use).
//! A key neither agents-cli nor Nightshift knows stays an error with the nearest key suggested.
//! `docs/agents-cli.md` lists the same table for people; a test keeps the two in step.

/// What Nightshift does with one of agents-cli's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// The same meaning under Nightshift's spelling.
    Alias(&'static str),
    /// Accepted; the routine runs without it — the warning says why.
    Ignored(&'static str),
    /// Refused: running the routine without it would not be what its author meant.
    Refused(&'static str),
}

/// agents-cli's keys beyond Nightshift's own (`hostStrategy`, `remoteCwd`, `config`, `version`,
/// `effort`, `trigger` … are read by the parser itself), with their treatment.
pub const KEYS: &[(&str, Treatment)] = &[
    ("endAt", Treatment::Alias("end_at")),
    ("runOnce", Treatment::Alias("run_once")),
    ("projects", Treatment::Ignored("Nightshift has no project catalog: the routine runs in its `cwd` (give one for each folder it should work in)")),
    ("project", Treatment::Ignored("Nightshift has no project catalog: the routine runs in its `cwd`")),
    ("source", Treatment::Ignored("written by agents-cli's project sync; Nightshift reads the file where it is")),
    ("repo", Treatment::Ignored("agents-cli's repository note is not used: the routine runs in its `cwd`")),
    ("strategy", Treatment::Ignored("agents-cli's run strategy is not used: Nightshift runs one agent or command per slot")),
    ("createdAt", Treatment::Ignored("agents-cli's bookkeeping; Nightshift keeps its own history")),
    ("updatedAt", Treatment::Ignored("agents-cli's bookkeeping; Nightshift keeps its own history")),
    ("id", Treatment::Ignored("agents-cli's id is not used: a routine is known by its `name`")),
    ("tags", Treatment::Ignored("agents-cli's tags are not used")),
    (
        "workflow",
        Treatment::Ignored("agents-cli's `workflow` (several steps in one routine) is not run: Nightshift runs the routine's own `prompt` or `command` once per slot — make a routine of each step, or a `command` that runs them in order"),
    ),
    ("loop", Treatment::Ignored("agents-cli's `loop` (running again until a condition holds) is not run: the routine runs once per slot of its `schedule` (`retries:` tries a failed run again) — a `command` that loops repeats it within a run")),
];

/// The treatment of `key`, if it is one of agents-cli's.
pub fn treatment(key: &str) -> Option<Treatment> {
    KEYS.iter().find(|(k, _)| *k == key).map(|(_, t)| *t)
}

/// Host names as agents-cli compares them in `devices:`: without case and without a domain
/// (`Studio.local` and `studio` are one machine).
pub fn same_device(a: &str, b: &str) -> bool {
    let short = |s: &str| s.trim().split('.').next().unwrap_or_default().to_ascii_lowercase();
    !a.trim().is_empty() && short(a) == short(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table people read (docs/agents-cli.md) names every key this module treats, with the
    /// same treatment word.
    #[test]
    fn the_docs_table_lists_every_key() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/agents-cli.md")).unwrap();
        for (key, t) in KEYS {
            let word = match t {
                Treatment::Alias(_) => "taken",
                Treatment::Ignored(_) => "warning",
                Treatment::Refused(_) => "refused",
            };
            let row = doc.lines().find(|l| l.starts_with(&format!("| `{key}` |"))).unwrap_or_else(|| panic!("docs/agents-cli.md has no row for `{key}`"));
            assert!(row.contains(word), "the row of `{key}` says {word}: {row}");
        }
    }

    #[test]
    fn devices_match_without_case_or_domain() {
        assert!(same_device("Studio.local", "studio"));
        assert!(same_device("studio", "STUDIO.lan"));
        assert!(!same_device("studio", "studio2"));
        assert!(!same_device("", ""));
    }
}
