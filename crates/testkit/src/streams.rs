//! Big agent logs for benchmarks: a real recorded Claude stream (its `init` and `result` events)
//! with `mb` megabytes of assistant and tool-result events between them.

use std::io::{BufWriter, Write};
use std::path::Path;

/// Write a Claude stream-json log of about `mb` MB to `path`; with `secret`, one line in the
/// middle carries it (as an agent that echoed a token would).
pub fn write_claude_stream(path: &Path, mb: usize, secret: Option<&str>) {
    let fixture = crate::home::workspace_root().join("crates/core/tests/fixtures/claude-2.1.332/success.jsonl");
    let real = std::fs::read_to_string(fixture).expect("the recorded Claude stream");
    let lines: Vec<&str> = real.lines().collect();
    let (init, result) = (lines[0], lines[lines.len() - 1]);
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(w, "{init}").unwrap();
    let text = "Looking at src/lib.rs: the retry loop re-reads the config on every attempt. ".repeat(20);
    let target = (mb as u64) << 20;
    let (mut i, mut written) = (0u64, 0u64);
    let mut secret = secret;
    while written < target {
        let line = if i & 1 == 0 {
            format!(r#"{{"type":"assistant","message":{{"id":"msg_{i}","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"session_id":"s"}}"#)
        } else {
            format!(r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{i}","content":"{text}"}}]}},"session_id":"s"}}"#)
        };
        written += line.len() as u64 + 1;
        writeln!(w, "{line}").unwrap();
        if written >= target / 2 {
            if let Some(s) = secret.take() {
                writeln!(w, r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"env","content":"TOKEN={s}"}}]}},"session_id":"s"}}"#).unwrap();
            }
        }
        i += 1;
    }
    writeln!(w, "{result}").unwrap();
}
