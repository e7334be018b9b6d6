//! A home with many finished runs, written straight into its database (setup, not measured) —
//! shared by the benchmarks that read history.

use chrono::{Duration as ChronoDuration, Utc};
use std::path::Path;

/// The routines the runs are spread over.
pub const ROUTINES: usize = 20;

/// The first run's time (two years back, on a whole minute).
pub fn t0_ms() -> i64 {
    (Utc::now() - ChronoDuration::days(730)).timestamp_millis() / 60_000 * 60_000
}

/// `rows` finished runs, one a minute, in one transaction (setup, not measured).
pub fn seed(home: &Path, rows: usize) {
    std::fs::create_dir_all(home.join("routines")).unwrap();
    let db = home.join("nightshift.db");
    drop(nightshift_core::store::Store::open(&db).unwrap());
    let mut conn = rusqlite::Connection::open(&db).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare("INSERT INTO runs (id, routine, trigger, agent, sort_ms, started_at, finished_at, status, run_dir) VALUES (?1, ?2, 'schedule', 'command', ?3, ?4, ?4, ?5, '/nonexistent')")
            .unwrap();
        for i in 0..rows {
            let ms = t0_ms() + i as i64 * 60_000;
            let at = chrono::DateTime::from_timestamp_millis(ms).unwrap();
            let status = if (i / ROUTINES) % 4 == 3 { "failed" } else { "completed" };
            stmt.execute(rusqlite::params![format!("{i:026}"), format!("routine-{}", i % ROUTINES), ms, nightshift_core::words::fmt_time(&at), status]).unwrap();
        }
    }
    tx.commit().unwrap();
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
}

