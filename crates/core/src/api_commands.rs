// Every window command's name, as the window calls it. One list, included by `api.rs` (the
// definitions, `serve`'s router) and by `src-tauri/build.rs` (the app manifest Tauri derives the
// permissions from; a build script cannot depend on the crate, so it includes this file).
pub const COMMANDS: &[&str] = &[
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
