//! The window's JavaScript type-checks against the engine's own types: `ui/lib/types.d.ts` is
//! generated from Rust (`nightshift_core::view::typescript`, kept current by a core test), and
//! TypeScript checks `ui/` with it (`ui/jsconfig.json`). So the window cannot read a field, send
//! an argument or call a command the engine does not have — a rename in Rust fails here.
//! TypeScript is pinned in `tests/typecheck` (installed by scripts/test.sh).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tsc() -> PathBuf {
    let tsc = root().join("tests/typecheck/node_modules/.bin/tsc");
    assert!(tsc.exists(), "TypeScript is not installed: run `npm ci --prefix tests/typecheck` (scripts/test.sh does it)");
    tsc
}

/// Type-check the window's code in `ui`: `Ok` or the compiler's complaints.
fn check(ui: &Path) -> Result<(), String> {
    let out = Command::new(tsc()).arg("-p").arg(ui.join("jsconfig.json")).output().expect("run tsc");
    match out.status.success() {
        true => Ok(()),
        false => Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))),
    }
}

#[test]
fn the_windows_code_type_checks_against_the_engines_types() {
    if let Err(errors) = check(&root().join("ui")) {
        panic!("the window's code disagrees with the engine's types (ui/lib/types.d.ts):\n{errors}");
    }
}

/// The check can fail: a copy of the window that reads a field, calls a command and sends an
/// argument the engine does not have is refused, each named.
#[test]
fn a_field_a_command_or_an_argument_the_engine_does_not_have_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("ui"), dir.path());
    let edit = |file: &str, from: &str, to: &str| {
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} no longer contains {from:?}: pick another spot for this test");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    };
    edit("views/history.js", "duration(run.duration_ms)", "duration(run.duration_secs)");
    edit("views/run.js", "call(\"get_run\", { id })", "call(\"get_run_detail\", { id })");
    edit("views/accounts.js", "call(\"check_account\", { email: account })", "call(\"check_account\", { account })");
    let errors = check(dir.path()).expect_err("a copy of the window with three mistakes passed the type check");
    assert!(errors.contains("Property 'duration_secs' does not exist on type 'RunRecord'"), "{errors}");
    assert!(errors.contains("\"get_run_detail\""), "{errors}");
    assert!(errors.contains("'account' does not exist"), "{errors}");
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
