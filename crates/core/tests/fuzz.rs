//! Fuzzing in the suite: every reader of untrusted bytes, fed the corpus in `tests/corpus/` and the
//! recorded agent streams in `tests/fixtures/`, then mutations of them (bit flips, cuts, splices,
//! repeated spans, inserted NULs and invalid UTF-8). Bounded runs: a fixed number of cases each.
//!
//! What must hold: no panic and an answer for every input (proptest would report a hang as a test
//! that never ends, and CI's time limit catches it); output bounded by the input's limits; the
//! routine and settings parsers locate every problem; the log tail and log view readers always make
//! progress. (The classifiers' own property — never `completed` without the agent's completion
//! event — is in `other_agents.rs`, over the same recorded streams.)

use nightshift_core::agents::tail::LogTail;
use nightshift_core::agents::{driver, transcript};
use nightshift_core::routine::parse_routine;
use nightshift_core::settings::Settings;
use nightshift_core::view::log::read_chunk;
use nightshift_core::words::Agent;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn dir(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(rel)
}

/// Every file under `tests/<rel>` (recursively), as bytes.
fn seeds(rel: &str) -> Vec<Vec<u8>> {
    fn walk(p: &Path, out: &mut Vec<Vec<u8>>) {
        let mut entries: Vec<_> = std::fs::read_dir(p).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for e in entries {
            if e.is_dir() {
                walk(&e, out);
            } else {
                out.push(std::fs::read(&e).unwrap());
            }
        }
    }
    let mut out = Vec::new();
    walk(&dir(rel), &mut out);
    assert!(!out.is_empty(), "the corpus in tests/{rel} is empty");
    out
}

/// One way to damage an input.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit { at: usize, bit: u8 },
    Cut { at: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Repeat { at: usize, len: usize, times: usize },
    Splice { at: usize, other: usize, from: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let special = prop_oneof![
        Just(b"\0".to_vec()),
        Just(vec![0xff, 0xfe]),
        Just(b"\xef\xbb\xbf".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"18446744073709551615".to_vec()),
        Just(b"*a".to_vec()),
        Just(b"&a ".to_vec()),
        Just(b"[[[[[[[[".to_vec()),
        Just(b"{\"type\":\"result\"".to_vec()),
        prop::collection::vec(any::<u8>(), 0..40),
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        any::<usize>().prop_map(|at| Mutation::Cut { at }),
        (any::<usize>(), special).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1usize..64, 1usize..200).prop_map(|(at, len, times)| Mutation::Repeat { at, len, times }),
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(at, other, from)| Mutation::Splice { at, other, from }),
    ]
}

fn apply(input: &[u8], muts: &[Mutation], others: &[Vec<u8>]) -> Vec<u8> {
    let mut b = input.to_vec();
    for m in muts {
        let at = |i: usize, b: &Vec<u8>| if b.is_empty() { 0 } else { i % (b.len() + 1) };
        match m {
            Mutation::FlipBit { at: i, bit } if !b.is_empty() => {
                let i = i % b.len();
                b[i] ^= 1 << bit;
            }
            Mutation::FlipBit { .. } => {}
            Mutation::Cut { at: i } => b.truncate(at(*i, &b)),
            Mutation::Insert { at: i, bytes } => {
                let i = at(*i, &b);
                b.splice(i..i, bytes.iter().copied());
            }
            Mutation::Repeat { at: i, len, times } => {
                let i = at(*i, &b);
                let span: Vec<u8> = b[i..(i + len).min(b.len())].to_vec();
                let rep = span.repeat(*times);
                b.splice(i..i, rep);
            }
            Mutation::Splice { at: i, other, from } => {
                let o = &others[other % others.len()];
                let from = if o.is_empty() { 0 } else { from % o.len() };
                let i = at(*i, &b);
                b.truncate(i);
                b.extend_from_slice(&o[from..]);
            }
        }
    }
    b
}

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig { cases: n, failure_persistence: None, ..ProptestConfig::default() }
}

