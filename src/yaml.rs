//! A strict reader for mur's YAML documents (murmur.yaml, roster.yaml).
//!
//! serde YAML crates drop positions once a value deserializes, so a semantic fault
//! (a bad name, a version of `latest`) could not name its line and column. This
//! module builds a small tree in which every node keeps where it starts, from
//! saphyr-parser's events, and `Reader` turns each fault into a `Diagnostic` with the
//! document's code, file, line and column.
//!
//! Scalars keep their text as written: an unquoted `1.10` reads as "1.10". Anchors,
//! aliases and several documents in one file are refused.

use std::path::{Path, PathBuf};

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use crate::catalogue::Code;
use crate::diag::{Diagnostic, Location, Result};

/// Documents larger than this are refused before parsing.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// Nesting deeper than this is refused (no real manifest comes close).
const MAX_DEPTH: usize = 64;

/// One node of a document, with the line and column (1-based) where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub value: Value,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// An empty value (`key:`), `~` or `null`, or an empty document.
    Null,
    /// A scalar as written; `plain` is false for quoted and block scalars.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    /// Entries in document order; keys are unique (duplicates are refused).
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// A short name of the node's kind, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match &self.value {
            Value::Null => "nothing",
            Value::Scalar { .. } => "a scalar",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The scalar text, if this is a scalar.
    pub(crate) fn text(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// Parses `text` into its root node; a syntax fault is `code` at its position.
pub(crate) fn parse(text: &str, file: &Path, code: Code) -> Result<Node> {
    let fault = |line: usize, column: usize, message: String| {
        Diagnostic::new(code, message)
            .at(Location::new(file, line, column))
            .hint("Fix the YAML syntax at that position.")
    };
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(fault(
            1,
            1,
            format!("the file is over {MAX_DOCUMENT_BYTES} bytes"),
        ));
    }
    let mut builder = Builder::default();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            let m = e.marker();
            fault(
                m.line(),
                m.col() + 1,
                format!("not valid YAML: {}", e.info()),
            )
        })?;
        builder
            .event(event, span)
            .map_err(|(span, message)| fault(span.start.line(), span.start.col() + 1, message))?;
    }
    Ok(builder.root.unwrap_or(Node {
        value: Value::Null,
        line: 1,
        column: 1,
    }))
}

enum Open {
    Seq(Node),
    /// A mapping under construction, and the key waiting for its value.
    Map(Node, Option<Node>),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    root: Option<Node>,
    documents: usize,
}

type BuildError = (Span, String);

impl Builder {
    fn event(&mut self, event: Event<'_>, span: Span) -> std::result::Result<(), BuildError> {
        let at = |value| Node {
            value,
            line: span.start.line(),
            column: span.start.col() + 1,
        };
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err((span, "the file holds more than one YAML document".into()));
                }
            }
            Event::Alias(_) => {
                return Err((span, "YAML aliases (`*name`) are not supported here".into()));
            }
            Event::Scalar(text, style, anchor, _tag) => {
                if anchor != 0 {
                    return Err((span, "YAML anchors (`&name`) are not supported here".into()));
                }
                let plain = style == ScalarStyle::Plain;
                let value = if plain && matches!(text.as_ref(), "" | "~" | "null" | "Null" | "NULL")
                {
                    Value::Null
                } else {
                    Value::Scalar {
                        text: text.into_owned(),
                        plain,
                    }
                };
                self.push(at(value), span)?;
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if anchor != 0 {
                    return Err((span, "YAML anchors (`&name`) are not supported here".into()));
                }
                if self.stack.len() >= MAX_DEPTH {
                    return Err((span, format!("nesting deeper than {MAX_DEPTH} levels")));
                }
                self.stack.push(match event {
                    Event::SequenceStart(..) => Open::Seq(at(Value::Seq(Vec::new()))),
                    _ => Open::Map(at(Value::Map(Vec::new())), None),
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match self.stack.pop() {
                    Some(Open::Seq(node)) | Some(Open::Map(node, None)) => node,
                    Some(Open::Map(_, Some(_))) | None => {
                        return Err((span, "unbalanced YAML structure".into()));
                    }
                };
                self.push(node, span)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
        Ok(())
    }

    fn push(&mut self, node: Node, span: Span) -> std::result::Result<(), BuildError> {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Open::Seq(seq)) => {
                if let Value::Seq(items) = &mut seq.value {
                    items.push(node);
                }
            }
            Some(Open::Map(map, pending)) => match pending.take() {
                None => {
                    if !matches!(node.value, Value::Scalar { .. } | Value::Null) {
                        return Err((span, "a mapping key must be a plain word".into()));
                    }
                    if let Value::Map(entries) = &map.value
                        && entries.iter().any(|(k, _)| k.value == node.value)
                    {
                        let key = node.text().unwrap_or("").to_string();
                        return Err((span, format!("the key `{key}` appears twice")));
                    }
                    *pending = Some(node);
                }
                Some(key) => {
                    if let Value::Map(entries) = &mut map.value {
                        entries.push((key, node));
                    }
                }
            },
        }
        Ok(())
    }
}

