//! The routine-name index: which routine each file names, as of the file's modified time and size.
//! Routine files stay the source of truth; this only lets a one-shot command find the file that
//! names a routine without parsing every file (a stale row is simply re-read).

use super::Store;
use crate::error::Result;
use rusqlite::params;

/// One routine file as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    pub path: String,
    pub mtime_ns: i64,
    pub size: i64,
    pub name: String,
}

impl Store {
    /// Every indexed file.
    pub fn routine_file_index(&self) -> Result<Vec<IndexedFile>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path, mtime_ns, size, name FROM routine_files")?;
        let rows = stmt
            .query_map([], |r| Ok(IndexedFile { path: r.get(0)?, mtime_ns: r.get(1)?, size: r.get(2)?, name: r.get(3)? }))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Record what these files name now, and forget files that are gone (`keep`: every file that
    /// exists), in one transaction.
    pub fn update_routine_file_index(&self, changed: &[IndexedFile], keep: &[&str]) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut put = tx.prepare_cached("INSERT OR REPLACE INTO routine_files (path, mtime_ns, size, name) VALUES (?1, ?2, ?3, ?4)")?;
            for f in changed {
                put.execute(params![f.path, f.mtime_ns, f.size, f.name])?;
            }
            let existing: Vec<String> = tx.prepare_cached("SELECT path FROM routine_files")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
            let keep: std::collections::HashSet<&str> = keep.iter().copied().collect();
            let mut drop = tx.prepare_cached("DELETE FROM routine_files WHERE path = ?1")?;
            for path in existing.iter().filter(|p| !keep.contains(p.as_str())) {
                drop.execute([path])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}
