//! Writing routine files for the user: a form's fields turned into YAML, a file's text checked as
//! it is typed, a routine renamed inside its own text. The routine file stays the source of truth —
//! everything here produces or checks *text*, and every check is the loader's own
//! ([`parse_routine`]) run over that text, so the window, the CLI and the scheduler can never
//! disagree about what is valid.

use super::yaml::{self, Node};
use super::{check_name, parse_routine, Diagnostic, RoutineSet};
use crate::accounts::Account;
use crate::home::Home;
use crate::schedule::{local_tz, parse_tz, Schedule};
use crate::settings::Settings;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A routine as a form fills it in: the routine file's own fields, as text. Empty means absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Draft {
    pub name: String,
    pub description: String,
    /// `claude`, `codex` or `gemini`; empty for a shell command.
    pub agent: String,
    pub prompt: String,
    pub command: String,
    /// Another machine it runs on over SSH (a host or alias from the ssh config, or user@host);
    /// empty for this machine.
    pub host: String,
    /// One account pinned (an email of the agent's accounts); empty for any.
    pub account: String,
    pub mode: String,
    pub model: String,
    pub cwd: String,
    /// With `host`: the folder it works in there (`cwd` is this machine's).
    pub remote_cwd: String,
    /// `hostStrategy:` — `local`, `host` or `fleet` (any machine nightshift.toml lists); empty
    /// for none (a `host` places it there).
    pub placement: String,
    /// `worktree` for a git worktree of its own per run; empty for `cwd` itself.
    pub workspace: String,
    /// With `worktree`: the branch it starts from, the remote its branch is pushed to.
    pub base: String,
    pub push: String,
    /// A cron expression; or use `at` for a one-shot.
    pub schedule: String,
    /// A one-shot time (`2026-12-24 09:00` in the routine's zone, or RFC 3339).
    pub at: String,
    pub timezone: String,
    pub end_at: String,
    pub timeout: String,
    pub notify: String,
    /// `None`: the default (on).
    pub catchup: Option<bool>,
    /// `None`: the default (enabled).
    pub enabled: Option<bool>,
    pub devices: Vec<String>,
    pub webhooks: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// `effort:` (low, medium, high, xhigh, max, auto); empty for the agent's default.
    pub effort: String,
    /// `allow.tools`: the only tools the agent has (names, or Claude's rules such as
    /// `Bash(git status)`); empty: the agent's own set.
    pub allow_tools: Vec<String>,
    /// `allow.dirs`: folders it may work in besides its working directory.
    pub allow_dirs: Vec<String>,
    /// `deny.tools`: tools that never run.
    pub deny_tools: Vec<String>,
    /// `on_denial:` — `fail`, or empty (refusals recorded).
    pub on_denial: String,
    /// `budget:` — US dollars as typed (`2.50`); empty for none.
    pub budget_run: String,
    pub budget_day: String,
    pub budget_month: String,
    /// `secrets:` — names of stored secrets.
    pub secrets: Vec<String>,
    /// `trigger:` — its keys as the file spells them (`type`, `event`, `repo`, `branch`,
    /// `action`, `label`, `teamKey`, `stateTo`, `stateFrom`); empty for none.
    pub trigger: BTreeMap<String, String>,
    /// `created_by:` — `mcp` for a routine an agent creates; empty for a person's.
    pub created_by: String,
    /// `parent_run:` — the run whose agent created it; empty for none.
    pub parent_run: String,
}

/// The keys of a `trigger:` block, in the order they are written.
const TRIGGER_KEYS: [&str; 9] = ["type", "event", "repo", "branch", "action", "label", "teamKey", "stateTo", "stateFrom"];

/// The draft's fields in the order they are written.
pub const DRAFT_FIELDS: &[&str] = &[
    "name", "description", "agent", "account", "prompt", "mode", "model", "command", "host", "hostStrategy", "cwd", "remote_cwd", "workspace", "base", "push", "schedule", "at", "timezone", "end_at",
    "timeout", "notify", "catchup", "enabled", "devices", "webhooks", "env", "effort", "allow_tools", "allow_dirs", "deny_tools", "on_denial", "budget", "secrets", "trigger", "created_by", "parent_run",
];

