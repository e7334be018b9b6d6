//! The app's entry point; everything is in the library (`nightshift_app::run`), which the tests drive.

// Hide the console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    nightshift_app::run()
}
