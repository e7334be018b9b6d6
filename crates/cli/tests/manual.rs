//! The README and the manual (`docs/`, an mdBook): every relative link and anchor resolves, every
//! page is in the book, the book builds with the real `mdbook`, and the README's tour runs as
//! written against the real `nightshiftctl` and keychain.
mod common;

use common::{ctl, ctl_bus, home_with_accounts, json, keychain_available, stderr, stdout};
use pulldown_cmark::{Event, HeadingLevel, LinkType, Parser, Tag, TagEnd};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    nightshift_testkit::home::workspace_root()
}

/// The README and every page of the manual.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs")).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "md")).collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// A heading's id as mdBook makes it (its `id_from_content`, and `-1`, `-2` … for repeats), which
/// is also how GitHub links a README's headings for every heading written here.
fn anchor_of(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

struct Document {
    anchors: HashSet<String>,
    /// Every link and image target, with the line it is on.
    links: Vec<(usize, String)>,
    /// The lines of each fenced code block, by the `##` section it is in.
    code: BTreeMap<String, Vec<String>>,
}

fn read(path: &Path) -> Document {
    let text = std::fs::read_to_string(path).unwrap();
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let (mut anchors, mut links, mut code) = (HashSet::new(), Vec::new(), BTreeMap::<String, Vec<String>>::new());
    let (mut heading, mut in_code, mut section) = (None::<(HeadingLevel, String)>, false, String::new());
    for (event, range) in Parser::new(&text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
            Event::Text(t) | Event::Code(t) if heading.is_some() => heading.as_mut().unwrap().1.push_str(&t),
            Event::End(TagEnd::Heading(_)) => {
                let (level, text) = heading.take().unwrap();
                let id = anchor_of(&text);
                let unique = (0..).map(|n| if n == 0 { id.clone() } else { format!("{id}-{n}") }).find(|c| !anchors.contains(c)).unwrap();
                anchors.insert(unique);
                if level == HeadingLevel::H2 {
                    section = text;
                }
            }
            Event::Start(Tag::Link { link_type: LinkType::Email, .. }) => {}
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => links.push((line_of(range.start), dest_url.to_string())),
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(t) if in_code => code.entry(section.clone()).or_default().extend(t.lines().map(str::to_string)),
            _ => {}
        }
    }
    Document { anchors, links, code }
}

#[test]
fn every_relative_link_and_anchor_in_the_readme_and_the_manual_resolves() {
    let docs: BTreeMap<PathBuf, Document> = documents().into_iter().map(|p| (p.canonicalize().unwrap(), read(&p))).collect();
    let mut dead = Vec::new();
    let mut checked = 0;
    for (path, doc) in &docs {
        let name = path.strip_prefix(root().canonicalize().unwrap()).unwrap().display().to_string();
        for (line, target) in &doc.links {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let target_path = if file.is_empty() { path.clone() } else { path.parent().unwrap().join(file) };
            let Ok(resolved) = target_path.canonicalize() else {
                dead.push(format!("{name}:{line}: {target} — no such file"));
                continue;
            };
            if anchor.is_empty() {
                continue;
            }
            match docs.get(&resolved) {
                Some(linked) if linked.anchors.contains(anchor) => {}
                Some(_) => dead.push(format!("{name}:{line}: {target} — no heading makes #{anchor}")),
                None => dead.push(format!("{name}:{line}: {target} — an anchor into a file that is not a page")),
            }
        }
    }
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
    assert!(checked > 60, "only {checked} relative links were found — is the parser reading the pages?");
}

#[test]
fn the_check_finds_a_dead_link_and_a_dead_anchor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "# A page\n\n## Two words\n\n[ok](#two-words) [gone](#three-words) [missing](b.md)\n").unwrap();
    let doc = read(&dir.path().join("a.md"));
    assert_eq!(doc.anchors, HashSet::from(["a-page".to_string(), "two-words".to_string()]));
    assert_eq!(doc.links, vec![(5, "#two-words".to_string()), (5, "#three-words".to_string()), (5, "b.md".to_string())]);
    assert_eq!(anchor_of("Runs on another machine (`host:`)"), "runs-on-another-machine-host");
    assert_eq!(anchor_of("Why didn't it run?"), "why-didnt-it-run");
}

#[test]
fn every_page_of_the_manual_is_in_its_summary_and_every_entry_is_a_page() {
    let summary = read(&root().join("docs/SUMMARY.md"));
    let listed: BTreeSet<String> = summary.links.iter().map(|(_, l)| l.clone()).collect();
    let pages: BTreeSet<String> =
        documents().iter().filter(|p| p.starts_with(root().join("docs"))).map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).filter(|n| n != "SUMMARY.md").collect();
    assert_eq!(listed, pages, "docs/SUMMARY.md and the pages in docs/ differ");
}

#[test]
fn the_readme_is_a_front_door_with_the_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.lines().count() <= 250, "the README has {} lines; the manual in docs/ is where more goes", readme.lines().count());
    let two = read(&root().join("README.md")).code.remove("Two commands").expect("a Two commands section with its code block");
    let commands: Vec<&str> = two.iter().map(|l| l.split('#').next().unwrap().trim()).collect();
    assert_eq!(commands, ["scripts/start.sh", "scripts/test.sh"]);
}

