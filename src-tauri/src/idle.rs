//! Give memory back when the app goes idle in the tray (the window closed, or never opened).
//!
//! After the window closed, the best state is the one the app starts in: once no run is queued or
//! going, the app **re-executes itself** tray-only ([`restart_in_tray`]): same pid, a fresh image
//! without WebKit's page state, GL driver or heap growth; the engine opens again from SQLite (runs
//! are never held only in memory) and the single-instance name, scheduler lock and tray icon are
//! taken again. Until then, and in the fresh image, [`release`] trims what it can.
//!
//! Destroying the window ends WebKit's web process, but two things stay (measured in
//! `benches/tray_idle.rs`, numbers in the README):
//!
//! - **WebKit's network process** (~60 MB RSS) lives as long as the app's web context, i.e. for
//!   ever: Tauri keeps the context and WebKitGTK has no API to end the process. With no webview
//!   left it serves nobody, so we end it; WebKit starts a fresh one when the next window loads (the
//!   reopen path is tested).
//! - **Clean file-backed pages** — code and read-only data of WebKit, JavaScriptCore, GTK, Mesa and
//!   the app binary that were touched while the window was open (~100 MB RSS). They are not heap:
//!   the kernel can drop them at any time and read them back on use. We ask it to do so now
//!   (`madvise(MADV_PAGEOUT)`, Linux ≥ 5.4), the way a memory-pressure pass would, so an idle tray
//!   app does not sit on them. Dirty/anonymous memory is untouched; pages shared with other
//!   processes stay where they are. The cost is page faults when the window opens again.
//!
//! Everything here is best effort: a failure is logged and changes nothing else.

/// Processes of ours that WebKit starts for a window and that are useless without one.
#[cfg(target_os = "linux")]
const WEBKIT_HELPERS: &[&str] = &["WebKitNetworkPr", "WebKitNetworkProcess"];

/// Release what the idle tray app does not need. Call only when no webview exists.
pub fn release() {
    #[cfg(target_os = "linux")]
    {
        reap_webkit_zombies();
        let ended = end_webkit_helpers();
        // Give the helpers a moment to exit, so their shared pages become ours alone (reclaimable).
        if ended > 0 {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let trimmed = trim_file_pages();
        tracing::debug!(ended, trimmed_mappings = trimmed, "released memory for the idle tray app");
    }
}

/// Replace this process with a fresh tray-only image of the same binary. Returns only if that
/// failed (e.g. the binary was replaced on disk by an upgrade): the caller keeps running as is.
#[cfg(target_os = "linux")]
pub fn restart_in_tray() -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return e,
    };
    let var = nightshift_core::runner::process::EXEC_GENERATION_VAR;
    let generation = std::env::var(var).ok().and_then(|g| g.parse::<u64>().ok()).unwrap_or(0) + 1;
    tracing::info!(generation, "the window is closed and no run is going: restarting in the tray to give back the window's memory");
    // End WebKit's helpers first, while WebKit is still here to reap them; the new image reaps any
    // that exit later (they stay its children).
    if end_webkit_helpers() > 0 {
        let start = std::time::Instant::now();
        while !webkit_helpers().is_empty() && start.elapsed() < std::time::Duration::from_secs(1) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    std::process::Command::new(exe).arg(crate::MINIMIZED).env(var, generation.to_string()).exec()
}

/// Our descendant WebKit helper processes: (pid, is a zombie).
#[cfg(target_os = "linux")]
fn webkit_helpers() -> Vec<(u32, bool)> {
    use nightshift_core::runner::process::{descendants, is_zombie, process_name};
    descendants(std::process::id())
        .into_iter()
        .filter(|pid| process_name(*pid).is_some_and(|n| WEBKIT_HELPERS.contains(&n.as_str())))
        .map(|pid| (pid, is_zombie(pid)))
        .collect()
}

/// SIGTERM our live WebKit helper processes; how many were signalled.
#[cfg(target_os = "linux")]
fn end_webkit_helpers() -> usize {
    let mut ended = 0;
    for (pid, _) in webkit_helpers().into_iter().filter(|(_, zombie)| !zombie) {
        // SAFETY: plain kill(2) on a pid we just read as our descendant.
        if unsafe { libc::kill(pid as i32, libc::SIGTERM) } == 0 {
            ended += 1;
        }
    }
    ended
}