/// YAML text and which lines each field took (first and last line, from 1).
struct Rendered {
    text: String,
    lines: Vec<(&'static str, usize, usize)>,
}

impl Draft {
    /// The routine file this draft makes.
    pub fn to_yaml(&self) -> String {
        self.render().text
    }

    fn render(&self) -> Rendered {
        let mut out = Rendered { text: String::new(), lines: Vec::new() };
        let mut put = |field: &'static str, body: String| {
            let first = out.text.lines().count() + 1;
            out.text.push_str(&body);
            out.lines.push((field, first, out.text.lines().count()));
        };
        let scalars: [(&'static str, &str); 21] = [
            ("name", &self.name),
            ("description", &self.description),
            ("agent", &self.agent),
            ("account", &self.account),
            ("prompt", &self.prompt),
            ("mode", &self.mode),
            ("model", &self.model),
            ("command", &self.command),
            ("host", &self.host),
            ("hostStrategy", &self.placement),
            ("cwd", &self.cwd),
            ("remote_cwd", &self.remote_cwd),
            ("workspace", &self.workspace),
            ("base", &self.base),
            ("push", &self.push),
            ("schedule", &self.schedule),
            ("at", &self.at),
            ("timezone", &self.timezone),
            ("end_at", &self.end_at),
            ("timeout", &self.timeout),
            ("notify", &self.notify),
        ];
        for (field, value) in scalars {
            // A prompt or command is kept exactly (trailing newline included); the rest trimmed.
            let value = if matches!(field, "prompt" | "command") { value.to_string() } else { value.trim().to_string() };
            if !value.trim().is_empty() {
                put(field, format!("{field}: {}\n", scalar(&value)));
            }
        }
        for (field, value) in [("catchup", self.catchup), ("enabled", self.enabled)] {
            if let Some(v) = value {
                put(field, format!("{field}: {v}\n"));
            }
        }
        for (field, list) in [("devices", &self.devices), ("webhooks", &self.webhooks)] {
            let items: Vec<&str> = list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect();
            if !items.is_empty() {
                put(field, format!("{field}: [{}]\n", items.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(", ")));
            }
        }
        if !self.env.is_empty() {
            let mut body = "env:\n".to_string();
            for (k, v) in &self.env {
                body.push_str(&format!("  {}: {}\n", quoted(k), quoted(v)));
            }
            put("env", body);
        }
        for (field, value) in [("effort", &self.effort), ("on_denial", &self.on_denial)] {
            if !value.trim().is_empty() {
                put(field, format!("{field}: {}\n", scalar(value.trim())));
            }
        }
        // `allow:` is one mapping; its lines belong to the field they come from.
        let list = |items: &[String]| items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).map(quoted).collect::<Vec<_>>();
        let mut allow_open = false;
        for (field, key, items) in [("allow_tools", "tools", list(&self.allow_tools)), ("allow_dirs", "dirs", list(&self.allow_dirs))] {
            if !items.is_empty() {
                let head = if allow_open { "" } else { "allow:\n" };
                allow_open = true;
                put(field, format!("{head}  {key}: [{}]\n", items.join(", ")));
            }
        }
        let denied = list(&self.deny_tools);
        if !denied.is_empty() {
            put("deny_tools", format!("deny:\n  tools: [{}]\n", denied.join(", ")));
        }
        let caps: Vec<String> = [("run", &self.budget_run), ("day", &self.budget_day), ("month", &self.budget_month)]
            .into_iter()
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(k, v)| format!("  {k}: {}\n", scalar(v.trim())))
            .collect();
        if !caps.is_empty() {
            put("budget", format!("budget:\n{}", caps.concat()));
        }
        let secrets = list(&self.secrets);
        if !secrets.is_empty() {
            put("secrets", format!("secrets: [{}]\n", secrets.join(", ")));
        }
        let trigger: String = TRIGGER_KEYS
            .iter()
            .filter_map(|k| self.trigger.get(*k).map(|v| v.trim()).filter(|v| !v.is_empty()).map(|v| format!("  {k}: {}\n", scalar(v))))
            .collect();
        if !trigger.is_empty() {
            put("trigger", format!("trigger:\n{trigger}"));
        }
        for (field, value) in [("created_by", &self.created_by), ("parent_run", &self.parent_run)] {
            if !value.trim().is_empty() {
                put(field, format!("{field}: {}\n", scalar(value.trim())));
            }
        }
        out
    }
}