/// The recorded stdout streams of every agent, as (agent, bytes).
fn agent_streams() -> Vec<(Agent, Vec<u8>)> {
    let mut out = Vec::new();
    for (agent, sub) in [(Agent::Claude, "claude-2.1.332"), (Agent::Codex, "codex-0.171.0"), (Agent::Gemini, "gemini-0.61.0")] {
        for s in seeds(&format!("fixtures/{sub}")) {
            out.push((agent, s));
        }
    }
    out.push((Agent::Command, b"plain command output\nline two\n".to_vec()));
    out
}

/// A routine, or problems that each have a position (line and column from 1), at most the
/// documented number listed.
fn check_routine(src: &str) -> Result<(), TestCaseError> {
    match parse_routine(src, Path::new("/h/routines/x.yaml"), "routines/x.yaml") {
        Ok(r) => prop_assert!(!r.name.is_empty()),
        Err(bad) => {
            prop_assert!(!bad.errors.is_empty());
            prop_assert!(bad.errors.len() <= nightshift_core::routine::MAX_PROBLEMS + 1);
            for e in &bad.errors {
                prop_assert!(e.line >= 1 && e.col >= 1, "{e}");
            }
        }
    }
    Ok(())
}

/// Pieces routine files are made of, in any order and nesting, plus arbitrary text.
fn fragments() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("schedule: \"0 9 * * *\"\n".to_string()),
        Just("command: echo hi\n".to_string()),
        Just("agent: claude\nprompt: go\n".to_string()),
        Just("env:\n  A: b\n".to_string()),
        Just("- \n".to_string()),
        Just("&a [1, *a]\n".to_string()),
        Just("? x\n: y\n".to_string()),
        Just("{[{[".to_string()),
        Just("\u{feff}".to_string()),
        Just("\0".to_string()),
        "[ -~\n\t]{0,40}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..30).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(cases(2000))]

    /// Routine files built from the pieces they are made of, in any order and nesting.
    #[test]
    fn the_routine_parser_answers_every_fragment_mix(src in fragments()) {
        check_routine(&src)?;
    }
}

