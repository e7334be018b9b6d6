//! Routine files written for the user: created from a form, edited as text, duplicated, renamed
//! (the run history follows), removed to `routines/.trash/` and restored. The files stay the source
//! of truth — nothing here keeps a private copy; the scheduler picks changes up as it does any
//! edit, and every face is told at once.
//!
//! Every write is atomic and never blind: a new file never replaces one (`write_new_atomic`), an
//! edit names the version of the text it started from and is refused if the file changed since.

use super::state::Engine;
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::fsutil::{write_atomic, write_new_atomic};
use crate::routine::author::{self, Context, Draft, DraftCheck};
use crate::routine::{check_name, Diagnostic};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A routine file's text as the editor opens it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct RoutineSource {
    pub name: String,
    /// As the user sees it (relative to the home when inside it).
    pub file: String,
    /// The absolute path (for "open in editor").
    pub path: String,
    pub text: String,
    /// What a save must name to overwrite this text ([`author::version`]).
    pub version: String,
    /// In the home's routines folder (else imported from agents-cli's: editable, not renamed or
    /// removed from here).
    pub in_home: bool,
}

/// A routine file written (created, duplicated, renamed, restored).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Written {
    pub name: String,
    pub file: String,
}

/// A routine file in the trash.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Removed {
    /// Its name in `routines/.trash/` (what restore takes).
    pub id: String,
    pub name: String,
    /// RFC 3339.
    pub removed_at: String,
}

const TRASH: &str = ".trash";
/// `20261130T163000Z-` before the file's own name in the trash.
const STAMP: &str = "%Y%m%dT%H%M%SZ";
const STAMP_LEN: usize = 16;

