//! The floors of every crate, kept by a test rather than by a document: no import circle between
//! sibling modules of one crate, at any level — between a crate's top-level modules (`routine` ↔
//! `agents` came back after every wave), between the files of one folder (`engine/run/queue.rs` →
//! `driver.rs` → `attempt.rs` → `incoming.rs` → `queue.rs` did), and between the folders of one
//! folder (`engine/run/` and `engine/resident/`). Between crates,
//! Cargo itself refuses a circle: `nightshift-model` cannot name the store or the engine, and the
//! store cannot name the engine.
//!
//! Read from the source text: `crate::a::b` and `super::b` paths, `use` trees included; comments
//! and each file's `#[cfg(test)] mod tests` are left out (a test may reach anywhere). A folder's
//! `mod.rs` is the folder itself: its files may use it, and it may name them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The source roots of the workspace's crates, from this crate's folder.
const CRATES: [&str; 7] = ["../model/src", "../store/src", "src", "../cli/src", "../desktop/src", "../testkit/src", "../../src-tauri/src"];

/// Every module path a file names, as written: `crate::a::b…` and `super::b…`, one list of
/// segments each (`["crate", "engine", "queue"]`).
fn named_paths(text: &str) -> Vec<Vec<String>> {
    let text = without_comments(text);
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    let mut out = Vec::new();
    // `use` trees: `use super::{a::B, c}` names `super::a` and `super::c`.
    for statement in text.split(';') {
        if let Some(at) = statement.find("use ") {
            let tree = statement[at + 4..].trim();
            if tree.starts_with("crate") || tree.starts_with("super") {
                expand(tree, Vec::new(), &mut out);
            }
        }
    }
    // Paths in code: `crate::engine::queue::submit(…)`.
    let bytes = text.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(found) = text[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let path: String = text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':').collect();
            out.push(path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect());
        }
    }
    out
}

/// The paths a `use` tree names, each with `prefix` before it.
fn expand(tree: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    match tree.find('{') {
        None => {
            let mut path = prefix;
            path.extend(tree.split(" as ").next().unwrap_or("").split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_string));
            out.push(path);
        }
        Some(open) => {
            let mut path = prefix;
            path.extend(tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_string));
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let (mut depth, mut begin) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&inner[begin..i], path.clone(), out);
                        begin = i + 1;
                    }
                    _ => {}
                }
            }
            if !inner[begin..].trim().is_empty() {
                expand(&inner[begin..], path, out);
            }
        }
    }
}

