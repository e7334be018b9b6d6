//! Keeping secrets out of everything Nightshift writes or shows: logs it writes, reports, run
//! rows, errors, `--json` output, UI payloads, tracing.
//!
//! Two nets: every token Nightshift itself handles is registered and replaced wherever it appears,
//! and anything shaped like a provider key or token is masked even if we never saw it: Anthropic
//! (`sk-ant-…`), OpenAI (`sk-…`, `sk-proj-…`, 20+ characters), Google (`AIza…`, 30+ characters).

use std::sync::{Arc, RwLock};

pub const MASK: &str = "[redacted]";

#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<RwLock<Vec<String>>>,
    /// The log scrubber's automaton for the current secrets, built on first use after a change
    /// (building it costs more than scrubbing a short run's logs).
    finder: Arc<RwLock<Option<Arc<Finder>>>>,
}

/// The log scrubber's searches: the key shapes as one multi-pattern automaton (their rare
/// prefixes let it skip through text fast), and each registered secret on its own (a long
/// literal in the same automaton would take that speed away: measured 5× slower).
struct Finder {
    shapes: aho_corasick::AhoCorasick,
    secrets: Vec<memchr::memmem::Finder<'static>>,
    /// The longest pattern and the byte before it: how much scrub windows overlap.
    overlap: u64,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.read().map(|s| s.len()).unwrap_or(0))
    }
}

impl Redactor {
    /// Remember a secret to mask (short strings are ignored: masking them would mangle text).
    pub fn register(&self, secret: &str) {
        if secret.len() >= 8 {
            let mut s = self.secrets.write().unwrap_or_else(|e| e.into_inner());
            if !s.iter().any(|x| x == secret) {
                s.push(secret.to_string());
            }
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.secrets.read().unwrap_or_else(|e| e.into_inner()).iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        mask_key_shapes(&out)
    }

    /// Mask, in place, every secret in the file from byte `from` on, and return where the scan
    /// ended (the file's length then). Used on a run's logs — the agent writes them directly, so a
    /// command that echoes its token would keep it there — incrementally while an engine follows
    /// the run, and for the rest at settle. The file is read a chunk at a time (memory stays flat
    /// whatever its size) and never rewritten: each secret's bytes are overwritten with `*`, the
    /// same length, so offsets of readers following the log stay valid.
    ///
    /// `finished`: the writer is done. While it is not, a key shape that runs into the end of the
    /// file may still be growing: it is left for the next scrub, which resumes at its start.
    pub fn scrub_file(&self, path: &std::path::Path, from: u64, finished: bool) -> std::io::Result<u64> {
        self.scrub_file_in_chunks(path, from, finished, SCRUB_CHUNK)
    }

    fn finder(&self) -> Option<Arc<Finder>> {
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        // Secrets are only ever added: a finder built for as many is built for these.
        if let Some(f) = self.finder.read().unwrap_or_else(|e| e.into_inner()).as_ref().filter(|f| f.secrets.len() == secrets.len()) {
            return Some(Arc::clone(f));
        }
        let shapes = aho_corasick::AhoCorasick::new(SHAPES.iter().map(|(p, _)| p)).ok()?;
        let longest = secrets.iter().map(String::len).chain(SHAPES.iter().map(|(p, _)| p.len())).max().unwrap_or(0);
        let finder = Arc::new(Finder {
            shapes,
            secrets: secrets.iter().map(|s| memchr::memmem::Finder::new(s.as_bytes()).into_owned()).collect(),
            overlap: longest as u64 + 1,
        });
        *self.finder.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&finder));
        Some(finder)
    }

    fn scrub_file_in_chunks(&self, path: &std::path::Path, from: u64, finished: bool, chunk: usize) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let file = match std::fs::OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(from),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        // A log shorter than what was scrubbed of it was replaced: all of it is new.
        let from = if from > len { 0 } else { from };
        // Nothing new since the last scrub (an idle live run, a short run's empty stderr).
        if from == len {
            return Ok(len);
        }
        let Some(finder) = self.finder() else { return Ok(len) };
        // Windows overlap by the longest pattern (and the byte before it), so a secret that
        // straddles two windows is whole in the second; a key shape longer than that is followed
        // past the window's end.
        let overlap = finder.overlap;
        let chunk = (chunk as u64).max(overlap * 2);
        let mut at = from.saturating_sub(overlap);
        let mut resume = len;
        let mut buf = vec![0u8; chunk.min(len - at) as usize];
        while at < len {
            let n = file.read_at(&mut buf, at)?;
            if n == 0 {
                break;
            }
            let window = &buf[..n];
            let mut masks: Vec<(u64, u64)> = Vec::new();
            for secret in &finder.secrets {
                masks.extend(secret.find_iter(window).map(|i| (at + i as u64, secret.needle().len() as u64)));
            }
            for m in finder.shapes.find_overlapping_iter(window) {
                let start = at + m.start() as u64;
                let (_, min) = SHAPES[m.pattern().as_usize()];
                let before_is_key = m.start().checked_sub(1).map(|i| key_byte(window[i])).unwrap_or_else(|| start > 0 && byte_at(&file, start - 1).is_some_and(key_byte));
                if before_is_key {
                    continue;
                }
                let body = key_run(&file, start + m.len() as u64, len);
                if !finished && start + m.len() as u64 + body >= len {
                    resume = resume.min(start);
                    continue;
                }
                if body >= min as u64 {
                    masks.push((start, m.len() as u64 + body));
                }
            }
            for (start, width) in masks {
                file.write_all_at(&vec![b'*'; width as usize], start)?;
            }
            if at + n as u64 >= len {
                break;
            }
            at += n as u64 - overlap.min(n as u64 - 1);
        }
        Ok(resume)
    }
}

