//! The app's commands are declared here (an app manifest), so Tauri generates a permission per
//! command and the window gets exactly the ones capabilities/main.json grants — nothing by default.

// Every window command (`nightshift_core::api`), from the one list both include. A command
// missing there cannot be called at all.
include!("../crates/core/src/api_commands.rs");

fn main() {
    println!("cargo:rerun-if-changed=../crates/core/src/api_commands.rs");
    let attributes = tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    tauri_build::try_build(attributes).expect("tauri-build failed");
}
