//! `nightshift-store`: SQLite storage (bundled, WAL, versioned migrations): the run history.
//!
//! Its own crate, above the model and below the engine: only the engine depends on it, so neither
//! face (the app, the CLI) can reach the database — they read through the engine. Cargo keeps that
//! floor: the faces' manifests do not list this crate.
//!
//! The database is the coordination point between processes (tray app, daemon, CLI): every
//! process opens it; SQLite's locking plus conditional updates make each transition happen once.

mod accounts;
mod asks;
mod evidence;
mod home_views;
mod hosts;
mod mcp_created;
mod migrations;
pub mod outbox;
mod pull_requests;
mod queue;
mod received;
mod routine_files;
mod runs;
mod retention;
mod scheduling;
mod secrets;
mod ownership;
mod usage;
mod workspaces;
pub use usage::Spender;
pub use workspaces::KeptWorktree;

pub use crate::run::Delivery;
pub use outbox::{DeliveryRow, OutboxEntry};
pub use queue::{Claims, QueuedRow};
pub use received::{Claim, Received, Verdict};
pub use runs::{NewRun, Page, RunQuery, FinalRow};
pub use accounts::HealthRecord;
pub use asks::Ask;
pub use pull_requests::{ReviewRound, RoutinePr};
pub use home_views::HomeView;
pub use hosts::HostRecord;
pub use scheduling::RoutineRow;
pub use routine_files::IndexedFile;
pub use usage::{DayUsage, UsageBy, UsageRow};
pub use evidence::{EventRow, Presence, PresenceEnd, RoutineEvent, SlotRow};

use crate::error::{Error, ErrorCode, Result};
// The model's modules by the names the store's files use (`crate::run`, `crate::words`, …).
use nightshift_model::{error, incoming, run, words};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Open (creating if needed) and migrate the database at `path`. (Only the engine does, outside
    /// test builds: this module is private to the crate there.)
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, &e))?;
        }
        // Another program's file is refused before anything writes to it.
        ownership::ensure_ours(path)?;
        let conn = Connection::open(path).map_err(|e| open_error(path, &e))?;
        let store = Store { conn: Mutex::new(conn), path: path.to_path_buf() };
        // Several processes may open a new home at the same moment (a daemon and a CLI command);
        // switching to WAL and migrating can then report "locked" without waiting, so retry.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match store.init() {
                Ok(()) => return Ok(store),
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(25)),
                Err(e) => return Err(open_error(path, &e)),
            }
        }
    }

    /// The database as it is, for reading history where nothing may be written (a read-only
    /// home): no migration, no switch to WAL, no mark, and no file made beside it. One from
    /// another version of Nightshift cannot be migrated here, and says so.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        ownership::ensure_ours(path)?;
        if !path.exists() {
            return Err(Error::new(ErrorCode::StoreUnavailable, format!("there is no history yet: {} does not exist", path.display())));
        }
        let (conn, _) = ownership::open_unchanged(path)?;
        let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(|e| open_error(path, &e))?;
        let current = migrations::MIGRATIONS.len();
        if version != current {
            let whose = if version < current { "an older" } else { "a newer" };
            return Err(Error::new(
                ErrorCode::StoreUnavailable,
                format!("the database {} was made by {whose} version of Nightshift (schema {version}, this one reads {current}), and it cannot be brought up to date where nothing may be written", path.display()),
            ));
        }
        Ok(Store { conn: Mutex::new(conn), path: path.to_path_buf() })
    }

    fn init(&self) -> rusqlite::Result<()> {
        let mut conn = self.conn();
        conn.busy_timeout(Duration::from_secs(10))?;
        // Every statement the engine repeats is prepared once (rusqlite keeps 16 by default; a
        // run's life alone uses more, and a statement prepared again costs more than it runs).
        conn.set_prepared_statement_cache_capacity(64);
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, sql) in migrations::MIGRATIONS.iter().enumerate().skip(version) {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // Another process may have migrated while we waited for the lock.
            let now: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if now > i {
                continue;
            }
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", i + 1)?;
            tx.commit()?;
        }
        // Marked as Nightshift's (a new database, or one an earlier version made).
        let id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
        if id != ownership::APPLICATION_ID {
            conn.pragma_update(None, "application_id", ownership::APPLICATION_ID)?;
        }
        probe_tables(&conn)
    }

    /// A second connection to the same database, for reading on another thread while this one
    /// works (no migrations: the schema is this store's).
    pub fn reader(&self) -> Result<Store> {
        let conn = Connection::open(&self.path).map_err(|e| open_error(&self.path, &e))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(|e| open_error(&self.path, &e))?;
        Ok(Store { conn: Mutex::new(conn), path: self.path.clone() })
    }

    /// Check the whole file for damage (`PRAGMA quick_check`: it reads every page, so long-running
    /// engines call it once before they schedule, not every command). A damaged database is never
    /// deleted or repaired here; the error says which file, what is wrong and what to do.
    pub fn check_integrity(&self) -> Result<()> {
        let found: rusqlite::Result<String> = self.conn().query_row("PRAGMA quick_check(1)", [], |r| r.get(0));
        let problem = match found {
            Ok(ok) if ok == "ok" => return Ok(()),
            Ok(problem) => problem,
            Err(e) => e.to_string(),
        };
        Err(damaged(&self.path, &problem, "; Nightshift will not schedule on it"))
    }

    pub fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (transactions roll back),
        // so a poisoned mutex is safe to keep using.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// Nightshift's own database, damaged — said in the same words wherever it is found (opening it,
