//! What runs on this machine, as `/proc` shows it — for tests that check a process is gone, or
//! that a secret is in no command line (the "remote" side of the SSH tests is this machine too).

/// Process `pid`'s command line, its arguments joined by spaces ("" once it is gone). `/proc`
/// separates them with NUL bytes; reading that file raw is how a search for "a --flag" misses.
pub fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline")).map(|argv| String::from_utf8_lossy(&argv).replace('\0', " ")).unwrap_or_default()
}

/// Every process whose command line ([`command_line`]) holds `needle`: pid and command line.
pub fn processes_holding(needle: &str) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|n| n.parse().ok()))
        .map(|pid| (pid, command_line(pid)))
        .filter(|(_, argv)| argv.contains(needle))
        .collect()
}