/// Helpers of an earlier image of this process that exited after it re-executed are our children
/// now, and nobody else will wait for them.
#[cfg(target_os = "linux")]
fn reap_webkit_zombies() {
    for (pid, _) in webkit_helpers().into_iter().filter(|(_, zombie)| *zombie) {
        let mut status = 0;
        // SAFETY: waitpid on one specific pid that is our zombie child; WNOHANG never blocks.
        unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
    }
}

/// `madvise(MADV_PAGEOUT)` every read-only or executable file mapping; how many were advised.
#[cfg(target_os = "linux")]
fn trim_file_pages() -> usize {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return 0 };
    let mut advised = 0;
    for m in maps.lines().filter_map(Mapping::parse).filter(Mapping::reclaimable) {
        // SAFETY: the range is a whole mapping of this process, read from /proc/self/maps; PAGEOUT
        // only changes residency, never contents (clean file pages are re-read on the next access).
        if unsafe { libc::madvise(m.start as *mut libc::c_void, m.end - m.start, libc::MADV_PAGEOUT) } == 0 {
            advised += 1;
        }
    }
    advised
}

#[derive(Debug, PartialEq)]
struct Mapping<'a> {
    start: usize,
    end: usize,
    perms: &'a str,
    path: &'a str,
}

impl<'a> Mapping<'a> {
    /// One line of /proc/self/maps: `start-end perms offset dev inode [path]`.
    fn parse(line: &'a str) -> Option<Mapping<'a>> {
        let mut parts = line.split_whitespace();
        let (start, end) = parts.next()?.split_once('-')?;
        let perms = parts.next()?;
        let path = parts.nth(3).unwrap_or("");
        Some(Mapping { start: usize::from_str_radix(start, 16).ok()?, end: usize::from_str_radix(end, 16).ok()?, perms, path })
    }

    /// A file's pages that are never written: code and read-only data. Not the heap, stacks,
    /// anonymous or shared-memory mappings, and not writable mappings (their pages may be dirty).
    fn reclaimable(&self) -> bool {
        self.path.starts_with('/') && !self.path.starts_with("/SYSV") && !self.perms.contains('w') && self.perms.starts_with('r') && self.end > self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_read_only_file_mappings_are_trimmed() {
        let lines = [
            ("55d0c0000000-55d0c0a00000 r-xp 00000000 08:01 123 /usr/bin/nightshift", true),
            ("7f00-8f00 r--p 00000000 08:01 9 /usr/lib/x86_64-linux-gnu/libwebkit2gtk-4.1.so.0", true),
            ("7f00-8f00 rw-p 00000000 08:01 9 /usr/lib/x86_64-linux-gnu/libwebkit2gtk-4.1.so.0", false),
            ("7f00-8f00 rw-p 00000000 00:00 0 [heap]", false),
            ("7f00-8f00 rw-p 00000000 00:00 0", false),
            ("7f00-8f00 r--p 00000000 00:00 0 [vvar]", false),
            ("7f00-8f00 rw-s 00000000 00:05 7 /SYSV00000000 (deleted)", false),
            ("7f00-8f00 ---p 00000000 08:01 9 /usr/lib/libx.so", false),
        ];
        for (line, expected) in lines {
            let m = Mapping::parse(line).unwrap();
            assert_eq!(m.reclaimable(), expected, "{line}");
        }
        assert_eq!(Mapping::parse("55d0c0000000-55d0c0a00000 r-xp 00000000 08:01 123 /usr/bin/nightshift").unwrap().end, 0x55d0c0a00000);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn trimming_keeps_the_process_working_and_lowers_file_backed_rss() {
        // Touch this binary's code, trim, and the process still runs the same code afterwards.
        let before = rss_file_kb();
        assert!(trim_file_pages() > 0);
        let after = rss_file_kb();
        assert!(after < before, "file-backed RSS did not drop: {before} → {after} kB");
        // Still the same code: the pages come back on use.
        assert_eq!(Mapping::parse("1-2 r--p 0 0:0 0 /x").unwrap().path, "/x");
    }

    #[cfg(target_os = "linux")]
    fn rss_file_kb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status.lines().find(|l| l.starts_with("RssFile:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap()
    }
}