/// the engines' check before they schedule, a file whose header was overwritten): which file,
/// what is wrong, what to do; it is never deleted or repaired here.
pub fn damaged(path: &Path, problem: &str, consequence: &str) -> Error {
    Error::new(
        ErrorCode::StoreUnavailable,
        format!(
            "the database {p} is damaged ({problem}){consequence}. Move it aside to start a fresh history (`mv {p} {p}.damaged`), or restore it from a backup — Nightshift never deletes it",
            p = path.display()
        ),
    )
}

/// Every table's first page read once at open (a few hundred microseconds): a database whose
/// pages past the schema are garbage is said to be damaged by every command that opens it, not
/// only by the one that happens to read the broken page.
fn probe_tables(conn: &Connection) -> rusqlite::Result<()> {
    let tables: Vec<String> = conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    for table in tables {
        conn.query_row(&format!("SELECT count(*) FROM (SELECT * FROM \"{}\" NOT INDEXED LIMIT 1)", table.replace('"', "\"\"")), [], |_| Ok(()))?;
    }
    Ok(())
}

/// Turn SQLite's terse errors into something a user can act on.
fn open_error(path: &Path, err: &rusqlite::Error) -> Error {
    let detail = err.to_string();
    let hint = match err.sqlite_error_code() {
        // The file passed the ownership check (Nightshift's mark or its tables): it is ours, damaged.
        Some(rusqlite::ErrorCode::NotADatabase) | Some(rusqlite::ErrorCode::DatabaseCorrupt) => return damaged(path, &detail, ""),
        Some(rusqlite::ErrorCode::ReadOnly) | Some(rusqlite::ErrorCode::PermissionDenied) | Some(rusqlite::ErrorCode::CannotOpen) => {
            " — check that the directory exists and is writable by this user"
        }
        Some(rusqlite::ErrorCode::DiskFull) => " — the disk is full; free some space",
        _ => "",
    };
    Error::new(ErrorCode::StoreUnavailable, format!("cannot open the database {}: {detail}{hint}", path.display()))
}

/// `EXPLAIN QUERY PLAN` of `sql` with `n` placeholder arguments, as one line ("SEARCH runs USING
/// INDEX … | …"): the store's tests check that every query the faces issue seeks.
#[cfg(test)]
pub fn query_plan(store: &Store, sql: &str, n: usize) -> String {
    let conn = store.conn();
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let args: Vec<i64> = (0..n as i64).collect();
    let rows: Vec<String> = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3)).unwrap().map(|r| r.unwrap()).collect();
    rows.join(" | ")
}
