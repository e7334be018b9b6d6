//! Human-readable output: times in the user's zone, durations, status words, tables.

use chrono::{DateTime, Local, Utc};
use nightshift_core::run::{RunRecord, RunStatus};

pub fn local(t: &DateTime<Utc>) -> String {
    t.with_timezone(&Local).format("%Y-%m-%d %H:%M:%S").to_string()
}

/// The engine's one duration format ("4m 12s").
pub fn duration_ms(ms: u64) -> String {
    nightshift_core::words::duration(ms)
}

/// A relative time like "in 3h 12m" or "5m ago".
pub fn relative(t: &DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (*t - now).num_seconds();
    let d = duration_ms(secs.unsigned_abs() * 1000);
    if secs >= 0 {
        format!("in {d}")
    } else {
        format!("{d} ago")
    }
}

pub fn symbol(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "✓",
        RunStatus::Running => "▶",
        RunStatus::Queued => "…",
        RunStatus::TimedOut => "⏱",
        RunStatus::Cancelled | RunStatus::Skipped | RunStatus::Missed => "–",
        RunStatus::Failed | RunStatus::Blocked => "✗",
    }
}

/// "failed (auth_failed)" or "completed".
pub fn status_text(run: &RunRecord) -> String {
    match run.reason {
        Some(r) => format!("{} ({})", run.status, r),
        None => run.status.to_string(),
    }
}

pub fn cost(c: Option<f64>) -> String {
    c.map(|c| format!("${c:.4}")).unwrap_or_else(|| "-".into())
}

/// Print rows as aligned columns (the last column is not padded).
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        line(row.clone());
    }
}

pub fn json<T: serde::Serialize>(value: &T) {
    println!("{}", serde_json::to_string_pretty(value).expect("serialisable"));
}

/// "in 1,200 · out 340 · cache read 20 · cache write – · claude-sonnet-5-5" ("–": the agent gave
/// no such figure).
pub fn usage(u: &nightshift_core::agents::Usage) -> String {
    let n = |v: Option<u64>| v.map(thousands).unwrap_or_else(|| "\u{2013}".into());
    let mut s = format!("in {} · out {} · cache read {} · cache write {}", n(u.input_tokens), n(u.output_tokens), n(u.cache_read_tokens), n(u.cache_write_tokens));
    if let Some(m) = &u.model {
        s.push_str(&format!(" · {m}"));
    }
    if let Some(p) = u.premium_requests {
        s.push_str(&format!(" · {p} premium request{}", if p == 1.0 { "" } else { "s" }));
    }
    s
}

pub fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let groups: Vec<&str> = digits.as_bytes().rchunks(3).rev().map(|g| std::str::from_utf8(g).unwrap_or("")).collect();
    groups.join(",")
}

/// "812 B", "3.4 KiB", "2.1 MiB", "1.3 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}
