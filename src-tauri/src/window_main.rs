//! `nightshift-window`, the window process (the Tauri app): started by the resident `nightshift`
//! when the window should appear; it exits when the window closes. Everything is in the library
//! (`nightshift_app`), which the tests drive.

// Hide the console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    nightshift_app::run()
}
