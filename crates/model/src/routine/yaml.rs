//! A YAML document as a tree whose every node knows its line and column.
//!
//! serde-based YAML crates lose positions once a value is deserialised, but every routine error
//! must name `file:line:col` — and we want *all* errors, not the first. So routine files are read
//! with yaml-rust2's event parser into this small spanned tree, and validated by hand.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// 1-based position in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

impl Pos {
    fn from_marker(m: &Marker) -> Pos {
        // yaml-rust2 lines are 1-based, columns 0-based.
        Pos { line: m.line().max(1), col: m.col() + 1 }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `quoted` distinguishes `"true"` (a string) from `true` (a boolean) and `"~"` from null.
    Scalar { value: String, quoted: bool, pos: Pos },
    Seq { items: Vec<Node>, pos: Pos },
    Map { entries: Vec<(Node, Node)>, pos: Pos },
}

impl Node {
    pub fn pos(&self) -> Pos {
        match self {
            Node::Scalar { pos, .. } | Node::Seq { pos, .. } | Node::Map { pos, .. } => *pos,
        }
    }

    /// A plain `~`, `null` or empty scalar.
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Scalar { value, quoted: false, .. } if matches!(value.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Node::Scalar { .. } if self.is_null() => "nothing",
            Node::Scalar { .. } => "a value",
            Node::Seq { .. } => "a list",
            Node::Map { .. } => "a mapping",
        }
    }
}

/// How deep mappings and lists may nest in a routine file (a routine needs three levels).
pub const MAX_DEPTH: usize = 32;

/// Parse one YAML document. `Ok(None)` for an empty file.
///
/// Bounded by construction: aliases are refused (never expanded, so "billion laughs" costs
/// nothing), nesting deeper than [`MAX_DEPTH`] is an error and is not built, a NUL byte is an
/// error (it would silently end the text for many readers), a byte-order mark is accepted.
pub fn parse(src: &str) -> Result<Option<Node>, (Pos, String)> {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    if let Some(i) = src.find('\0') {
        let (line, col) = crate::words::line_col(src, i);
        return Err((Pos { line, col }, "the file contains a NUL byte; routine files are text".into()));
    }
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(src);
    // Pull events one at a time (yaml-rust2's `load` recurses once per nesting level, which a
    // hostile file turns into a stack overflow), and stop at the first refusal.
    loop {
        let (event, mark) = parser.next_token().map_err(|e| (Pos::from_marker(e.marker()), e.info().to_string()))?;
        if event == Event::StreamEnd || builder.alias_error.is_some() || builder.too_deep.is_some() {
            break;
        }
        builder.on_event(event, mark);
    }
    if builder.documents > 1 {
        return Err((builder.second_doc, "a routine file holds one routine; found a second YAML document".into()));
    }
    if let Some(pos) = builder.alias_error {
        return Err((pos, "YAML aliases (*name) are not supported in routine files".into()));
    }
    if let Some(pos) = builder.too_deep {
        return Err((pos, format!("nested more than {MAX_DEPTH} levels deep; a routine file needs a few")));
    }
    Ok(builder.root)
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Node>,
    documents: usize,
    second_doc: Pos,
    alias_error: Option<Pos>,
    too_deep: Option<Pos>,
}

enum Frame {
    Seq { items: Vec<Node>, pos: Pos },
    Map { entries: Vec<(Node, Node)>, pending_key: Option<Node>, pos: Pos },
}

impl Builder {
    fn push_value(&mut self, node: Node) {
        match self.stack.last_mut() {
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, pending_key, .. }) => match pending_key.take() {
                Some(key) => entries.push((key, node)),
                None => *pending_key = Some(node),
            },
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let pos = Pos::from_marker(&mark);
        match ev {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents == 2 {
                    self.second_doc = pos;
                }
            }
            Event::Scalar(value, style, _anchor, _tag) => {
                let quoted = !matches!(style, TScalarStyle::Plain);
                self.push_value(Node::Scalar { value, quoted, pos });
            }
            // Parsing stops here (see `parse`): nothing deeper is built.
            Event::SequenceStart(..) | Event::MappingStart(..) if self.stack.len() >= MAX_DEPTH => {
                self.too_deep.get_or_insert(pos);
            }
            Event::SequenceStart(..) => self.stack.push(Frame::Seq { items: Vec::new(), pos }),
            Event::MappingStart(..) => self.stack.push(Frame::Map { entries: Vec::new(), pending_key: None, pos }),
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq { items, pos }) => self.push_value(Node::Seq { items, pos }),
                Some(Frame::Map { entries, pos, .. }) => self.push_value(Node::Map { entries, pos }),
                None => {}
            },
            // Never expanded (an alias can multiply a small file into gigabytes); parsing stops.
            Event::Alias(_) => {
                self.alias_error.get_or_insert(pos);
            }
            _ => {}
        }
    }
}

