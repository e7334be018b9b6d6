//! What the faces show, computed once here so the window, the tray and `nightshiftctl` agree:
//! routines in words, runs explained, logs as readable transcripts, reports as safe HTML.

pub mod explain;
pub mod log;
pub mod markdown;
pub mod routines;
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