/// Reads typed values out of nodes, turning every fault into `code` at the node.
#[derive(Debug, Clone)]
pub(crate) struct Reader {
    pub file: PathBuf,
    pub code: Code,
}

/// A mapping node's entries, read through a `Reader`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Map<'a> {
    pub node: &'a Node,
    pub entries: &'a [(Node, Node)],
}

impl<'a> Map<'a> {
    /// The value of `key`; a key written with no value counts as absent.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.text() == Some(key))
            .map(|(_, v)| v)
            .filter(|v| !v.is_null())
    }

    /// The key node itself (for positions), if present.
    pub(crate) fn key(&self, key: &str) -> Option<&'a Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.text() == Some(key))
            .map(|(k, _)| k)
    }
}

impl Reader {
    pub(crate) fn new(file: impl Into<PathBuf>, code: Code) -> Self {
        Reader {
            file: file.into(),
            code,
        }
    }

    /// A fault of this document's code at `node`.
    pub(crate) fn fault(&self, node: &Node, message: impl Into<String>) -> Diagnostic {
        self.fault_with(self.code, node, message)
    }

    /// A fault of another code at `node` (a rule with its own code).
    pub(crate) fn fault_with(
        &self,
        code: Code,
        node: &Node,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::new(code, message).at(Location::new(&self.file, node.line, node.column))
    }

    fn wrong_type(&self, node: &Node, field: &str, expected: &str) -> Diagnostic {
        self.fault(
            node,
            format!("`{field}` must be {expected}, not {}", node.kind()),
        )
        .hint(format!("Write `{field}` as {expected}."))
    }