proptest! {
    #![proptest_config(cases(400))]

    /// `nightshift.toml`: defaults, settings, or an error located at file:line:col — never a panic.
    #[test]
    fn the_settings_parser_answers_every_input(i in any::<usize>(), muts in prop::collection::vec(mutation(), 0..4)) {
        let all = seeds("corpus/settings");
        let bytes = apply(&all[i % all.len()], &muts, &all);
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("nightshift.toml");
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = Settings::load(&path) {
            let prefix = format!("{}:", path.display());
            prop_assert!(e.message.starts_with(&prefix), "not located: {}", e.message);
            let rest = &e.message[prefix.len()..];
            let mut parts = rest.splitn(3, ':');
            let line: usize = parts.next().unwrap_or("").parse().unwrap_or(0);
            let col: usize = parts.next().unwrap_or("").parse().unwrap_or(0);
            prop_assert!(line >= 1 && col >= 1, "no line:col in {}", e.message);
        }
    }

    /// Routine files: the corpus (aliases, deep nesting, NULs, impossible schedules) and its
    /// mutations.
    #[test]
    fn the_routine_parser_answers_every_corpus_mutation(i in any::<usize>(), muts in prop::collection::vec(mutation(), 0..4)) {
        let all = seeds("corpus/routines");
        let bytes = apply(&all[i % all.len()], &muts, &all);
        // Routine files are read as UTF-8 first (a non-UTF-8 file is a located error there).
        check_routine(&String::from_utf8_lossy(&bytes))?;
    }

    /// Each agent's transcript reader (the window's log view) on damaged lines: entries stay
    /// clipped, whatever the line.
    #[test]
    fn transcript_readers_stay_bounded(i in any::<usize>(), line_pick in any::<usize>(), muts in prop::collection::vec(mutation(), 0..4)) {
        let all = agent_streams();
        let (agent, stream) = &all[i % all.len()];
        let lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
        let raw: Vec<Vec<u8>> = all.iter().map(|(_, s)| s.clone()).collect();
        let line = apply(lines[line_pick % lines.len()], &muts, &raw);
        let text = String::from_utf8_lossy(&line);
        for l in text.lines() {
            for e in driver(*agent).transcript(l) {
                // The clip note adds a few dozen characters to the cut text.
                prop_assert!(e.text.chars().count() <= transcript::MAX_ENTRY_CHARS + 64, "{} chars", e.text.chars().count());
            }
        }
    }

    /// The log tail reader: any bytes, any window — only complete lines, never more than the
    /// window holds (invalid UTF-8 becomes U+FFFD: up to 3 bytes for one), and `read_until`
    /// stops even when what it looks for is never there.
    #[test]
    fn the_log_tail_reader_is_bounded(i in any::<usize>(), muts in prop::collection::vec(mutation(), 0..6), window in 1u64..4096) {
        let all: Vec<Vec<u8>> = agent_streams().into_iter().map(|(_, s)| s).collect();
        let bytes = apply(&all[i % all.len()], &muts, &all);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        std::fs::write(&path, &bytes).unwrap();
        let tail = LogTail::read(&path, window);
        prop_assert_eq!(tail.len, bytes.len() as u64);
        prop_assert_eq!(tail.cut, (bytes.len() as u64) > window);
        let held: usize = tail.lines.iter().map(String::len).sum();
        prop_assert!(held as u64 <= 3 * window, "{} bytes of lines from a {} byte window", held, window);
        let whole = LogTail::read_until(&path, |_| false);
        prop_assert!(!whole.cut, "a small file is read whole when the event is never found");
    }

    /// The log view reader: from any offset, a chunk never runs past the file, and a reader that
    /// follows `next_offset` reaches the end in a bounded number of steps (no stall on a long
    /// line, a missing newline or invalid UTF-8).
    #[test]
    fn the_log_view_reader_always_makes_progress(i in any::<usize>(), muts in prop::collection::vec(mutation(), 0..6), max in 1u64..2048, readable in any::<bool>()) {
        let all = agent_streams();
        let (agent, stream) = &all[i % all.len()];
        let raw: Vec<Vec<u8>> = all.iter().map(|(_, s)| s.clone()).collect();
        let bytes = apply(stream, &muts, &raw);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        std::fs::write(&path, &bytes).unwrap();
        let size = bytes.len() as u64;
        let mut offset = 0;
        let mut steps = 0u64;
        while offset < size {
            let chunk = read_chunk(&path, driver(*agent), offset, readable, true, max);
            prop_assert!(chunk.next_offset > offset, "stalled at {offset} of {size}");
            prop_assert!(chunk.next_offset <= size);
            prop_assert!(chunk.next_offset - offset <= max);
            offset = chunk.next_offset;
            steps += 1;
            prop_assert!(steps <= size / max + size + 1);
        }
    }
}

proptest! {
    #![proptest_config(cases(1000))]

    /// Whatever a user types into the form's prompt, command or description — quotes, colons,
    /// `#`, leading spaces, blank lines, tabs, CRs, unicode — the file written reads back as exactly
    /// that text (a prompt is never silently changed by YAML quoting).
    #[test]
    fn any_text_a_form_takes_reads_back_exactly(prompt in "[ -~\t\n\r✓é]{1,200}", command in "[ -~\n]{1,80}") {
        use nightshift_core::routine::author::Draft;
        use nightshift_core::routine::Action;
        prop_assume!(!prompt.trim().is_empty() && !command.trim().is_empty());
        let agent = Draft { name: "p".into(), agent: "claude".into(), prompt: prompt.clone(), description: prompt.clone(), schedule: "@daily".into(), ..Draft::default() };
        let r = parse_routine(&agent.to_yaml(), Path::new("p.yaml"), "p.yaml").unwrap_or_else(|e| panic!("{:?}\n{}", e.errors, agent.to_yaml()));
        prop_assert_eq!(r.description.as_deref(), Some(prompt.trim()));
        match r.action {
            Action::Agent { prompt: p, .. } => prop_assert_eq!(p, prompt),
            other => prop_assert!(false, "{other:?}"),
        }
        let shell = Draft { name: "c".into(), command: command.clone(), schedule: "@daily".into(), ..Draft::default() };
        let r = parse_routine(&shell.to_yaml(), Path::new("c.yaml"), "c.yaml").unwrap_or_else(|e| panic!("{:?}\n{}", e.errors, shell.to_yaml()));
        prop_assert_eq!(r.action, Action::Command { command });
    }
}
