//! What the desktop app logs that tests and benchmarks read back.

/// The window's first paints in an app log (`window first paint at_ms=… since_open_ms=…`, logged
/// by the app at `nightshift_app::window=debug`): (the paint's wall-clock time in ms since the
/// Unix epoch, ms since the app began making that window), oldest first.
pub fn window_first_paints(log: &str) -> Vec<(u64, u64)> {
    log.lines().filter(|l| l.contains("window first paint")).filter_map(|l| Some((number(l, "at_ms=")?, number(l, "since_open_ms=")?))).collect()
}

/// The whole number after `key` in a log line (`key=123`).
fn number(line: &str, key: &str) -> Option<u64> {
    line.split(key).nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_windows_first_paints() {
        let log = "2026-12-01T20:03:01Z DEBUG nightshift_app::window: window page loaded since_open_ms=380\n\
                   2026-12-01T20:03:01Z DEBUG nightshift_app::window: window first paint at_ms=1796156791082 since_open_ms=431\n\
                   2026-12-01T20:03:02Z DEBUG nightshift_app::window: window first paint unknown: the page reported no paint within 4 s\n\
                   2026-12-01T20:03:03Z DEBUG nightshift_app::window: window first paint at_ms=1796156793163 since_open_ms=426\n";
        assert_eq!(super::window_first_paints(log), vec![(1796156791082, 431), (1796156793163, 426)]);
    }
}
