//! What runs on this machine, as `/proc` shows it — for tests that check a process is gone, or
//! that a secret is in no command line (the "remote" side of the SSH tests is this machine too).

/// Every process whose command line (its arguments joined by spaces) holds `needle`: pid and
/// command line.
pub fn processes_holding(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else { continue };
        if let Ok(argv) = std::fs::read(entry.path().join("cmdline")) {
            let argv = String::from_utf8_lossy(&argv).replace('\0', " ");
            if argv.contains(needle) {
                found.push((pid, argv));
            }
        }
    }
    found
}