/// `text` with its `//` and `/* */` comments blanked (strings are left as they are: a path in a
/// string is rare, and would only ever add an arrow).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            let end = after.find('\n').unwrap_or(after.len());
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("/*") {
            let end = after.find("*/").map(|e| e + 2).unwrap_or(after.len());
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('"') {
            // Skip a string literal whole (a `//` inside one is no comment).
            let mut end = 0;
            let mut escaped = false;
            for (i, c) in after.char_indices() {
                match (c, escaped) {
                    ('\\', false) => escaped = true,
                    ('"', false) => {
                        end = i + 1;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            out.push_str("\"\"");
            rest = &after[end.max(1).min(after.len())..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// One crate's modules: each file as its module path (`engine/run/queue.rs` → `["engine", "queue"]`,
/// `engine/mod.rs` → `["engine"]`).
fn modules(root: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let mut segments: Vec<String> = path.strip_prefix(root).unwrap().with_extension("").iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if matches!(segments.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                segments.pop();
            }
            // A binary's own files (src/bin/…) are crates of their own.
            if segments.first().is_some_and(|s| s == "bin") {
                continue;
            }
            out.insert(segments, path);
        }
    }
    out
}

/// The arrows of one crate between sibling modules, at every level — top-level modules, the files
/// of one folder, the folders inside a folder — each with the files that draw it.
fn arrows(mods: &BTreeMap<Vec<String>, PathBuf>) -> BTreeMap<(Vec<String>, Vec<String>), BTreeSet<String>> {
    let is_module = |p: &[String]| mods.contains_key(p);
    let mut out: BTreeMap<(Vec<String>, Vec<String>), BTreeSet<String>> = BTreeMap::new();
    for (me, file) in mods {
        let text = std::fs::read_to_string(file).unwrap();
        let is_folder_face = file.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
        // What `super` is, seen from this file.
        let parent: Vec<String> = if is_folder_face { me.iter().take(me.len().saturating_sub(1)).cloned().collect() } else { me[..me.len() - 1].to_vec() };
        for path in named_paths(&text) {
            // The path from the crate root.
            let mut absolute: Vec<String> = match path.first().map(String::as_str) {
                Some("crate") => Vec::new(),
                Some("super") => parent.clone(),
                _ => continue,
            };
            let mut rest = path[1..].iter().peekable();
            while rest.peek().is_some_and(|s| *s == "super") {
                rest.next();
                absolute.pop();
            }
            absolute.extend(rest.cloned());
            // The deepest module the path names.
            let Some(target) = (1..=absolute.len()).rev().map(|n| absolute[..n].to_vec()).find(|p| is_module(p)) else { continue };
            let label = format!("{} ({})", file.display(), path.join("::"));
            // Between siblings: the two modules under the deepest folder both are in (two
            // top-level modules, two files of a folder, or the folders that hold them). A module
            // naming one of its own ancestors (a file using its folder's mod.rs) or descendants
            // (a mod.rs naming its files) draws no arrow.
            let common = me.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common < me.len() && common < target.len() {
                out.entry((me[..=common].to_vec(), target[..=common].to_vec())).or_default().insert(label);
            }
        }
    }
    out
}

/// Every circle of `arrows` (strongly connected parts of more than one module), as the modules in it.
fn circles(arrows: &BTreeMap<(Vec<String>, Vec<String>), BTreeSet<String>>) -> Vec<Vec<Vec<String>>> {
    let nodes: BTreeSet<&Vec<String>> = arrows.keys().flat_map(|(a, b)| [a, b]).collect();
    let next = |n: &Vec<String>| arrows.keys().filter(move |(a, _)| a == n).map(|(_, b)| b.clone()).collect::<Vec<_>>();
    let reaches = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut stack = next(from);
        while let Some(n) = stack.pop() {
            if seen.insert(n.clone()) {
                stack.extend(next(&n));
            }
        }
        seen
    };
    let reach: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> = nodes.iter().map(|n| (*n, reaches(n))).collect();
    let mut out: Vec<Vec<Vec<String>>> = Vec::new();
    for n in &nodes {
        if !reach[n].contains(*n) || out.iter().any(|c| c.contains(n)) {
            continue;
        }
        let circle: Vec<Vec<String>> = nodes.iter().filter(|m| reach[n].contains(**m) && reach[**m].contains(*n)).map(|m| (*m).clone()).collect();
        out.push(circle);
    }
    out
}

/// The circles of the crate at `root`, in words: each module, and the arrows that tie it.
fn circles_in(root: &Path) -> Vec<String> {
    let mods = modules(root);
    let arrows = arrows(&mods);
    circles(&arrows)
        .into_iter()
        .map(|circle| {
            let ties: Vec<String> = arrows
                .iter()
                .filter(|((a, b), _)| circle.contains(a) && circle.contains(b))
                .map(|((a, b), by)| format!("    {} -> {}: {}", a.join("::"), b.join("::"), by.iter().take(3).cloned().collect::<Vec<_>>().join("; ")))
                .collect();
            format!("  {}: {}\n{}", root.display(), circle.iter().map(|m| m.join("::")).collect::<Vec<_>>().join(", "), ties.join("\n"))
        })
        .collect()
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for krate in CRATES {
        let root = here.join(krate);
        assert!(root.is_dir(), "{} is not a folder: CRATES names every crate's source", root.display());
        found.extend(circles_in(&root));
    }
    assert!(found.is_empty(), "import circles (a module that, through others, imports itself) — move the shared word down a floor, or the caller up:\n{}", found.join("\n"));
}

/// The check itself finds what it must: a circle between top-level modules and one between the
/// files of a folder, each through `use` trees and paths in code; a folder's mod.rs ties nothing.
#[test]
fn the_check_finds_a_circle_at_each_level() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
    write("a.rs", "use crate::{b::{Thing, other}, c};\n// crate::c in a comment is no arrow\n");
    write("b/mod.rs", "mod one;\nmod two;\npub fn shared() { one::f(); two::g(); }\n");
    write("b/one.rs", "pub fn f() { super::two::g(); super::shared(); }\n");
    write("b/two.rs", "use super::one;\npub fn g() { let _ = \"crate::a\"; }\n#[cfg(test)]\nmod tests { use crate::a; }\n");
    write("c.rs", "pub fn h() {}\n");
    assert_eq!(circles_in(dir.path()).len(), 1, "b/one ↔ b/two only: {:?}", circles_in(dir.path()));
    write("c.rs", "pub fn h() { crate::a::x(); }\n");
    let found = circles_in(dir.path());
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().any(|c| c.contains(": a, c") && c.contains("a -> c")), "{found:?}");
    assert!(found.iter().any(|c| c.contains(": b::one, b::two")), "{found:?}");
    // Folders inside a folder: d/x/ and d/y/ tie each other through their files.
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod d;\n");
    write("d/mod.rs", "mod x;\nmod y;\n");
    write("d/x/mod.rs", "mod p;\n");
    write("d/x/p.rs", "pub fn p() { crate::d::y::q::q(); }\n");
    write("d/y/mod.rs", "pub mod q;\n");
    write("d/y/q.rs", "use crate::d::x::p;\npub fn q() {}\n");
    let found = circles_in(dir.path());
    assert!(found.iter().any(|c| c.contains(": d::x, d::y") && c.contains("d::x -> d::y") && c.contains("d::y -> d::x")), "{found:?}");
}

/// The engine's crates and the CLI build on a bare server: nothing they depend on (for a build, not
/// for their tests) is a GUI library — Tauri, GTK, GDK, WebKit, a tray. (The CLI's desktop
/// notifications are D-Bus calls, through notify-rust's pure-Rust zbus.) Asked of Cargo itself from
/// the lock file, as `cargo build -p nightshiftctl` would resolve it.
#[test]
fn the_engine_crates_depend_on_no_gui_library() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for krate in ["nightshift-model", "nightshift-store", "nightshift-core", "nightshiftctl"] {
        let out = std::process::Command::new(&cargo)
            .args(["tree", "--offline", "--locked", "-e", "normal,build", "--prefix", "none", "--format", "{p}", "-p", krate])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "cargo tree -p {krate}: {}", String::from_utf8_lossy(&out.stderr));
        let tree = String::from_utf8_lossy(&out.stdout);
        assert!(tree.lines().count() > 20, "cargo tree -p {krate} listed too little to be its tree:\n{tree}");
        let gui: Vec<&str> = tree.lines().filter(|l| ["tauri", "gtk", "gdk", "webkit", "javascriptcore", "wry", "tao ", "libappindicator", "tray-icon"].iter().any(|g| l.starts_with(g))).collect();
        assert!(gui.is_empty(), "{krate} depends on GUI libraries: {gui:?}");
    }
}
