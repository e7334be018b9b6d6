//! glibc's allocator, set up for a process that may live for months (`nightshiftctl daemon`, the
//! tray app): at most two arenas — glibc makes up to eight per core, one for
//! each thread that meets another in `malloc`, and each keeps its own freed memory resident — and
//! the memory start-up freed (every routine file parsed, the database migrated, the first pass
//! done) handed back once the scheduler is running, as is what the window freed once it closed. Only memory the process itself freed goes back: no clean page is dropped to look small.
//! Elsewhere (macOS, musl) both are no-ops.

/// Call first in `main`, before any thread exists (arenas are made per thread).
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets a glibc malloc parameter; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Give the pages of memory freed so far back to the system.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own heaps.
    unsafe {
        libc::malloc_trim(0);
    }
}
