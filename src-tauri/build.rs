//! The app's commands are declared here (an app manifest), so Tauri generates a permission per
//! command; the window process grants its window exactly those (`window::capability`, derived from
//! the same list) — nothing by default.

// Every window command (`nightshift_core::api`), from the one list both include. A command
// missing there cannot be called at all.
include!("../crates/core/src/api_commands.rs");

fn main() {
    println!("cargo:rerun-if-changed=../crates/core/src/api_commands.rs");
    // The window's pages are embedded from here: a changed page must rebuild (naming one file
    // above switched off cargo's rerun-on-any-change, so the folder is named too).
    println!("cargo:rerun-if-changed=../ui");
    let attributes = tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    tauri_build::try_build(attributes).expect("tauri-build failed");
}
