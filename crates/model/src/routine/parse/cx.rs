//! Reading a routine's fields: each typed read (a string, a duration, a time, a list…) reports what
//! is wrong at the node's position, and every problem is collected — at most [`MAX_PROBLEMS`] per
//! file, the rest counted. An unknown key gets its nearest known one.

use super::super::yaml::{Node, Pos};
use super::super::Diagnostic;
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use crate::words::MAX_DURATION;
use std::collections::BTreeMap;

pub(super) struct Cx<'a> {
    pub(super) display: &'a str,
    pub(super) errors: Vec<Diagnostic>,
    pub(super) warnings: Vec<Diagnostic>,
    /// Problems past [`MAX_PROBLEMS`], counted but not kept.
    pub(super) more: usize,
}

/// At most this many problems are listed per file; the rest are counted ("… and 1203 more").
pub const MAX_PROBLEMS: usize = 50;
/// Keys longer than this are shown cut, with no "did you mean" (no key is longer than 20).
const MAX_KEY_SHOWN: usize = 64;

impl Cx<'_> {
    pub(super) fn err(&mut self, pos: Pos, message: impl Into<String>) {
        if self.errors.len() >= MAX_PROBLEMS {
            self.more += 1;
            return;
        }
        self.errors.push(Diagnostic::error(self.display, pos.line, pos.col, message));
    }

    /// Something the routine runs without, or takes another way than written: said, not blocking.
    pub(super) fn warn(&mut self, pos: Pos, message: impl Into<String>) {
        if self.warnings.len() < MAX_PROBLEMS {
            self.warnings.push(Diagnostic { severity: super::super::Severity::Warning, ..Diagnostic::error(self.display, pos.line, pos.col, message) });
        }
    }

    /// Like `err`, building the message only when it will be listed (a suggestion costs time).
    pub(super) fn err_with(&mut self, pos: Pos, message: impl FnOnce() -> String) {
        if self.errors.len() >= MAX_PROBLEMS {
            self.more += 1;
        } else {
            self.err(pos, message());
        }
    }

    /// The errors, in file order, with the count of those not listed; and the warnings.
    pub(super) fn into_errors(mut self) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
        self.errors.sort_by_key(|d| (d.line, d.col));
        self.warnings.sort_by_key(|d| (d.line, d.col));
        if self.more > 0 {
            let last = self.errors.last().map(|d| (d.line, d.col)).unwrap_or((1, 1));
            let message = format!("… and {} more problems", self.more);
            self.errors.push(Diagnostic::error(self.display, last.0, last.1, message));
        }
        (self.errors, self.warnings)
    }

    pub(super) fn string(&mut self, node: &Node, key: &str) -> Option<String> {
        match node {
            Node::Scalar { value, .. } => Some(value.clone()),
            other => {
                self.err(other.pos(), format!("`{key}` must be a text value, found {}", other.kind()));
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, node: &Node, key: &str) -> Option<bool> {
        match node {
            Node::Scalar { value, quoted: false, .. } if value.eq_ignore_ascii_case("true") => Some(true),
            Node::Scalar { value, quoted: false, .. } if value.eq_ignore_ascii_case("false") => Some(false),
            other => {
                self.err(other.pos(), format!("`{key}` must be true or false"));
                None
            }
        }
    }

    pub(super) fn duration(&mut self, node: &Node, key: &str) -> Option<std::time::Duration> {
        let text = self.string(node, key)?;
        if text.trim().chars().all(|c| c.is_ascii_digit()) {
            self.err(node.pos(), format!("`{key}: {text}` has no unit; write e.g. {text}s or {text}m"));
            return None;
        }
        match humantime::parse_duration(text.trim()) {
            Ok(d) if d.is_zero() => {
                self.err(node.pos(), format!("`{key}` must be longer than zero"));
                None
            }
            // A week is plenty for an unattended run, and keeps every deadline computable.
            Ok(d) if d > MAX_DURATION => {
                self.err(node.pos(), format!("`{key}: {text}` is longer than the longest allowed, 7 days"));
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                self.err(node.pos(), format!("invalid duration \"{text}\" for `{key}`: {e} (examples: 90s, 10m, 1h30m)"));
                None
            }
        }
    }

    pub(super) fn timestamp(&mut self, node: &Node, key: &str, tz: Tz) -> Option<DateTime<Utc>> {
        let text = self.string(node, key)?;
        if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
            return Some(t.with_timezone(&Utc));
        }
        for fmt in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
            if let Ok(naive) = NaiveDateTime::parse_from_str(text.trim(), fmt) {
                return match tz.from_local_datetime(&naive).earliest() {
                    Some(t) => Some(t.with_timezone(&Utc)),
                    None => {
                        self.err(node.pos(), format!("`{key}: {text}` does not exist in {} (a daylight-saving gap)", tz.name()));
                        None
                    }
                };
            }
        }
        self.err(node.pos(), format!("invalid time \"{text}\" for `{key}` (expected e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01 09:00)"));
        None
    }

    pub(super) fn string_map(&mut self, node: &Node, key: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        match node {
            Node::Map { entries, .. } => {
                for (k, v) in entries {
                    match (k, v) {
                        (Node::Scalar { value: k, .. }, Node::Scalar { value: v, .. }) => {
                            out.insert(k.clone(), v.clone());
                        }
                        (_, v) => self.err(v.pos(), format!("values in `{key}` must be text, found {}", v.kind())),
                    }
                }
            }
            other => self.err(other.pos(), format!("`{key}` must be a mapping (KEY: value), found {}", other.kind())),
        }
        out
    }

    /// The entries of mapping `key` (`node`) whose keys are among `allowed` — each with its key and
    /// where the key is written; any other key is an error naming the allowed ones, and a value
    /// that is no mapping an error showing `example`.
    pub(super) fn sub_keys<'n>(&mut self, node: &'n Node, key: &str, allowed: &[&'static str], example: &str) -> Vec<(&'static str, &'n Node, Pos)> {
        let Node::Map { entries, .. } = node else {
            self.err(node.pos(), format!("`{key}` must be a mapping ({example}), found {}", node.kind()));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, v) in entries {
            match k {
                Node::Scalar { value, .. } => match allowed.iter().find(|a| **a == value.as_str()) {
                    Some(known) => out.push((*known, v, k.pos())),
                    None => {
                        let names: Vec<String> = allowed.iter().map(|a| format!("`{key}.{a}`")).collect();
                        let expected = match names.split_last() {
                            Some((last, [])) => last.clone(),
                            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                            None => String::new(),
                        };
                        self.err(k.pos(), format!("unknown key `{key}.{value}` (expected {expected})"));
                    }
                },
                other => self.err(other.pos(), "keys must be plain words"),
            }
        }
        out
    }

    /// [`Cx::string_list`] with where each item is written, for an error about one of them.
    pub(super) fn string_items(&mut self, node: &Node, key: &str) -> Vec<(String, Pos)> {
        match node {
            Node::Seq { items, .. } => items.iter().filter_map(|i| Some((self.string(i, key)?, i.pos()))).collect(),
            Node::Scalar { value, pos, .. } => vec![(value.clone(), *pos)],
            other => {
                self.err(other.pos(), format!("`{key}` must be a list, found {}", other.kind()));
                Vec::new()
            }
        }
    }

    pub(super) fn string_list(&mut self, node: &Node, key: &str) -> Vec<String> {
        match node {
            Node::Seq { items, .. } => items.iter().filter_map(|i| self.string(i, key)).collect(),
            Node::Scalar { value, .. } => vec![value.clone()],
            other => {
                self.err(other.pos(), format!("`{key}` must be a list, found {}", other.kind()));
                Vec::new()
            }
        }
    }
}

pub(super) fn unknown_key(key: &str, known: &[&str], prefix: &str) -> String {
    if key.chars().count() > MAX_KEY_SHOWN {
        let cut: String = key.chars().take(MAX_KEY_SHOWN).collect();
        return format!("unknown key `{prefix}{cut}…` ({} characters long)", key.chars().count());
    }
    match nearest(key, known) {
        Some(near) => format!("unknown key `{prefix}{key}`; did you mean `{prefix}{near}`?"),
        None => format!("unknown key `{prefix}{key}` (known keys: {})", known.join(", ")),
    }
}

/// The known word closest to `word`, if it is close enough to be a likely typo.
pub fn nearest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (levenshtein(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