impl Engine {
    fn with_author_context<T>(&self, f: impl FnOnce(&Context<'_>) -> T) -> T {
        let existing = self.core.routines();
        let accounts = self.core.accounts();
        let settings = self.core.settings();
        f(&Context { home: &self.core.home, settings: &settings, accounts: &accounts, existing: &existing, now: self.core.clock.now() })
    }

    /// A form's draft checked: the YAML it makes, problems per field, the next fires.
    pub fn check_draft(&self, draft: &Draft) -> DraftCheck {
        self.with_author_context(|cx| author::check_draft(cx, draft))
    }

    /// Write a new routine file from a draft (`routines/<name>.yaml`); refused with every problem
    /// when the draft is not valid.
    pub fn create_routine(&self, draft: &Draft) -> Result<Written> {
        let check = self.check_draft(draft);
        if !check.problems.is_empty() {
            let lines: Vec<String> = check.problems.iter().map(|p| match &p.field {
                Some(f) => format!("{f}: {}", p.message),
                None => p.message.clone(),
            }).collect();
            return Err(Error::new(ErrorCode::RoutineInvalid, lines.join("\n")));
        }
        let name = draft.name.trim().to_string();
        let file = author::new_file(&self.core.home, &name);
        write_new_atomic(&file, check.yaml.as_bytes())?;
        self.routines_written();
        tracing::info!(routine = %name, file = %file.display(), "routine created");
        Ok(Written { name, file: self.core.home.display_path(&file) })
    }

    /// A routine an agent asked for through the MCP server (`draft` already says `created_by`
    /// and `parent_run`): counted against `[mcp] max_created_per_day` — the last 24 hours, every
    /// agent together, a file removed since still counted — then written like any other.
    pub fn create_routine_by_agent(&self, draft: &Draft) -> Result<Written> {
        let per_day = self.core.settings().mcp.max_created_per_day;
        let now = self.core.clock.now();
        let parent = Some(draft.parent_run.trim()).filter(|p| !p.is_empty());
        // Counted first (the count's check and its row are one statement), taken back if the
        // file is not written: two agents at once never both take the last place.
        let counted = match self.core.store.count_mcp_created(draft.name.trim(), parent, now, now - chrono::Duration::hours(24), per_day)? {
            Ok(id) => id,
            Err(made) => {
                return Err(Error::new(
                    ErrorCode::NotAllowed,
                    format!("agents created {made} routines in the last 24 hours, the most `[mcp] max_created_per_day = {per_day}` in nightshift.toml allows; raise it to allow more"),
                ))
            }
        };
        self.create_routine(draft).inspect_err(|_| {
            let _ = self.core.store.forget_mcp_created(counted);
        })
    }

    /// Problems in `text` as a routine file `routines/<name>.yaml` of this home would have them (a
    /// file of another machine checked against this home's settings, accounts and hosts).
    pub fn check_new_routine_text(&self, name: &str, text: &str) -> Result<Vec<Diagnostic>> {
        check_name(name).map_err(|m| Error::new(ErrorCode::Usage, m))?;
        let file = author::new_file(&self.core.home, name);
        Ok(self.with_author_context(|cx| author::check_text(cx, &file, text, Some(name))))
    }

    /// Write a new routine file `routines/<name>.yaml` from its text (a routine moved here from
    /// another home): refused when the name is taken or the text has errors, each located.
    pub fn create_routine_text(&self, name: &str, text: &str) -> Result<Written> {
        let file = self.free_file_for(name)?;
        let problems: Vec<Diagnostic> = self.with_author_context(|cx| author::check_text(cx, &file, text, Some(name))).into_iter().filter(|p| p.severity == crate::routine::Severity::Error).collect();
        if !problems.is_empty() {
            let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(Error::new(ErrorCode::RoutineInvalid, format!("not written; it has problems here:\n{}", lines.join("\n"))));
        }
        write_new_atomic(&file, text.as_bytes())?;
        self.routines_written();
        tracing::info!(routine = %name, file = %file.display(), "routine written from its text");
        Ok(Written { name: name.to_string(), file: self.core.home.display_path(&file) })
    }

    /// Disable routine `name` here because it now lives on home `to`: its file goes to the trash
    /// (as [`Engine::remove_routine`]) with a first line that says where it went and when.
    pub fn retire_moved_routine(&self, name: &str, to: &str) -> Result<Removed> {
        let removed = self.remove_routine(name)?;
        let path = self.core.home.routines_dir().join(TRASH).join(&removed.id);
        if let Ok(text) = std::fs::read_to_string(&path) {
            let note = format!("# Moved to home \"{to}\" at {} (nightshiftctl routines move); it runs there now. `routines restore {}` brings it back here.\n", removed.removed_at, removed.id);
            let _ = write_atomic(&path, format!("{note}{text}").as_bytes());
        }
        Ok(removed)
    }

    /// The file behind routine `name` (valid or not: a broken file is opened to be fixed).
    pub fn routine_source(&self, name: &str) -> Result<RoutineSource> {
        let path = self.routine_file(name)?;
        let text = crate::fsutil::read_text_file(&path, crate::fsutil::MAX_TEXT_FILE).map_err(|m| Error::new(ErrorCode::Io, format!("{}: {m}", path.display())))?;
        Ok(RoutineSource {
            name: name.to_string(),
            file: self.core.home.display_path(&path),
            path: path.display().to_string(),
            version: author::version(&text),
            in_home: path.parent() == Some(self.core.home.routines_dir().as_path()),
            text,
        })
    }

    fn routine_file(&self, name: &str) -> Result<PathBuf> {
        match self.core.routines().file_of(name) {
            Some(file) => Ok(file.clone()),
            // Not there: the lookup's error says what exists instead.
            None => self.routine(name).map(|r| r.file),
        }
    }

    /// Problems in `text` as routine `name`'s file, each with its line and column.
    pub fn check_routine_text(&self, name: &str, text: &str) -> Result<Vec<Diagnostic>> {
        let path = self.routine_file(name)?;
        Ok(self.with_author_context(|cx| author::check_text(cx, &path, text, Some(name))))
    }

    /// Save routine `name`'s file as `text`. `version` is what the editor opened; when the file has
    /// changed since (a sync, another editor), nothing is written and the error says so — unless
    /// `overwrite` (the user chose to replace the other change). Invalid text is refused: the file is
    /// live, and the scheduler would stop running the routine.
    pub fn save_routine_text(&self, name: &str, text: &str, version: &str, overwrite: bool) -> Result<RoutineSource> {
        let current = self.routine_source(name)?;
        if current.version != version && !overwrite {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "{} changed on disk since you opened it (another editor or a sync); nothing was written. Reload to see that change, or overwrite it with your text.",
                    current.file
                ),
            ));
        }
        let path = PathBuf::from(&current.path);
        let problems = self.with_author_context(|cx| author::check_text(cx, &path, text, Some(name)));
        // Warnings never block a save; errors do.
        let problems: Vec<_> = problems.into_iter().filter(|p| p.severity == crate::routine::Severity::Error).collect();
        if !problems.is_empty() {
            let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(Error::new(ErrorCode::RoutineInvalid, format!("not saved; fix these first:\n{}", lines.join("\n"))));
        }
        write_atomic(&path, text.as_bytes())?;
        self.routines_written();
        Ok(RoutineSource { text: text.to_string(), version: author::version(text), ..current })
    }

    /// A copy of routine `name`'s file named `new` (comments and all; only `name:` differs).
    pub fn duplicate_routine(&self, name: &str, new: &str) -> Result<Written> {
        let source = self.routine_source(name)?;
        let text = author::with_name(&source.text, new).map_err(|m| Error::new(ErrorCode::Usage, m))?;
        let file = self.free_file_for(new)?;
        write_new_atomic(&file, text.as_bytes())?;
        self.routines_written();
        Ok(Written { name: new.to_string(), file: self.core.home.display_path(&file) })
    }

    /// Rename routine `name` to `new`: its file becomes `routines/<new>.yaml` with `name: new`, and
    /// its run history and scheduler state follow it. Refused while one of its runs is going.
    pub fn rename_routine(&self, name: &str, new: &str) -> Result<Written> {
        let source = self.routine_source(name)?;
        self.in_home(&source, "renamed")?;
        let text = author::with_name(&source.text, new).map_err(|m| Error::new(ErrorCode::Usage, m))?;
        let file = self.free_file_for(new)?;
        // The new file first, then the history, then the old file: a failure at any step leaves
        // the routine whole under one of its names, never neither.
        write_new_atomic(&file, text.as_bytes())?;
        if let Err(e) = self.core.store.rename_routine(name, new) {
            let _ = std::fs::remove_file(&file);
            return Err(e);
        }
        if let Err(e) = std::fs::remove_file(&source.path) {
            self.routines_written();
            return Err(Error::io("remove the old routine file (the routine is now also named there; remove it by hand)", Path::new(&source.path), &e));
        }
        // A scheduler may have seen the old name once more in between.
        self.core.store.forget_routine_state(name)?;
        self.routines_written();
        tracing::info!(from = %name, to = %new, "routine renamed");
        Ok(Written { name: new.to_string(), file: self.core.home.display_path(&file) })
    }

    /// Move routine `name`'s file to `routines/.trash/` (its history stays). Refused while one of
    /// its runs is queued or running.
    pub fn remove_routine(&self, name: &str) -> Result<Removed> {
        let source = self.routine_source(name)?;
        self.in_home(&source, "removed")?;
        if self.core.store.open_run_of(name)?.is_some() {
            return Err(Error::new(ErrorCode::Conflict, format!("a run of \"{name}\" is queued or running; remove the routine once it has ended (or cancel the run)")));
        }
        let trash = self.core.home.routines_dir().join(TRASH);
        std::fs::create_dir_all(&trash).map_err(|e| Error::io("create", &trash, &e))?;
        let now = self.core.clock.now();
        let file_name = Path::new(&source.path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let id = format!("{}-{file_name}", now.format(STAMP));
        let target = trash.join(&id);
        // Linked, then unlinked: an entry of the same name (this file removed, re-created and
        // removed again within the second) is never replaced.
        std::fs::hard_link(&source.path, &target).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::new(ErrorCode::Conflict, format!("{file_name} was moved to the trash a moment ago too; try again in a second")),
            _ => Error::io("move to the trash", Path::new(&source.path), &e),
        })?;
        std::fs::remove_file(&source.path).map_err(|e| Error::io("remove (a copy is in the trash)", Path::new(&source.path), &e))?;
        self.routines_written();
        tracing::info!(routine = %name, trash = %target.display(), "routine removed");
        Ok(Removed { id, name: name.to_string(), removed_at: crate::words::fmt_time(&now) })
    }

    /// Routine files in the trash, newest first.
    pub fn removed_routines(&self) -> Result<Vec<Removed>> {
        let trash = self.core.home.routines_dir().join(TRASH);
        let Ok(entries) = std::fs::read_dir(&trash) else { return Ok(Vec::new()) };
        let mut out: Vec<Removed> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let id = e.file_name().to_string_lossy().into_owned();
                let (name, removed_at) = parse_trash_id(&id)?;
                // Read as the loader reads (a regular file of at most 1 MiB): a FIFO or a huge file
                // dropped into the trash never hangs the list.
                let text = crate::fsutil::read_text_file(&e.path(), crate::fsutil::MAX_TEXT_FILE).unwrap_or_default();
                let name = crate::routine::parse_routine(&text, &e.path(), &id).map(|r| r.name).unwrap_or(name);
                Some(Removed { id, name, removed_at })
            })
            .collect();
        out.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(out)
    }

    /// Put a removed routine file back under its own file name; refused if that name or its
    /// routine name is taken by now.
    pub fn restore_routine(&self, id: &str) -> Result<Written> {
        let trash = self.core.home.routines_dir().join(TRASH);
        let Some((stem, _)) = parse_trash_id(id).filter(|_| !id.contains(['/', '\\'])) else {
            return Err(Error::new(ErrorCode::Usage, format!("\"{id}\" is not a removed routine")));
        };
        let from = trash.join(id);
        if !from.is_file() {
            return Err(Error::new(ErrorCode::RoutineNotFound, format!("no removed routine \"{id}\" in {}", trash.display())));
        }
        let to = self.core.home.routines_dir().join(&id[STAMP_LEN + 1..]);
        let text = crate::fsutil::read_text_file(&from, crate::fsutil::MAX_TEXT_FILE).unwrap_or_default();
        let name = crate::routine::parse_routine(&text, &to, "").map(|r| r.name).unwrap_or(stem);
        if let Some(other) = self.core.routines().file_of(&name) {
            return Err(Error::new(ErrorCode::Conflict, format!("a routine named \"{name}\" exists again ({}); rename it first", self.core.home.display_path(other))));
        }
        std::fs::hard_link(&from, &to).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::new(ErrorCode::Conflict, format!("{} exists again; rename or remove it first", to.display())),
            _ => Error::io("restore", &to, &e),
        })?;
        let _ = std::fs::remove_file(&from);
        self.routines_written();
        Ok(Written { name, file: self.core.home.display_path(&to) })
    }

    /// `routines/<name>.yaml`, when neither that file nor a routine called `name` exists yet.
    fn free_file_for(&self, name: &str) -> Result<PathBuf> {
        check_name(name).map_err(|m| Error::new(ErrorCode::Usage, m))?;
        if let Some(other) = self.core.routines().file_of(name) {
            return Err(Error::new(ErrorCode::Conflict, format!("a routine named \"{name}\" already exists ({})", self.core.home.display_path(other))));
        }
        Ok(author::new_file(&self.core.home, name))
    }

    fn in_home(&self, source: &RoutineSource, what: &str) -> Result<()> {
        if source.in_home {
            return Ok(());
        }
        Err(Error::new(ErrorCode::Usage, format!("{} is imported from another folder; it can be edited but not {what} from Nightshift — change it there", source.file)))
    }

    /// A routine file changed by us: look again at once (not within a second), and tell the faces
    /// (the tray's Run now menu, the window) — also when another process schedules this home.
    /// Opt a project folder in (`projects` in nightshift.toml): its `.agents/routines/` are read
    /// from now on, live like the home's own. Returns the folder as recorded and how many routine
    /// files it has now.
    pub fn add_project(&self, dir: &Path) -> Result<(PathBuf, usize)> {
        let dir = crate::settings_edit::add_project(&self.core.home, dir)?;
        let files = crate::routine::routine_files(&[crate::routine::project_routines_dir(&dir)]).len();
        self.routines_written();
        Ok((dir, files))
    }

    /// Stop reading a project folder's routines (the files stay where they are).
    pub fn remove_project(&self, dir: &Path) -> Result<()> {
        crate::settings_edit::remove_project(&self.core.home, dir)?;
        self.routines_written();
        Ok(())
    }

    fn routines_written(&self) {
        self.core.catalog.forget();
        self.core.emit(EngineEvent::RoutinesChanged);
    }
}

/// `20261130T163000Z-nightly.yaml` → ("nightly", "2026-11-30T16:30:00Z").
fn parse_trash_id(id: &str) -> Option<(String, String)> {
    let (stamp, file) = (id.get(..STAMP_LEN)?, id.get(STAMP_LEN + 1..)?);
    let at = chrono::NaiveDateTime::parse_from_str(stamp, STAMP).ok()?.and_utc();
    let stem = Path::new(file).file_stem()?.to_string_lossy().into_owned();
    (id.as_bytes().get(STAMP_LEN) == Some(&b'-') && crate::routine::is_routine_path(Path::new(file))).then(|| (stem, crate::words::fmt_time(&at)))
}