/// A YAML scalar for `value`: plain when it reads back as the same text, a literal block for
/// multi-line text (how a person would write a long prompt), else double-quoted.
fn scalar(value: &str) -> String {
    let plain_ok = !value.is_empty()
        && value == value.trim()
        && !value.contains(['\n', '#', '"', '\'', '\\', '\t'])
        && !value.contains(": ")
        && !value.starts_with(['-', '?', ':', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '%', '@', '`'])
        && !matches!(value.to_ascii_lowercase().as_str(), "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~");
    if plain_ok && reads_back(&format!("k: {value}\n"), value) {
        return value.to_string();
    }
    if value.contains('\n') && !value.contains('\r') && !value.contains('\t') {
        let chomp = if !value.ends_with('\n') {
            "-"
        } else if value.ends_with("\n\n") {
            "+"
        } else {
            ""
        };
        let indicator = if value.starts_with(' ') || value.starts_with('\n') { "2" } else { "" };
        let body: String = value.trim_end_matches('\n').lines().map(|l| if l.is_empty() { "\n".to_string() } else { format!("  {l}\n") }).collect();
        let trailing = if chomp == "+" { "\n".repeat(value.len() - value.trim_end_matches('\n').len() - 1) } else { String::new() };
        let block = format!("|{indicator}{chomp}\n{body}{trailing}");
        if reads_back(&format!("k: {block}"), value) {
            // `put` ends the line itself.
            return block.strip_suffix('\n').unwrap_or(&block).to_string();
        }
    }
    quoted(value)
}

/// A double-quoted YAML scalar (JSON's escapes are YAML's).
fn quoted(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "\"\"".into())
}

/// Does `text` (a one-key mapping `k: …`) read back as exactly `value`?
fn reads_back(text: &str, value: &str) -> bool {
    match yaml::parse(text) {
        Ok(Some(Node::Map { entries, .. })) => matches!(entries.first(), Some((_, Node::Scalar { value: v, .. })) if v == value),
        _ => false,
    }
}

/// One problem with a draft, on the field it belongs to (`None`: the routine as a whole).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct FieldProblem {
    pub field: Option<String>,
    pub message: String,
}

/// When a routine would fire: its schedule in words and the next fire times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Preview {
    pub words: String,
    pub timezone: String,
    pub fires: Vec<Fire>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Fire {
    /// RFC 3339, UTC.
    pub at: String,
    /// The wall-clock time in the routine's zone ("Mon 2026-12-07 09:00 CET").
    pub in_zone: String,
    /// The same instant on this machine's clock.
    pub local: String,
}

/// A draft checked: the file it would write, every problem on its field, when it would fire.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct DraftCheck {
    pub yaml: String,
    /// The file it would be written to (relative to the home).
    pub file: String,
    pub problems: Vec<FieldProblem>,
    pub preview: Option<Preview>,
}

/// How many fire times a preview lists.
pub const PREVIEW_FIRES: usize = 5;

/// What a draft is checked against: the home, its settings and accounts, the routines there are.
pub struct Context<'a> {
    pub home: &'a Home,
    pub settings: &'a Settings,
    pub accounts: &'a [Account],
    pub existing: &'a RoutineSet,
    pub now: DateTime<Utc>,
}

/// The file a new routine named `name` is written to.
pub fn new_file(home: &Home, name: &str) -> PathBuf {
    home.routines_dir().join(format!("{name}.yaml"))
}