/// A YAML value as JSON: `true`/`false`, numbers and `null` unquoted as themselves, other
/// scalars as strings, lists and mappings as arrays and objects.
pub fn to_json(node: &Node) -> serde_json::Value {
    match node {
        Node::Scalar { .. } if node.is_null() => serde_json::Value::Null,
        Node::Scalar { value, quoted: false, .. } => match value.as_str() {
            "true" | "True" | "TRUE" => serde_json::Value::Bool(true),
            "false" | "False" | "FALSE" => serde_json::Value::Bool(false),
            v => v.parse::<i64>().map(serde_json::Value::from).ok().or_else(|| v.parse::<f64>().ok().filter(|f| f.is_finite()).map(serde_json::Value::from)).unwrap_or_else(|| serde_json::Value::String(v.to_string())),
        },
        Node::Scalar { value, .. } => serde_json::Value::String(value.clone()),
        Node::Seq { items, .. } => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Node::Map { entries, .. } => serde_json::Value::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Node::Scalar { value, .. } => value.clone(),
                        other => to_json(other).to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_point_at_keys_and_values() {
        let src = "name: x\nschedule: \"0 9 * * *\"\nenv:\n  FOO: bar\n";
        let Some(Node::Map { entries, .. }) = parse(src).unwrap() else { panic!("not a map") };
        assert_eq!(entries[0].0.pos(), Pos { line: 1, col: 1 });
        assert_eq!(entries[1].1.pos(), Pos { line: 2, col: 11 });
        let Node::Map { entries: env, .. } = &entries[2].1 else { panic!() };
        assert_eq!(env[0].0.pos(), Pos { line: 4, col: 3 });
    }

    #[test]
    fn syntax_errors_carry_a_position() {
        let (pos, msg) = parse("name: x\nschedule: [unclosed\n").unwrap_err();
        assert!(pos.line >= 2, "{pos:?} {msg}");
    }

    #[test]
    fn hostile_documents_are_bounded_errors() {
        // Billion laughs: refused at the first alias, nothing expanded.
        let mut laughs = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for i in 1..9 {
            laughs += &format!("{}: &{} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n", (b'a' + i) as char, (b'a' + i) as char, p = (b'a' + i - 1) as char);
        }
        let (pos, msg) = parse(&laughs).unwrap_err();
        assert_eq!((pos.line, msg.as_str()), (2, "YAML aliases (*name) are not supported in routine files"));
        // Thousands of levels: an error at the first level too deep, no deep tree built.
        let deep = format!("x:\n{}", (1..5000).map(|i| format!("{}- \n", "  ".repeat(i))).collect::<String>());
        let (pos, msg) = parse(&deep).unwrap_err();
        assert!(msg.starts_with("nested more than 32 levels"), "{msg}");
        assert!(pos.line > 1, "{pos:?}");
        let flow = format!("x: {}{}", "[".repeat(5000), "]".repeat(5000));
        assert!(parse(&flow).is_err());
        // A NUL byte is an error where it stands; a byte-order mark is fine.
        let (pos, _) = parse("name: x\nsched\0ule: y\n").unwrap_err();
        assert_eq!(pos, Pos { line: 2, col: 6 });
        assert!(matches!(parse("\u{feff}name: x\n").unwrap(), Some(Node::Map { .. })));
    }

    #[test]
    fn empty_and_quoted_scalars() {
        assert_eq!(parse("").unwrap(), None);
        let Some(Node::Map { entries, .. }) = parse("a: \"true\"\nb: true\nc:\n").unwrap() else { panic!() };
        assert!(matches!(&entries[0].1, Node::Scalar { quoted: true, .. }));
        assert!(matches!(&entries[1].1, Node::Scalar { quoted: false, .. }));
        assert!(entries[2].1.is_null());
    }
}
