//! What the faces show, computed once here so the window, the tray and `nightshiftctl` agree:
//! routines in words, runs explained, logs as readable transcripts, reports as safe HTML.

/// A run's outcome in plain words (the model's: settling writes it into a failed run's report too).
pub use crate::explain;
pub mod lineage;
pub mod log;
pub mod markdown;
pub mod routines;
pub mod usage;
pub mod vocabulary;
pub mod why;

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