/// Check a draft as the loader would check the file it makes, plus what only a new routine needs
/// (a free name, an existing folder, an account the agent has).
pub fn check_draft(cx: &Context<'_>, draft: &Draft) -> DraftCheck {
    let placed_here = placed_from_here(cx.settings, draft);
    let draft = placed_here.as_ref().unwrap_or(draft);
    // A draft without a name yet is checked as if it had one: the loader would otherwise name it
    // after a file called ".yaml" — the one problem is that the name is missing.
    let unnamed = draft.name.trim().is_empty();
    let rendered = if unnamed { Draft { name: "new-routine".into(), ..draft.clone() }.render() } else { draft.render() };
    let file = new_file(cx.home, if unnamed { "new-routine" } else { draft.name.trim() });
    let display = cx.home.display_path(&file);
    let mut problems: Vec<FieldProblem> = Vec::new();
    let mut on = |field: &str, message: String| problems.push(FieldProblem { field: Some(field.to_string()), message });

    let name = draft.name.trim();
    if unnamed {
        on("name", "give the routine a name (letters, digits, '-', '_' and '.'; it names its file)".to_string());
    } else if check_name(name).is_ok() {
        if let Some(taken) = cx.existing.file_of(name) {
            on("name", format!("a routine named \"{name}\" already exists ({})", cx.home.display_path(taken)));
        } else if file.exists() {
            on("name", format!("{display} already exists"));
        }
    }
    if !draft.cwd.trim().is_empty() {
        let dir = crate::fsutil::expand_tilde(draft.cwd.trim());
        if !dir.is_dir() {
            on("cwd", format!("no such folder: {}", dir.display()));
        }
    }
    if !draft.account.trim().is_empty() && !draft.agent.trim().is_empty() {
        let of_agent: Vec<&str> = cx.accounts.iter().filter(|a| a.agent.as_str() == draft.agent.trim()).map(|a| a.email.as_str()).collect();
        if !of_agent.contains(&draft.account.trim()) {
            let known = if of_agent.is_empty() { "none is configured; add one under Accounts".to_string() } else { format!("configured: {}", of_agent.join(", ")) };
            on("account", format!("no {} account \"{}\" ({known})", draft.agent.trim(), draft.account.trim()));
        }
    }

    if let Some(problem) = oversized(&rendered.text) {
        problems.push(FieldProblem { field: None, message: problem });
        return DraftCheck { yaml: String::new(), file: display, problems, preview: None };
    }
    let parsed = parse_routine(&rendered.text, &file, &display);
    let diagnostics = match &parsed {
        Ok(r) => super::load::unknown_webhooks(r, &rendered.text, cx.settings, &display),
        Err(bad) => bad.errors.clone(),
    };
    for d in diagnostics {
        // A problem of the routine as a whole is reported at 1:1; it goes to the field it names.
        let named = (d.line, d.col) == (1, 1);
        let on_line = || rendered.lines.iter().find(|(_, first, last)| (*first..=*last).contains(&d.line)).map(|(f, _, _)| f.to_string());
        // "an agent routine needs a `prompt`" is said at `agent:`, but the form shows it on the
        // field to fill in.
        let wanted = missing_field_in(&d.message);
        let field = if named { field_named_in(&d.message).or_else(on_line) } else { wanted.or_else(on_line).or_else(|| field_named_in(&d.message)) };
        problems.push(FieldProblem { field, message: d.message });
    }

    let tz = if draft.timezone.trim().is_empty() { Ok(local_tz()) } else { parse_tz(draft.timezone.trim()) };
    let preview = tz.ok().and_then(|tz| match &parsed {
        // A routine that runs only on events: what it runs on, and no fire times.
        Ok(r) if r.schedule.is_none() && r.at.is_none() && r.trigger.is_some() => {
            Some(Preview { words: r.schedule_words(), timezone: tz.name().to_string(), fires: Vec::new() })
        }
        Ok(r) => Some(preview_of(r.schedule.as_ref(), r.at, r.end_at, tz, cx.now)),
        Err(_) => Schedule::parse(draft.schedule.trim(), tz).ok().map(|s| preview_of(Some(&s), None, None, tz, cx.now)),
    });
    let yaml = if unnamed { draft.render().text } else { rendered.text };
    DraftCheck { yaml, file: display, problems, preview }
}

/// A draft placed on another machine (`host`, or the fleet) that names no `devices:`, with this
/// machine as its one device: the machine it is written on sends its runs, and a routines folder
/// synced to another machine does not fire it there too.
fn placed_from_here(settings: &Settings, draft: &Draft) -> Option<Draft> {
    let placed = !draft.host.trim().is_empty() || draft.placement.trim() == "fleet";
    (placed && draft.devices.iter().all(|d| d.trim().is_empty())).then(|| Draft { devices: vec![settings.device_name()], ..draft.clone() })
}

