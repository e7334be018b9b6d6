//! `nightshift`, the resident process users start: engine, scheduler, notifications and the tray
//! icon (the crate `nightshift-tray`). It links no WebKit; the window is the other binary of this
//! package, `nightshift-window` (src-tauri/src/window_main.rs), which it starts when the window
//! should appear.

// Hide the console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    nightshift_tray::run()
}
