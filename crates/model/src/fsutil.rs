//! Small file helpers shared by the store and the runner.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Write a file so a reader sees either the old or the new content, never half of it:
/// write a sibling temp file, fsync it, rename over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = sibling_temp(path, "tmp")?;
    let result = write_synced(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("write", path, &e)
    })
}

/// Write a file that must not exist yet, atomically: readers (the scheduler's watcher) see the
/// whole text or nothing, and an existing file is never replaced — two saves of one new name
/// cannot both win. (Written to a temporary name, then hard-linked into place: `link` fails when
/// the name exists.)
pub fn write_new_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = sibling_temp(path, "new")?;
    let result = write_synced(&tmp, bytes).and_then(|()| {
        match std::fs::hard_link(&tmp, path) {
            // A file system without hard links (FAT, some network mounts): an exclusive create,
            // still never replacing a file (a reader may see it half-written for a moment).
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
                f.write_all(bytes)?;
                f.sync_all()
            }
            linked => linked,
        }
    });
    let _ = std::fs::remove_file(&tmp);
    result.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::new(crate::error::ErrorCode::Conflict, format!("{} already exists; nothing was written", path.display()))
        } else {
            Error::io("write", path, &e)
        }
    })
}

/// A hidden temporary name beside `path` (same directory, so a rename or link is atomic), with
/// the directory created. Unique per call (process id and the clock's nanoseconds), so two
/// writers of one file — two requests, two processes — never share a half-written temp file.
fn sibling_temp(path: &Path, kind: &str) -> Result<std::path::PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, &e))?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    Ok(dir.join(format!(".{file_name}.{}.{nanos}.{kind}", std::process::id())))
}

/// Write `bytes` to a new file at `path` and flush them to the disk.
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Write `bytes` at the start of `path` (created if missing) without truncating it first, for
/// small records rewritten often at the same length: truncating frees the file's block and the
/// next write allocates one again, and on a file system mounted with `discard` every freed block
/// costs a synchronous discard (measured: most of a burst's time on such a disk).
pub fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
    file.write_all_at(bytes, 0)
}

/// The disk space a file or a directory tree takes: allocated blocks (what removing it frees — a
/// sparse or tiny file takes its blocks, not its length), links not followed, unreadable parts
/// counted as nothing. Walked with a stack, so a deep tree cannot overflow ours.
pub fn disk_usage(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
        total += meta.blocks() * 512;
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&p).into_iter().flatten().flatten().map(|e| e.path()));
        }
    }
    total
}

/// Expand a leading `~` to the user's home directory.
pub fn expand_tilde(path: &str) -> std::path::PathBuf {
    if path == "~" || path.starts_with("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return std::path::PathBuf::from(home).join(path.trim_start_matches('~').trim_start_matches('/'));
        }
    }
    std::path::PathBuf::from(path)
}

/// A folder as a routine writes it (`cwd:`, `sandbox_hide:`, `allow.dirs:`): `~` is `home`'s
/// (the process's `HOME` when `home` is `None`), and a relative path is under it too, as
/// agents-cli takes it without a project.
pub fn folder_in_home(text: &str, home: Option<&std::path::Path>) -> std::path::PathBuf {
    let home = home.map(std::path::Path::to_path_buf).or_else(|| std::env::var_os("HOME").map(std::path::PathBuf::from));
    let path = match (text == "~" || text.starts_with("~/"), &home) {
        (true, Some(home)) => home.join(text.trim_start_matches('~').trim_start_matches('/')),
        _ => std::path::PathBuf::from(text),
    };
    match (path.is_relative(), home) {
        (true, Some(home)) => home.join(path),
        _ => path,
    }
}

/// The largest routine or settings file read (they are a few hundred bytes).
pub const MAX_TEXT_FILE: u64 = 1 << 20;

/// Read a small text file the user controls (a routine, `nightshift.toml`): only a regular file
/// (anything else is never opened: a FIFO would block, `/dev/zero` never ends), at most `max`
/// bytes, UTF-8. The error says what is wrong in words.
/// What [`read_text_file`] says of a text of `len` bytes over `max` (also said of text that would
/// become such a file, so a form or an editor never writes one the reader refuses).
pub fn too_large(len: u64, max: u64) -> String {
    format!("the file is {len} bytes; it may be at most {}", size_words(max))
}

