//! What the faces show, computed once here so the window, the tray and `nightshiftctl` agree:
//! routines in words, runs explained, logs as readable transcripts, reports as safe HTML.

pub mod explain;
pub mod log;
pub mod markdown;
pub mod routines;
#[cfg(test)]
pub(crate) mod typescript;
pub mod usage;
pub mod vocabulary;
pub mod why;

/// A duration the short way, everywhere a person reads one (notifications, the CLI):
/// "850ms", "42s", "4m 12s", "2h 05m".
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// A file the engine generates for the window (`ui/lib/…`) must read as `want`: with
/// `NIGHTSHIFT_BLESS` set it is written first; otherwise a stale file fails, saying how to bless it
/// (`cargo test -p nightshift-core <test_filter>`).
#[cfg(test)]
pub(crate) fn assert_generated_file_is_current(from_repo_root: &str, want: &str, test_filter: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(from_repo_root);
    if std::env::var_os("NIGHTSHIFT_BLESS").is_some() {
        std::fs::write(&path, want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "{from_repo_root} is stale: run `NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core {test_filter}`\n--- want:\n{want}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_the_short_way() {
        let cases = [(850, "850ms"), (42_400, "42s"), (252_000, "4m 12s"), (7_500_000, "2h 05m")];
        for (ms, text) in cases {
            assert_eq!(super::duration(ms), text);
        }
    }
}
