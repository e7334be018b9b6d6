//! Validating hostile routine and settings files, as a whole process: `nightshiftctl routines
//! validate FILE` (and `routines list` on a home whose `nightshift.toml` is hostile) for files up to
//! 10 MB, each built to cost the most — alias bombs, the deepest nesting, one huge key, a flood of
//! unknown keys, NULs, a 10 MB file. Wall time and peak memory, side by side with the same command
//! on a small valid file in the same run (the process's own baseline). Goal: every file answered
//! with a located error in < 1 s and < 100 MB. Files are written a line at a time and never held
//! here: a child's peak memory counts from its parent's (see `nightshift_testkit::bench`).

use nightshift_testkit::bench::{fmt, measure};
use std::path::Path;
use std::process::Command;

const MIB: usize = 1 << 20;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("routines")).unwrap();
    let ok = "name: ok\ncommand: echo hi\nschedule: \"0 3 * * *\"\n".to_string();
    let under_limit = MIB - 64; // the largest file read (1 MiB) minus room for the header lines
    let head = "name: x\ncommand: echo\nschedule: \"0 3 * * *\"\n";
    type Writer = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Writer)> = vec![
        ("small valid file (baseline)", Box::new(move |f| std::fs::write(f, &ok).unwrap())),
        ("1 MiB of unknown keys", Box::new(move |f| fill(f, head, under_limit, |i| format!("k{i}: 1\n")))),
        ("one 1 MiB key", Box::new(move |f| fill(f, head, under_limit, |i| if i + 1 < under_limit { "k".into() } else { ": 1\n".into() }))),
        ("1 MiB of nesting", Box::new(move |f| fill(f, head, under_limit, |i| format!("{}k:\n", " ".repeat((i % 4000) * 2))))),
        ("1 MiB of flow nesting", Box::new(move |f| fill(f, head, under_limit, |_| "[".into()))),
        ("alias bomb", Box::new(move |f| std::fs::write(f, alias_bomb(head)).unwrap())),
        ("1 MiB of NULs", Box::new(move |f| fill(f, "", under_limit, |_| "\0".into()))),
        ("10 MB file", Box::new(move |f| fill(f, head, 10 * 1_000_000, |i| format!("k{i}: 1\n")))),
    ];
    println!("Validating hostile routine files, whole process");
    println!("{:<30} {:>10} {:>10} {:>6}", "file", "time", "peak", "exit");
    for (name, write) in &cases {
        let file = dir.path().join("x.yaml");
        write(&file);
        let m = measure(ctl(&home).args(["routines", "validate"]).arg(&file));
        let expected = if name.contains("baseline") { Some(0) } else { Some(2) };
        assert_eq!(m.code, expected, "{name}: a located error (exit 2), never a crash");
        println!("{:<30} {:>10} {:>6} MiB {:>6}", name, fmt(m.time), m.peak_kib / 1024, m.code.map(|c| c.to_string()).unwrap_or("signal".into()));
    }

    println!("\nLoading a hostile nightshift.toml, whole process (`nightshiftctl routines list`)");
    println!("{:<30} {:>10} {:>10} {:>6}", "file", "time", "peak", "exit");
    let toml_cases: Vec<(&str, Writer)> = vec![
        ("small valid file (baseline)", Box::new(|f| std::fs::write(f, "max_parallel = 2\n").unwrap())),
        ("1 MiB of unknown keys", Box::new(move |f| fill(f, "", under_limit, |i| format!("k{i} = 1\n")))),
        ("1 MiB of nested arrays", Box::new(move |f| fill(f, "a = ", under_limit, |_| "[".into()))),
        ("1 MiB of tables", Box::new(move |f| fill(f, "", under_limit, |i| format!("[t{i}]\n")))),
        ("10 MB file", Box::new(move |f| fill(f, "", 10 * 1_000_000, |i| format!("k{i} = 1\n")))),
    ];
    for (name, write) in &toml_cases {
        write(&home.join("nightshift.toml"));
        let m = measure(ctl(&home).args(["routines", "list"]));
        let expected = if name.contains("baseline") { Some(0) } else { Some(2) };
        assert_eq!(m.code, expected, "{name}: a located error (exit 2), never a crash");
        println!("{:<30} {:>10} {:>6} MiB {:>6}", name, fmt(m.time), m.peak_kib / 1024, m.code.map(|c| c.to_string()).unwrap_or("signal".into()));
    }
}

fn ctl(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
    cmd.env("NIGHTSHIFT_HOME", home).env("NIGHTSHIFT_SKIP_KEYCHAIN", "1");
    cmd
}

/// Write `head`, then `piece(0)`, `piece(1)`, … until the file holds `size` bytes (the last piece
/// cut to fit), streamed to disk.
fn fill(file: &Path, head: &str, size: usize, piece: impl Fn(usize) -> String) {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(file).unwrap());
    w.write_all(head.as_bytes()).unwrap();
    let (mut len, mut i) = (head.len(), 0);
    while len < size {
        let p = piece(i);
        let take = p.len().min(size - len);
        w.write_all(&p.as_bytes()[..take]).unwrap();
        len += take;
        i += 1;
    }
    w.flush().unwrap();
}

/// Nine levels of nine aliases each: 9^9 nodes if expanded.
fn alias_bomb(head: &str) -> Vec<u8> {
    let mut s = format!("{head}l0: &l0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        s.push_str(&format!("l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"));
    }
    s.into_bytes()
}
