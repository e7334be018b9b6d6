//! Running the real `nightshiftctl` binary against a throwaway home.
#![allow(dead_code)]

use nightshift_testkit::TestHome;
use std::process::Output;

pub fn ctl(th: &TestHome) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
    cmd.env_clear()
        .env("NIGHTSHIFT_HOME", th.path())
        .env("HOME", th.user_home())
        .env("PATH", path_with(th))
        .env("LANG", "C.UTF-8")
        .current_dir(th.path());
    cmd
}

pub fn tokio_ctl(th: &TestHome) -> tokio::process::Command {
    tokio::process::Command::from(ctl(th))
}

/// The test home's bin dir, the real agent CLIs (if installed), then the system.
pub fn path_with(th: &TestHome) -> String {
    let real = nightshift_testkit::home::workspace_root().join("tests/agents-cli/node_modules/.bin");
    format!("{}:{}:/usr/local/bin:/usr/bin:/bin", th.bin_dir().display(), real.display())
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(o), stderr(o)))
}