/// `mdbook` builds the book: SUMMARY.md parses, every listed page exists (`create-missing = false`).
#[test]
fn the_manual_builds_as_a_book() {
    if std::process::Command::new("mdbook").arg("--version").output().is_err() {
        if std::env::var("NIGHTSHIFT_SKIP_MDBOOK").as_deref() == Ok("1") {
            eprintln!("skipping: mdbook is not installed and NIGHTSHIFT_SKIP_MDBOOK=1");
            return;
        }
        panic!("mdbook is not installed: `cargo install mdbook --locked --no-default-features` (scripts/test.sh does), or set NIGHTSHIFT_SKIP_MDBOOK=1");
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("mdbook").arg("build").arg(root().join("docs")).arg("--dest-dir").arg(out_dir.path()).output().unwrap();
    assert!(out.status.success(), "mdbook build failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for page in ["index.html", "guarantees.html", "guardrails.html", "cli.html", "images/window.png"] {
        assert!(out_dir.path().join(page).is_file(), "the book has no {page}");
    }
    let guarantees = std::fs::read_to_string(out_dir.path().join("guarantees.html")).unwrap();
    assert!(guarantees.contains("href=\"scheduling.html\""), "links between pages point at the built pages");
}

/// The README's five-minute tour, each command as written, in a fresh home: the first launch's
/// example routine runs, an account gets a token in the real keychain, the first agent routine is
/// written and listed, and `why` answers for it.
#[test]
fn the_readmes_tour_runs_as_written() {
    if !keychain_available() {
        return;
    }
    let readme = read(&root().join("README.md"));
    let tour: Vec<String> = readme.code.get("A five-minute tour").expect("the README has a five-minute tour").iter().filter(|l| l.starts_with("nightshiftctl ")).cloned().collect();
    assert!(tour.len() >= 6, "{tour:?}");
    let (th, _service) = home_with_accounts(&[]);
    // A first launch: the test home comes with an empty routines folder, which would say "not the first".
    std::fs::remove_dir(th.path().join("routines")).unwrap();
    let init = ctl(&th).arg("init").output().unwrap();
    assert!(init.status.success(), "{}", stderr(&init));
    std::fs::create_dir_all(th.user_home().join("code/app")).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_nightshiftctl")).parent().unwrap().to_path_buf();
    let token = "sk-ant-oat01-the-tour-token";
    for line in &tour {
        use std::io::Write;
        let envs: Vec<_> = ctl_bus(&th).get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
        let path = format!("{}:{}", bin_dir.display(), common::path_with(&th));
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(line)
            .env_clear()
            .envs(envs)
            .env("PATH", path)
            .current_dir(th.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "`{line}` failed:\n{}{}", stdout(&out), stderr(&out));
    }
    let listed = |ctl: std::process::Command, key: &str, value: &str| -> serde_json::Value {
        let mut ctl = ctl;
        let list = json(&ctl.output().unwrap());
        list.as_array().unwrap().iter().find(|x| x[key] == value).cloned().unwrap_or_else(|| panic!("no {key} {value} in {list:#}"))
    };
    let mut runs = ctl(&th);
    runs.args(["runs", "--json"]);
    assert_eq!(listed(runs, "routine", "hello")["status"], "completed");
    let mut accounts = ctl_bus(&th);
    accounts.args(["accounts", "list", "--json"]);
    assert_eq!(listed(accounts, "account", "you@example.com")["source"], "keychain");
    let mut routines = ctl(&th);
    routines.args(["routines", "list", "--json"]);
    assert_eq!(listed(routines, "name", "nightly-review")["kind"], "claude");
    let why = ctl(&th).args(["why", "nightly-review"]).output().unwrap();
    assert!(why.status.success() && stdout(&why).starts_with("nightly-review — At 02:00 on weekdays"), "{}{}", stdout(&why), stderr(&why));
    assert!(common::files_containing(th.path(), token).is_empty(), "the token rests nowhere under the home");
}

/// Cargo's metadata of every crate is true: what it is, words to find it by, no invented address,
/// and none published; a source package of the CLI holds its code and nothing of this repository's.
#[test]
fn every_crate_says_what_it_is_and_the_cli_package_holds_only_its_code() {
    let cargo = env!("CARGO");
    let out = std::process::Command::new(cargo).args(["metadata", "--format-version", "1", "--no-deps", "--offline"]).current_dir(root()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    // The app, the engine's three crates (model, store, core), the CLI, the desktop glue, the testkit.
    assert_eq!(packages.len(), 7);
    for p in packages {
        let name = p["name"].as_str().unwrap();
        assert!(p["description"].as_str().is_some_and(|d| d.len() > 20), "{name} has no description");
        assert!(!p["keywords"].as_array().unwrap().is_empty() && !p["categories"].as_array().unwrap().is_empty(), "{name} has no keywords or categories");
        assert_eq!(p["publish"], serde_json::json!([]), "{name} is not published");
        assert!(p["repository"].is_null() && p["homepage"].is_null(), "{name}: no address is set until a real one exists");
    }
    let out = std::process::Command::new(cargo).args(["package", "--list", "--allow-dirty", "--offline", "-p", "nightshiftctl"]).current_dir(root()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let extra: Vec<&String> = files.iter().filter(|f| !f.starts_with("src/") && !["Cargo.toml", "Cargo.toml.orig", "Cargo.lock", ".cargo_vcs_info.json"].contains(&f.as_str())).collect();
    assert!(extra.is_empty(), "the CLI's package would ship {extra:?}");
    assert!(files.iter().any(|f| f == "src/main.rs"), "{files:?}");
}