/// The first draft field a whole-routine message names in backticks ("missing `schedule` …").
fn field_named_in(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    let word = &message[start..start + len];
    DRAFT_FIELDS.contains(&word).then(|| word.to_string())
}

/// The field a message says is missing ("needs a `prompt`", "missing `schedule`").
fn missing_field_in(message: &str) -> Option<String> {
    ["needs a `", "missing `"].iter().find_map(|cue| {
        let start = message.find(cue)? + cue.len();
        let word = &message[start..start + message[start..].find('`')?];
        DRAFT_FIELDS.contains(&word).then(|| word.to_string())
    })
}

/// The schedule in words and the next fires (a one-shot's single time), in `tz` and locally.
pub fn preview_of(schedule: Option<&Schedule>, at: Option<DateTime<Utc>>, end_at: Option<DateTime<Utc>>, tz: Tz, now: DateTime<Utc>) -> Preview {
    let (words, fires) = match (schedule, at) {
        (Some(s), _) => (s.words(), s.upcoming(now, PREVIEW_FIRES)),
        (None, Some(at)) => (format!("Once, at {}", at.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z")), if at > now { vec![at] } else { Vec::new() }),
        (None, None) => (String::new(), Vec::new()),
    };
    let local = local_tz();
    let fires = fires
        .into_iter()
        .filter(|t| end_at.is_none_or(|end| *t <= end))
        .map(|t| Fire {
            at: crate::words::fmt_time(&t),
            in_zone: t.with_timezone(&tz).format("%a %Y-%m-%d %H:%M %Z").to_string(),
            local: t.with_timezone(&local).format("%a %Y-%m-%d %H:%M %Z").to_string(),
        })
        .collect();
    Preview { words, timezone: tz.name().to_string(), fires }
}

/// Check the text of routine file `file` as it is being edited: the loader's own problems, an
/// unknown webhook, a name another file already gives, and a changed `name:` (`expected`), which
/// must go through rename so the run history follows.
/// Errors and warnings alike (each says its severity); only errors keep a file from being saved.
pub fn check_text(cx: &Context<'_>, file: &Path, text: &str, expected: Option<&str>) -> Vec<Diagnostic> {
    let display = cx.home.display_path(file);
    if let Some(problem) = oversized(text) {
        return vec![Diagnostic::error(display, 1, 1, problem)];
    }
    let routine = match parse_routine(text, file, &display) {
        Ok(r) => r,
        Err(bad) => {
            let device = cx.settings.device_name();
            let mut errors = bad.errors;
            errors.iter_mut().for_each(|d| super::parse::name_this_machine(d, &device));
            return errors.into_iter().chain(bad.warnings).collect();
        }
    };
    let mut problems = super::load::unknown_webhooks(&routine, text, cx.settings, &display);
    problems.extend(routine.warnings.iter().cloned());
    let (line, col) = name_position(text);
    if let Some(expected) = expected.filter(|e| *e != routine.name) {
        problems.push(Diagnostic::error(
            display.clone(),
            line,
            col,
            format!("the name changed from \"{expected}\" to \"{}\"; use Rename instead, so the run history follows the routine", routine.name),
        ));
    } else if let Some(other) = cx.existing.file_of(&routine.name).filter(|f| *f != file) {
        problems.push(Diagnostic::error(display, line, col, format!("duplicate routine name \"{}\" (also in {})", routine.name, cx.home.display_path(other))));
    }
    problems
}

/// The loader reads routine files of at most [`crate::fsutil::MAX_TEXT_FILE`]: larger text is
/// refused in its words before it is parsed or written.
fn oversized(text: &str) -> Option<String> {
    let (len, max) = (text.len() as u64, crate::fsutil::MAX_TEXT_FILE);
    (len > max).then(|| crate::fsutil::too_large(len, max))
}

/// Where the top-level `name:` value is (1:1 when the name comes from the file name).
fn name_position(text: &str) -> (usize, usize) {
    match yaml::parse(text) {
        Ok(Some(Node::Map { entries, .. })) => entries
            .iter()
            .find(|(k, _)| matches!(k, Node::Scalar { value, .. } if value == "name"))
            .map(|(_, v)| (v.pos().line, v.pos().col))
            .unwrap_or((1, 1)),
        _ => (1, 1),
    }
}

/// `text` with its routine named `name`: the top-level `name:` line replaced (its comment kept),
/// or a `name:` line added first. Everything else — comments, order, formatting — is untouched.
pub fn with_name(text: &str, name: &str) -> Result<String, String> {
    check_name(name)?;
    let value = scalar(name);
    let mut out = String::with_capacity(text.len() + name.len() + 8);
    let mut replaced = false;
    for line in text.split_inclusive('\n') {
        if !replaced && line.starts_with("name:") {
            let comment = line.find(" #").map(|i| line[i..].trim_end_matches(['\n', '\r'])).unwrap_or("");
            let ending = if line.ends_with("\r\n") { "\r\n" } else if line.ends_with('\n') { "\n" } else { "" };
            out.push_str(&format!("name: {value}{comment}{ending}"));
            replaced = true;
        } else {
            out.push_str(line);
        }
    }
    if !replaced {
        out = format!("name: {value}\n{text}");
    }
    // The result must read back with the new name (a `name:` inside a block scalar, say, is not
    // the routine's name): checked, not assumed.
    match parse_routine(&out, Path::new("check.yaml"), "check.yaml") {
        Ok(r) if r.name == name => Ok(out),
        Err(bad) if bad.name == name => Ok(out),
        _ => Err(format!("could not set the name to \"{name}\" in the file; edit its `name:` by hand")),
    }
}

/// A short fingerprint of a file's text: a save names the version it edited, and a file that
/// changed since (a sync, another editor) is never overwritten blindly.
pub fn version(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_text_reads_back_exactly() {
        for value in [
            "plain words",
            "true",
            "0 9 * * 1-5",
            "Review the PR: be brief",
            "# not a comment",
            "line one\nline two\n",
            "line one\nline two",
            "  indented first\nsecond\n",
            "\nstarts blank\n",
            "ends with blanks\n\n\n",
            "tab\tinside",
            "quote \" and 'apostrophe' and \\ backslash",
            "- looks like a list",
            "ünïcödé ✓",
            "crlf\r\nline",
            "",
        ] {
            if value.is_empty() {
                continue;
            }
            assert!(reads_back(&format!("k: {}\n", scalar(value)), value), "{value:?} → {}", scalar(value));
        }
    }

    #[test]
    fn a_multi_line_prompt_is_a_literal_block() {
        assert_eq!(scalar("first\nsecond\n"), "|\n  first\n  second");
        assert_eq!(scalar("0 9 * * 1-5"), "0 9 * * 1-5");
        assert_eq!(scalar("yes"), "\"yes\"");
    }

    #[test]
    fn renaming_keeps_comments_and_the_rest() {
        let text = "# my nightly job\nname: old # keep me\nschedule: \"0 9 * * *\" # nine\ncommand: \"echo name: x\"\n";
        let out = with_name(text, "new-name").unwrap();
        assert_eq!(out, "# my nightly job\nname: new-name # keep me\nschedule: \"0 9 * * *\" # nine\ncommand: \"echo name: x\"\n");
        let nameless = "schedule: \"0 9 * * *\"\ncommand: true\n";
        assert_eq!(with_name(nameless, "n").unwrap(), format!("name: n\n{nameless}"));
        assert!(with_name(text, "bad name").is_err());
    }

    #[test]
    fn field_names_in_messages() {
        assert_eq!(field_named_in("missing `schedule` (a cron expression …)").as_deref(), Some("schedule"));
        assert_eq!(field_named_in("nothing here"), None);
        assert_eq!(field_named_in("`retries` unknown"), None);
        assert_eq!(missing_field_in("an agent routine needs a `prompt`: what should the agent do?").as_deref(), Some("prompt"));
        assert_eq!(missing_field_in("`prompt` only applies to agent routines"), None);
    }
}
