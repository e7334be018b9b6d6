//! A YAML document as a tree whose every node knows its line and column.
//!
//! serde-based YAML crates lose positions once a value is deserialised, but every routine error
//! must name `file:line:col` — and we want *all* errors, not the first. So routine files are read
//! with yaml-rust2's event parser into this small spanned tree, and validated by hand.

use std::collections::HashMap;
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

/// Parse one YAML document. `Ok(None)` for an empty file.
pub fn parse(src: &str) -> Result<Option<Node>, (Pos, String)> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(src);
    parser
        .load(&mut builder, true)
        .map_err(|e| (Pos::from_marker(e.marker()), e.info().to_string()))?;
    if builder.documents > 1 {
        return Err((builder.second_doc, "a routine file holds one routine; found a second YAML document".into()));
    }
    if let Some(pos) = builder.alias_error {
        return Err((pos, "YAML aliases (*name) are not supported in routine files".into()));
    }
    Ok(builder.root)
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Node>,
    documents: usize,
    second_doc: Pos,
    anchors: HashMap<usize, Node>,
    alias_error: Option<Pos>,
}

enum Frame {
    Seq { items: Vec<Node>, pos: Pos, anchor: usize },
    Map { entries: Vec<(Node, Node)>, pending_key: Option<Node>, pos: Pos, anchor: usize },
}

impl Builder {
    fn push_value(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
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
            Event::Scalar(value, style, anchor, _tag) => {
                let quoted = !matches!(style, TScalarStyle::Plain);
                self.push_value(Node::Scalar { value, quoted, pos }, anchor);
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq { items: Vec::new(), pos, anchor }),
            Event::MappingStart(anchor, _) => {
                self.stack.push(Frame::Map { entries: Vec::new(), pending_key: None, pos, anchor })
            }
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq { items, pos, anchor }) => self.push_value(Node::Seq { items, pos }, anchor),
                Some(Frame::Map { entries, pos, anchor, .. }) => self.push_value(Node::Map { entries, pos }, anchor),
                None => {}
            },
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(node) => self.push_value(node, 0),
                None => {
                    self.alias_error.get_or_insert(pos);
                    self.push_value(Node::Scalar { value: String::new(), quoted: false, pos }, 0);
                }
            },
            _ => {}
        }
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
    fn empty_and_quoted_scalars() {
        assert_eq!(parse("").unwrap(), None);
        let Some(Node::Map { entries, .. }) = parse("a: \"true\"\nb: true\nc:\n").unwrap() else { panic!() };
        assert!(matches!(&entries[0].1, Node::Scalar { quoted: true, .. }));
        assert!(matches!(&entries[1].1, Node::Scalar { quoted: false, .. }));
        assert!(entries[2].1.is_null());
    }
}