    /// `node` as a mapping whose keys are all in `allowed`.
    pub(crate) fn map<'a>(&self, node: &'a Node, field: &str, allowed: &[&str]) -> Result<Map<'a>> {
        let Value::Map(entries) = &node.value else {
            return Err(self.wrong_type(node, field, "a mapping"));
        };
        for (key, _) in entries {
            let name = key.text().unwrap_or("");
            if !allowed.contains(&name) {
                let place = if field.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in `{field}`")
                };
                return Err(self
                    .fault(key, format!("unknown key `{name}` {place}"))
                    .hint(format!(
                        "The keys allowed {place} are: {}.",
                        allowed.join(", ")
                    )));
            }
        }
        Ok(Map { node, entries })
    }

    /// The value of a required key.
    pub(crate) fn required<'a>(&self, map: &Map<'a>, key: &str, field: &str) -> Result<&'a Node> {
        map.get(key).ok_or_else(|| {
            let at = map.key(key).unwrap_or(map.node);
            self.fault(at, format!("`{field}` is required"))
                .hint(format!("Add `{key}:` with a value."))
        })
    }

    pub(crate) fn seq<'a>(&self, node: &'a Node, field: &str) -> Result<&'a [Node]> {
        match &node.value {
            Value::Seq(items) => Ok(items),
            _ => Err(self.wrong_type(node, field, "a list")),
        }
    }

    /// Any scalar, as the text written: `1.10` stays "1.10", `true` is "true".
    pub(crate) fn string<'a>(&self, node: &'a Node, field: &str) -> Result<&'a str> {
        node.text()
            .ok_or_else(|| self.wrong_type(node, field, "a string"))
    }

    /// A plain `true` or `false` (YAML 1.2 core schema spellings).
    pub(crate) fn bool(&self, node: &Node, field: &str) -> Result<bool> {
        match &node.value {
            Value::Scalar { text, plain: true } => match text.as_str() {
                "true" | "True" | "TRUE" => Ok(true),
                "false" | "False" | "FALSE" => Ok(false),
                _ => Err(self.wrong_type(node, field, "true or false")),
            },
            _ => Err(self.wrong_type(node, field, "true or false")),
        }
    }

    /// A plain integer.
    pub(crate) fn integer(&self, node: &Node, field: &str) -> Result<i64> {
        match &node.value {
            Value::Scalar { text, plain: true } => text
                .parse::<i64>()
                .map_err(|_| self.wrong_type(node, field, "an integer")),
            _ => Err(self.wrong_type(node, field, "an integer")),
        }
    }

    /// A list of scalars.
    pub(crate) fn strings<'a>(&self, node: &'a Node, field: &str) -> Result<Vec<&'a str>> {
        self.seq(node, field)?
            .iter()
            .map(|item| self.string(item, &format!("{field}[]")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::E_ROS_001;

    fn doc(text: &str) -> Result<Node> {
        parse(text, Path::new("roster.yaml"), E_ROS_001)
    }

    #[test]
    fn keeps_positions_and_text() {
        let root = doc("a: 1\nb:\n  - 1.10\n  - 'x'\n").unwrap();
        let r = Reader::new("roster.yaml", E_ROS_001);
        let m = r.map(&root, "", &["a", "b"]).unwrap();
        let b = r.seq(m.get("b").unwrap(), "b").unwrap();
        assert_eq!(b[0].text(), Some("1.10"));
        assert_eq!((b[0].line, b[0].column), (3, 5));
        assert_eq!(
            b[1].value,
            Value::Scalar {
                text: "x".into(),
                plain: false
            }
        );
    }

    #[test]
    fn empty_value_is_absent() {
        let root = doc("entry:\nname: x\n").unwrap();
        let r = Reader::new("roster.yaml", E_ROS_001);
        let m = r.map(&root, "", &["entry", "name"]).unwrap();
        assert!(m.get("entry").is_none());
        assert!(m.key("entry").is_some());
    }

    #[test]
    fn unknown_key_names_its_position() {
        let root = doc("a: 1\nzz: 2\n").unwrap();
        let err = Reader::new("roster.yaml", E_ROS_001)
            .map(&root, "", &["a"])
            .unwrap_err();
        assert_eq!(
            err.location.as_ref().map(|l| (l.line, l.column)),
            Some((2, 1))
        );
        assert!(err.message.contains("`zz`"), "{}", err.message);
    }

    #[test]
    fn refuses_duplicates_aliases_and_bad_syntax() {
        for (text, needle) in [
            ("a: 1\na: 2\n", "appears twice"),
            ("a: &x 1\nb: *x\n", "anchors"),
            ("a: [1, 2\n", "not valid YAML"),
            ("a: 1\n---\nb: 2\n", "more than one"),
        ] {
            let err = doc(text).unwrap_err();
            assert_eq!(err.code, E_ROS_001);
            assert!(err.message.contains(needle), "{text:?}: {}", err.message);
            assert!(err.location.is_some());
        }
    }

    #[test]
    fn quoted_true_is_not_a_bool() {
        let root = doc("a: 'true'\nb: true\n").unwrap();
        let r = Reader::new("x", E_ROS_001);
        let m = r.map(&root, "", &["a", "b"]).unwrap();
        assert!(r.bool(m.get("a").unwrap(), "a").is_err());
        assert!(r.bool(m.get("b").unwrap(), "b").unwrap());
    }
}
