//! The app's commands are declared here (an app manifest), so Tauri generates a permission per
//! command and the window gets exactly the ones capabilities/main.json grants — nothing by default.

/// Every command of `src-tauri/src/commands.rs`. A command missing here cannot be called at all.
const COMMANDS: &[&str] = &[
    "engine_state",
    "list_routines",
    "run_now",
    "set_routine_paused",
    "set_paused",
    "list_runs",
    "get_run",
    "read_log",
    "cancel_run",
    "list_accounts",
    "check_account",
    "set_token",
    "relogin",
    "open_link",
];

fn main() {
    let attributes = tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    tauri_build::try_build(attributes).expect("tauri-build failed");
}
