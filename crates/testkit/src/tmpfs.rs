//! A real, size-limited file system for disk-full and read-only tests: a tmpfs mounted on a
//! temporary directory (root only — CI runs as root), unmounted when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mount a tmpfs of `size_kib`. Not root: a loud failure, unless `NIGHTSHIFT_SKIP_ROOT_TESTS=1`
    /// says the developer chose to skip these tests (then `None`).
    pub fn mount(size_kib: u64) -> Option<Tmpfs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            if std::env::var("NIGHTSHIFT_SKIP_ROOT_TESTS").as_deref() == Ok("1") {
                eprintln!("skipping: mounting a tmpfs needs root and NIGHTSHIFT_SKIP_ROOT_TESTS=1");
                return None;
            }
            panic!("this test mounts a tmpfs and needs root (CI runs as root); set NIGHTSHIFT_SKIP_ROOT_TESTS=1 to skip it");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size_kib}k"), "tmpfs"]).arg(dir.path()).status().expect("run mount");
        assert!(ok.success(), "mount -t tmpfs failed");
        Some(Tmpfs { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Remount read-only (`true`) or read-write: even root cannot write a read-only mount.
    pub fn set_read_only(&self, read_only: bool) {
        let opt = if read_only { "remount,ro" } else { "remount,rw" };
        let ok = Command::new("mount").args(["-o", opt]).arg(self.path()).status().expect("run mount");
        assert!(ok.success(), "mount -o {opt} failed");
    }

    /// Write a file of zeros until the file system is full (ENOSPC), leaving `leave_kib` free.
    pub fn fill(&self, leave_kib: u64) -> PathBuf {
        let filler = self.path().join("filler");
        let st = free_kib(self.path());
        let size = st.saturating_sub(leave_kib) * 1024;
        let f = std::fs::File::create(&filler).expect("create filler");
        use std::io::Write;
        let mut w = std::io::BufWriter::new(f);
        let chunk = vec![0u8; 64 * 1024];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            if w.write_all(&chunk[..n]).is_err() {
                break;
            }
            left -= n as u64;
        }
        let _ = w.flush();
        filler
    }
}

/// Free space on the file system holding `path`, in KiB.
pub fn free_kib(path: &Path) -> u64 {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: valid path and out-parameter.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) }, 0);
    // SAFETY: statvfs succeeded.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    let free = st.f_bavail as u64 * st.f_frsize as u64;
    free / 1024
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a process still holding a file there must not leave the mount behind.
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}