/// How much of a log is read at a time when scrubbing.
const SCRUB_CHUNK: usize = 1 << 20;

fn key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn byte_at(file: &std::fs::File, at: u64) -> Option<u8> {
    use std::os::unix::fs::FileExt;
    let mut b = [0u8; 1];
    (file.read_at(&mut b, at).ok()? == 1).then_some(b[0])
}

/// How many key characters follow `at` (read as needed, not bounded by a window).
fn key_run(file: &std::fs::File, mut at: u64, len: u64) -> u64 {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    let mut buf = [0u8; 256];
    while at < len {
        let Ok(got) = file.read_at(&mut buf, at) else { break };
        if got == 0 {
            break;
        }
        let run = buf[..got].iter().take_while(|b| key_byte(**b)).count();
        n += run as u64;
        if run < got {
            break;
        }
        at += got as u64;
    }
    n
}


/// Key shapes: a prefix at a word start, then at least this many key characters.
const SHAPES: &[(&str, usize)] = &[("sk-ant-", 1), ("sk-", 20), ("AIza", 30)];

fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Mask every key-shaped string (API keys, OAuth and setup tokens).
fn mask_key_shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    'scan: while i < text.len() {
        let rest = &text[i..];
        let at_word_start = text[..i].chars().next_back().is_none_or(|c| !key_char(c));
        if at_word_start {
            for (prefix, min) in SHAPES {
                if let Some(body) = rest.strip_prefix(prefix) {
                    let len = body.find(|c: char| !key_char(c)).unwrap_or(body.len());
                    if len >= *min {
                        out.push_str(MASK);
                        i += prefix.len() + len;
                        continue 'scan;
                    }
                }
            }
        }
        let c = rest.chars().next().expect("not at the end");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn masks_registered_secrets_and_key_shapes() {
        let r = Redactor::default();
        r.register("tok-very-secret-123");
        assert_eq!(r.redact("Bearer tok-very-secret-123 failed"), "Bearer [redacted] failed");
        assert_eq!(r.redact("key sk-ant-api03-AbC_d-9 end"), "key [redacted] end");
        assert_eq!(r.redact("OPENAI_API_KEY=sk-proj-AbCdEf0123456789_xyzXYZ ok"), "OPENAI_API_KEY=[redacted] ok");
        assert_eq!(r.redact("key=AIzaSyA-1234567890abcdefghijklmnopqrstu!"), "key=[redacted]!");
        // Not keys: too short, or inside a word.
        assert_eq!(r.redact("task-list and sk-short and AIzaShort"), "task-list and sk-short and AIzaShort");
        assert_eq!(r.redact("disk-0123456789abcdefghijkl"), "disk-0123456789abcdefghijkl");
    }

    #[test]
    fn logs_are_scrubbed_in_place_across_chunk_boundaries() {
        use std::os::unix::fs::MetadataExt;
        let r = Redactor::default();
        r.register("tok-registered-secret-0042");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        // Secrets at every offset around a 64-byte window, a key shape longer than the window,
        // and look-alikes that must stay.
        let mut text = String::new();
        for pad in 0..70 {
            text += &format!("{}tok-registered-secret-0042 and sk-ant-oat01-{}\n", "x".repeat(pad), "Z".repeat(pad + 1));
        }
        text += &format!("key AIza{} task-list sk-short disk-0123456789abcdefghijkl\n", "Q".repeat(120));
        std::fs::write(&path, &text).unwrap();
        let inode = std::fs::metadata(&path).unwrap().ino();
        let end = r.scrub_file_in_chunks(&path, 0, true, 64).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert_eq!(end as usize, text.len());
        assert_eq!(after.len(), text.len(), "same length: nothing moved");
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode, "overwritten in place, not rewritten");
        assert!(!after.contains("tok-registered") && !after.contains("sk-ant-") && !after.contains("AIza"), "{after}");
        assert!(after.contains("task-list sk-short disk-0123456789abcdefghijkl"));
        // Incremental: only what was appended since is scanned (and still caught across the seam).
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"more tok-registered-secret-0042\n").unwrap();
        let end2 = r.scrub_file_in_chunks(&path, end, true, 64).unwrap();
        assert!(end2 > end);
        assert!(!std::fs::read_to_string(&path).unwrap().contains("tok-registered"));
        // A key still being written at the end is left for the next scrub, then masked whole.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"late sk-ant-oat01-abc").unwrap();
        let resume = r.scrub_file_in_chunks(&path, end2, false, 64).unwrap();
        assert_eq!(resume, end2 + 5, "resumes where the growing key starts");
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"defghij\n").unwrap();
        r.scrub_file_in_chunks(&path, resume, false, 64).unwrap();
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(last.ends_with(&format!("late {}\n", "*".repeat("sk-ant-oat01-abcdefghij".len()))), "{}", &last[last.len() - 40..]);
    }
}
