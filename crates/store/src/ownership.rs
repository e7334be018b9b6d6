//! Is the database at a path Nightshift's? Another program may keep a file at the same path —
//! another overnight agent runner also called nightshift keeps its SQLite database at
//! `~/.local/share/nightshift/nightshift.db`, Nightshift's default on Linux — and two programs
//! writing one file would ruin both. So before anything else, an existing file is looked at
//! without changing it — its header, and when that carries no mark its tables, read-only and
//! *immutable* (SQLite then writes nothing: no journal, no WAL, no shared memory) unless a
//! write-ahead log beside it says the database is in use. Nightshift's own is marked with its
//! `application_id` (set when the database is made, and on the first open by this version of one
//! an earlier version made — recognised by its `runs` table); anything else is refused, the file
//! left byte for byte as it was.

use crate::error::{Error, ErrorCode, Result};
use rusqlite::{Connection, OpenFlags};
use std::io::Read;
use std::path::Path;

/// `PRAGMA application_id` of a Nightshift database: "NSHT".
pub const APPLICATION_ID: i32 = 0x4e53_4854;

/// What the file at a path is.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// No file, or an empty one: a database is made there.
    Nothing,
    /// Nightshift's (marked, or an earlier version's).
    Ours,
    /// Not Nightshift's: what it seems to be, in words.
    Foreign(String),
    /// Nightshift's, but its header is not a database's any more (what is wrong, in words).
    Damaged(String),
}

/// How far into a file with a broken header Nightshift's schema is looked for (its first page
/// holds the schema's text).
const SCHEMA_LOOK: u64 = 256 * 1024;

/// Whether a file without a SQLite header still holds Nightshift's own schema — the statement
/// that made its `runs` table, with columns only Nightshift's has.
fn holds_our_schema(file: &mut std::fs::File) -> bool {
    use std::io::Seek;
    let mut text = Vec::new();
    if file.rewind().is_err() || file.take(SCHEMA_LOOK).read_to_end(&mut text).is_err() {
        return false;
    }
    let has = |needle: &[u8]| text.windows(needle.len()).any(|w| w == needle);
    has(b"CREATE TABLE runs") && has(b"scheduled_for") && has(b"run_dir")
}

/// Look at the file at `path` without changing it.
pub fn inspect(path: &Path) -> Result<Found> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(Error::io("read", path, &e)),
    };
    let mut head = Vec::with_capacity(100);
    file.by_ref().take(100).read_to_end(&mut head).map_err(|e| Error::io("read", path, &e))?;
    if head.is_empty() {
        return Ok(Found::Nothing);
    }
    if !head.starts_with(b"SQLite format 3\0") {
        if holds_our_schema(&mut file) {
            return Ok(Found::Damaged("its first bytes, the SQLite header, were overwritten".into()));
        }
        let text = head.iter().take(16).all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace());
        return Ok(Found::Foreign(if text { "a text file, not a SQLite database".into() } else { "not a SQLite database".into() }));
    }
    // The header says whose it is once a checkpoint has written the mark (offset 68).
    let id = match head.get(68..72) {
        Some(b) => i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        None => return Ok(Found::Foreign("not a SQLite database (too short)".into())),
    };
    if id == APPLICATION_ID {
        return Ok(Found::Ours);
    }
    if id != 0 {
        return Ok(Found::Foreign(format!("another program's SQLite database (application id {id:#010x})")));
    }
    // Unmarked: its tables say.
    let (conn, wal_in_use) = open_unchanged(path)?;
    let read = |e: rusqlite::Error| Error::new(ErrorCode::StoreUnavailable, format!("cannot read the database {}: {e}", path.display()));
    if wal_in_use {
        let id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0)).map_err(read)?;
        if id == APPLICATION_ID {
            return Ok(Found::Ours);
        }
    }
    let mut stmt = conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").map_err(read)?;
    let tables: Vec<String> = stmt.query_map([], |r| r.get(0)).map_err(read)?.collect::<rusqlite::Result<_>>().map_err(read)?;
    if tables.is_empty() {
        return Ok(Found::Nothing);
    }
    // An earlier Nightshift's: its first migration's `runs` table, with these columns.
    let columns: Vec<String> = conn.prepare("SELECT name FROM pragma_table_info('runs')").and_then(|mut s| s.query_map([], |r| r.get(0))?.collect()).map_err(read)?;
    if ["routine", "trigger", "scheduled_for", "run_dir", "attempts"].iter().all(|c| columns.iter().any(|have| have == c)) {
        return Ok(Found::Ours);
    }
    let shown: Vec<&str> = tables.iter().take(6).map(String::as_str).collect();
    let more = if tables.len() > 6 { format!(" and {} more", tables.len() - 6) } else { String::new() };
    Ok(Found::Foreign(format!("another program's SQLite database (its tables: {}{more})", shown.join(", "))))
}

