//! `nightshift`, the tray app users start: the Tauri app that hosts the engine (see the library,
//! src-tauri/src/lib.rs).

// Hide the console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    nightshift_app::run()
}