fn size_words(max: u64) -> String {
    if max >= 1 << 20 { format!("{} MiB", max >> 20) } else { format!("{max} bytes") }
}

pub fn read_text_file(file: &Path, max: u64) -> std::result::Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let meta = std::fs::metadata(file).map_err(|e| format!("cannot read the file: {e}"))?;
    let kind = meta.file_type();
    let not_a_file = if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else if kind.is_dir() {
        Some("a directory")
    } else {
        None
    };
    if let Some(what) = not_a_file {
        return Err(format!("this is {what}, not a file; only regular files are read"));
    }
    if meta.len() > max {
        return Err(too_large(meta.len(), max));
    }
    // Non-blocking, and checked again once open: the entry may have changed since.
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(file).map_err(|e| format!("cannot read the file: {e}"))?;
    if !f.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err("this is not a regular file; only regular files are read".into());
    }
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read the file: {e}"))?;
    if bytes.len() as u64 > max {
        let limit = size_words(max);
        return Err(format!("the file is larger than {limit}; it may be at most {limit}"));
    }
    String::from_utf8(bytes).map_err(|e| format!("the file is not UTF-8 text (an invalid byte at offset {})", e.utf8_error().valid_up_to()))
}

/// Below this much free space a file system counts as full: a run could not even write its
/// record, report and first log lines.
pub const MIN_FREE_BYTES: u64 = 1 << 20;

/// What is wrong with the file system holding `path`, in words, or `None` when it can be written:
/// full (less than [`MIN_FREE_BYTES`] available to this user — a quota shows the same way to
/// `statvfs` only when it is a file-system quota, so quota errors are also named where they
/// happen, see [`crate::error::io_cause`]) or mounted read-only. `path` may not exist yet: its nearest existing
/// ancestor is asked.
pub fn storage_trouble(path: &Path) -> Option<String> {
    let (free, read_only) = space(path)?;
    if read_only {
        return Some(format!("the file system holding {} is read-only", path.display()));
    }
    (free < MIN_FREE_BYTES).then(|| format!("the disk holding {} is full ({} KiB free)", path.display(), free / 1024))
}

/// Bytes this user may still write on the file system holding `path` (or its nearest existing
/// ancestor), and whether it is mounted read-only.
pub fn space(path: &Path) -> Option<(u64, bool)> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let c_path = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: a valid NUL-terminated path and a properly sized out-parameter.
    if unsafe { libc::statvfs(c_path.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the struct.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    let free = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
    Some((free, st.f_flag & libc::ST_RDONLY != 0))
}

/// The machine's available memory in MiB (`MemAvailable` of `/proc/meminfo`: what can be had
/// without swapping); `None` where that is not known (not Linux).
pub fn available_memory_mb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024)
}

/// Find `name` on a PATH string, like the shell would.
pub fn find_on_path(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    path_var?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| is_executable(p))
}

/// Whether `path` is a file its owner may execute.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The version of an npm-installed CLI (`claude`, `codex`, `gemini` are): the `version` of the
/// nearest `package.json` above the executable the link points at. Read, never run.
pub fn installed_version(program: &Path) -> Option<String> {
    let real = std::fs::canonicalize(program).ok()?;
    real.ancestors().skip(1).take(6).find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v["version"].as_str().map(str::to_string)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An npm-installed CLI's version, read from its package (the link npm puts on PATH points
    /// into it); none for an executable that is not one.
    #[test]
    fn the_version_of_an_npm_installed_cli_is_read_from_its_package() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("lib/node_modules/@anthropic-ai/claude-code");
        std::fs::create_dir_all(package.join("bin")).unwrap();
        std::fs::write(package.join("package.json"), r#"{"name":"@anthropic-ai/claude-code","version":"2.1.332"}"#).unwrap();
        std::fs::write(package.join("bin/claude.js"), "#!/usr/bin/env node\n").unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(package.join("bin/claude.js"), dir.path().join("bin/claude")).unwrap();
        assert_eq!(installed_version(&dir.path().join("bin/claude")).as_deref(), Some("2.1.332"));
        assert_eq!(installed_version(Path::new("/bin/sh")), None);
    }
}