/// A read-only connection that changes nothing on disk. A database in WAL mode with its log beside
/// it is in use (its newest rows, even a fresh database's mark, may still be in that log): it is
/// read the ordinary way, read-only, through the files that are already there. Otherwise nothing
/// is writing it through a log, and it is read immutable, so SQLite makes no file at all beside
/// it. Also says whether the log was used.
pub fn open_unchanged(path: &Path) -> Result<(Connection, bool)> {
    // The header's byte 18 is 2 for a database in WAL mode.
    let mut head = [0u8; 19];
    let wal_mode = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head[18] == 2;
    let wal_in_use = wal_mode && wal_of(path).exists();
    let (target, flags) = match wal_in_use {
        true => (path.to_string_lossy().into_owned(), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX),
        false => (immutable_uri(path), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX),
    };
    let read = |e: rusqlite::Error| Error::new(ErrorCode::StoreUnavailable, format!("cannot read the database {}: {e}", path.display()));
    let conn = Connection::open_with_flags(target, flags).map_err(read)?;
    conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(read)?;
    Ok((conn, wal_in_use))
}

/// Refuse a file that is not Nightshift's, in one sentence: which file, what it seems to be,
/// what to do.
pub fn ensure_ours(path: &Path) -> Result<()> {
    match inspect(path)? {
        Found::Nothing | Found::Ours => Ok(()),
        Found::Damaged(what) => Err(crate::damaged(path, &what, ", so Nightshift leaves it untouched")),
        Found::Foreign(what) => Err(Error::new(
            ErrorCode::StoreUnavailable,
            format!(
                "{} is not Nightshift's database — it is {what}, so Nightshift leaves it untouched; set NIGHTSHIFT_HOME to another folder for Nightshift, or move that file away if nothing needs it",
                path.display()
            ),
        )),
    }
}

/// `<path>-wal`, SQLite's write-ahead log of the database at `path`.
fn wal_of(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    name.into()
}

/// `file:<path>?immutable=1`, the path's `%`, `?` and `#` escaped.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for ch in path.to_string_lossy().chars() {
        match ch {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut all: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir).unwrap().flatten().map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())).collect();
        all.sort();
        all
    }

    #[test]
    fn another_programs_database_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("what?#%.db");
        {
            let c = Connection::open(&db).unwrap();
            c.execute_batch("PRAGMA journal_mode = DELETE; CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT); CREATE TABLE runs (id TEXT, task INTEGER); INSERT INTO tasks (title) VALUES ('x');").unwrap();
        }
        let before = sums(dir.path());
        assert_eq!(inspect(&db).unwrap(), Found::Foreign("another program's SQLite database (its tables: runs, tasks)".into()));
        let err = crate::Store::open(&db).unwrap_err().to_string();
        assert!(err.contains("is not Nightshift's database — it is another program's SQLite database (its tables: runs, tasks)") && err.contains("NIGHTSHIFT_HOME"), "{err}");
        assert_eq!(sums(dir.path()), before, "the file and its folder are as they were: no journal, no WAL");

        std::fs::write(&db, "#!/bin/sh\necho not a database\n").unwrap();
        assert_eq!(inspect(&db).unwrap(), Found::Foreign("a text file, not a SQLite database".into()));
        let c = Connection::open(dir.path().join("other.db")).unwrap();
        c.pragma_update(None, "application_id", 42).unwrap();
        c.execute_batch("CREATE TABLE t (x)").unwrap();
        drop(c);
        assert!(matches!(inspect(&dir.path().join("other.db")).unwrap(), Found::Foreign(w) if w.contains("application id 0x0000002a")));
    }

    #[test]
    fn nightshifts_own_are_marked_and_an_earlier_versions_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("nightshift.db");
        assert_eq!(inspect(&db).unwrap(), Found::Nothing);
        drop(crate::Store::open(&db).unwrap());
        assert_eq!(inspect(&db).unwrap(), Found::Ours);
        let id: i32 = Connection::open(&db).unwrap().pragma_query_value(None, "application_id", |r| r.get(0)).unwrap();
        assert_eq!(id, APPLICATION_ID);
        // A database of the first schema, before databases were marked.
        let old = dir.path().join("old.db");
        {
            let c = Connection::open(&old).unwrap();
            c.execute_batch(crate::migrations::MIGRATIONS[0]).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
        }
        assert_eq!(inspect(&old).unwrap(), Found::Ours);
        drop(crate::Store::open(&old).unwrap());
        let c = Connection::open(&old).unwrap();
        let (id, version): (i32, usize) = (c.pragma_query_value(None, "application_id", |r| r.get(0)).unwrap(), c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap());
        assert_eq!((id, version), (APPLICATION_ID, crate::migrations::MIGRATIONS.len()), "marked and migrated on upgrade");
    }

    #[test]
    fn read_only_opening_reads_history_and_makes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("nightshift.db");
        let err = crate::Store::open_read_only(&db).unwrap_err().to_string();
        assert!(err.contains("there is no history yet"), "{err}");
        drop(crate::Store::open(&db).unwrap());
        let before = sums(dir.path());
        let store = crate::Store::open_read_only(&db).unwrap();
        let version: usize = store.conn().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, crate::migrations::MIGRATIONS.len());
        assert!(store.conn().execute_batch("CREATE TABLE x (y)").is_err(), "nothing can be written through it");
        drop(store);
        assert_eq!(sums(dir.path()), before, "no journal, WAL or shared-memory file was made");
        // One from an older version cannot be migrated where nothing may be written.
        Connection::open(&db).unwrap().pragma_update(None, "user_version", 3).unwrap();
        let err = crate::Store::open_read_only(&db).unwrap_err().to_string();
        assert!(err.contains("was made by an older version of Nightshift (schema 3") && err.contains("cannot be brought up to date"), "{err}");
    }
}
