//! One JSON object parsed with simd-json into a [`Document`], serde_json as the referee.
//!
//! simd-json builds a tape of the object (copied into a reused, padded scratch buffer, so the
//! caller's bytes stay intact); the document is built from the tape in key order. Whenever
//! simd-json refuses the text, or the tape nests deeper than serde_json allows, serde_json
//! parses the same bytes instead: it either accepts them (so what serde_json, and Meilisearch,
//! accept is accepted) or fails, and only then is the payload malformed.
//!
//! Invariants: the result equals `serde_json::from_slice::<Document>` on the same bytes for
//! every object both parsers accept (the one value they read differently, the number `-0`,
//! sends its document to serde_json); the scratch buffer, the simd-json buffers and the tape
//! are reused from one document to the next (no allocation per document besides the
//! document itself).

use serde_json::{Map, Number, Value};
use simd_json::{Buffers, INPUT_PADDING, Node, StaticNode, Tape, fill_tape_padded};

use super::Document;
use super::document_id::is_valid_document_id;
use super::field_values::{parse_fields, validate_object};

/// Deepest nesting built from the tape; deeper objects go to serde_json (whose own limit is
/// 128), so both parsers agree on what is too deep.
const TAPE_DEPTH_MAX: usize = 100;

/// A reusable simd-json parser of documents.
pub struct SimdParser {
    scratch: Vec<u8>,
    buffers: Buffers,
    tape: Tape<'static>,
}

impl Default for SimdParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SimdParser {
    /// A parser with empty buffers (they grow to the largest document seen).
    pub fn new() -> Self {
        Self {
            scratch: Vec::new(),
            buffers: Buffers::default(),
            tape: Tape::null(),
        }
    }

    /// Parses `text`, one JSON object; what simd-json refuses is read field by field
    /// ([`parse_fields`]): `Err` with the error of the object's syntax or of its first value
    /// that does not parse (positioned in that value's text, as Meilisearch reports it).
    pub fn parse(&mut self, text: &[u8]) -> Result<Document, serde_json::Error> {
        match self.parse_with_tape(text, true) {
            Some(Some(document)) => Ok(document),
            _ => parse_fields(text),
        }
    }

    /// Checks, as Meilisearch does at upload, that `text` is one JSON object of valid syntax
    /// whose keys are strings, without building the document: values that do not parse
    /// (see [`super::field_values`]) are accepted here and fail the task.
    pub fn validate(&mut self, text: &[u8]) -> Result<(), serde_json::Error> {
        match self.parse_with_tape(text, false) {
            Some(_) => Ok(()),
            None => validate_object(text),
        }
    }

    /// Checks that `text` is one JSON object serde_json reads whole as a document: the check
    /// Meilisearch makes of a JSON payload that is a single object (not an array).
    pub fn validate_whole(&mut self, text: &[u8]) -> Result<(), serde_json::Error> {
        match self.parse_with_tape(text, false) {
            Some(_) => Ok(()),
            None => serde_json::from_slice::<Document>(text).map(drop),
        }
    }

    /// The document id of `text` under `primary_key` when it can be read straight from the
    /// tape: a plain (undotted) key whose last occurrence holds a valid string id or a non-zero
    /// integer. `None` otherwise (invalid JSON, dotted key, missing or invalid id, zero): the
    /// caller then builds the document and extracts the id the exact way.
    pub fn id(&mut self, text: &[u8], primary_key: &str) -> Option<String> {
        if primary_key.contains('.') {
            return None;
        }
        self.read_object_tape(text, |nodes| top_level_id(nodes, primary_key))
    }

    /// `None` when simd-json refuses `text` or it is not an object; `Some(None)` when it is
    /// valid but `build` is false.
    fn parse_with_tape(&mut self, text: &[u8], build: bool) -> Option<Option<Document>> {
        self.read_object_tape(text, |nodes| {
            if !build {
                return Some(None);
            }
            let mut position = 0;
            match value_at(nodes, &mut position) {
                Value::Object(document) => Some(Some(document)),
                _ => None,
            }
        })
    }

    /// Fills the reused tape with `text` and, when it is one object within
    /// [`TAPE_DEPTH_MAX`], answers what `read` makes of its nodes; `None` when simd-json
    /// refuses `text`, it is not an object, it nests too deep, or it may hold the number -0.
    fn read_object_tape<R>(
        &mut self,
        text: &[u8],
        read: impl FnOnce(&[Node<'_>]) -> Option<R>,
    ) -> Option<R> {
        if has_negative_zero_integer(text) {
            return None;
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(text);
        self.scratch.resize(text.len() + INPUT_PADDING, 0);
        let mut tape = std::mem::replace(&mut self.tape, Tape::null()).reset();
        let parsed = fill_tape_padded(&mut self.scratch, text.len(), &mut self.buffers, &mut tape);
        let outcome = match parsed {
            Ok(())
                if matches!(tape.0.first(), Some(Node::Object { .. })) && within_depth(&tape.0) =>
            {
                read(&tape.0)
            }
            _ => None,
        };
        self.tape = tape.reset();
        outcome
    }
}

/// Whether `text` may hold the number `-0` (not followed by a fraction or an exponent), which
/// simd-json reads as the integer 0 where serde_json reads the float -0.0: such documents go to
/// serde_json. A `-0` inside a string only costs that detour.
fn has_negative_zero_integer(text: &[u8]) -> bool {
    memchr::memmem::find_iter(text, b"-0")
        .any(|start| !matches!(text.get(start + 2), Some(b'0'..=b'9' | b'.' | b'e' | b'E')))
}

/// Whether no container in `nodes` nests deeper than [`TAPE_DEPTH_MAX`].
fn within_depth(nodes: &[Node<'_>]) -> bool {
    // Each open container ends after `count` more nodes; the stack holds those end positions.
    let mut ends: Vec<usize> = Vec::new();
    for (position, node) in nodes.iter().enumerate() {
        while ends.last().is_some_and(|end| *end <= position) {
            ends.pop();
        }
        if let Node::Object { count, .. } | Node::Array { count, .. } = node {
            ends.push(position + 1 + count);
            if ends.len() > TAPE_DEPTH_MAX {
                return false;
            }
        }
    }
    true
}

/// The id held by the last top-level field called `key` of the object at `nodes[0]`, when it
/// is a valid string id or a non-zero integer (zero may have been written `-0`, which
/// serde_json reads as a float).
fn top_level_id(nodes: &[Node<'_>], key: &str) -> Option<String> {
    let Some(Node::Object { len, .. }) = nodes.first() else {
        return None;
    };
    let mut position = 1;
    let mut found = None;
    for _ in 0..*len {
        let is_key = matches!(nodes.get(position), Some(Node::String(name)) if *name == key);
        position += 1;
        let value = nodes.get(position)?;
        if is_key {
            found = Some(value);
        }
        position += match value {
            Node::Object { count, .. } | Node::Array { count, .. } => 1 + count,
            _ => 1,
        };
    }
    match found? {
        Node::String(text) if is_valid_document_id(text) => Some((*text).to_owned()),
        Node::Static(StaticNode::U64(integer)) if *integer != 0 => Some(integer.to_string()),
        Node::Static(StaticNode::I64(integer)) if *integer != 0 => Some(integer.to_string()),
        _ => None,
    }
}

/// The value whose node is at `position`; advances `position` past it.
fn value_at(nodes: &[Node<'_>], position: &mut usize) -> Value {
    let Some(node) = nodes.get(*position) else {
        return Value::Null;
    };
    *position += 1;
    match node {
        Node::String(text) => Value::String((*text).to_owned()),
        Node::Static(node) => static_value(*node),
        Node::Array { len, .. } => {
            let mut items = Vec::with_capacity(*len);
            for _ in 0..*len {
                items.push(value_at(nodes, position));
            }
            Value::Array(items)
        }
        Node::Object { len, .. } => {
            let mut object = Map::with_capacity(*len);
            for _ in 0..*len {
                let key = match nodes.get(*position) {
                    Some(Node::String(key)) => (*key).to_owned(),
                    _ => String::new(),
                };
                *position += 1;
                let value = value_at(nodes, position);
                object.insert(key, value);
            }
            Value::Object(object)
        }
    }
}

fn static_value(node: StaticNode) -> Value {
    match node {
        StaticNode::I64(integer) => Value::Number(Number::from(integer)),
        StaticNode::U64(integer) => Value::Number(Number::from(integer)),
        StaticNode::F64(float) => Number::from_f64(float).map_or(Value::Null, Value::Number),
        StaticNode::Bool(flag) => Value::Bool(flag),
        StaticNode::Null => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(text: &str) -> (Result<Document, String>, Result<Document, String>) {
        let mut parser = SimdParser::new();
        (
            parser
                .parse(text.as_bytes())
                .map_err(|error| error.to_string()),
            serde_json::from_str::<Document>(text).map_err(|error| error.to_string()),
        )
    }

    #[test]
    fn simd_documents_equal_serde_documents_key_order_included() {
        for text in [
            r#"{"id":1,"b":"x\"\u00e9\n","a":[1,-2,3.5,1e3,true,null,{"z":{}}],"c":18446744073709551615}"#,
            r#"{"dup":1,"other":2,"dup":3}"#,
            r#"{"big":1e400}"#,
            "{\"control\":\"a\u{1}b\"}",
            r#"{"neg":-9223372036854775808,"huge":123456789012345678901234567890}"#,
            r#"{"unicode":"\ud83d\ude00","lone":"\ud800"}"#,
            r#"{"zero":-0,"float_zero":-0.0,"exponent":-0e0}"#,
        ] {
            let (simd, serde) = both(text);
            // Errors differ in position: ours are in the failing value's own text.
            assert_eq!(simd.is_ok(), serde.is_ok(), "{text}");
            assert_eq!(simd.as_ref().ok(), serde.as_ref().ok(), "{text}");
            if let (Ok(simd), Ok(serde)) = (&simd, &serde) {
                let simd_keys: Vec<&String> = simd.keys().collect();
                let serde_keys: Vec<&String> = serde.keys().collect();
                assert_eq!(simd_keys, serde_keys, "{text}");
            }
        }
    }

    #[test]
    fn deep_nesting_is_judged_by_serde_json() {
        let depth = 200;
        let text = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
        let (simd, serde) = both(&text);
        assert!(simd.is_err());
        assert!(serde.is_err());
    }

    #[test]
    fn ids_read_from_the_tape_equal_ids_extracted_from_the_document() {
        let mut parser = SimdParser::new();
        for (text, key) in [
            (r#"{"a":{"id":"nested"},"id":"top","b":[1,{"id":2}]}"#, "id"),
            (r#"{"id":42,"id":"last-wins"}"#, "id"),
            (r#"{"n":18446744073709551615}"#, "n"),
            (r#"{"n":-12}"#, "n"),
            (r#"{"n":-0}"#, "n"),
            (r#"{"n":0}"#, "n"),
            (r#"{"n":1.5}"#, "n"),
            (r#"{"n":"bad id!"}"#, "n"),
            (r#"{"other":1}"#, "n"),
            (r#"{"a":{"b":"dotted"}}"#, "a.b"),
        ] {
            let document: Document = serde_json::from_str(text).expect("valid JSON");
            let extracted = super::super::document_id::extract_document_id(&document, key).ok();
            if let Some(fast) = parser.id(text.as_bytes(), key) {
                assert_eq!(Some(fast), extracted, "{text}");
            }
        }
        assert_eq!(
            parser.id(br#"{"id":"x1","z":{"id":3}}"#, "id"),
            Some("x1".to_string())
        );
        assert_eq!(parser.id(br#"{"id":7}"#, "id"), Some("7".to_string()));
    }

    #[test]
    fn validation_checks_syntax_and_whole_validation_checks_values() {
        let mut parser = SimdParser::new();
        assert!(parser.validate(br#"{"a":[1,{"b":null}]}"#).is_ok());
        assert!(parser.validate(br#"{"a":}"#).is_err());
        assert!(parser.validate(br#"{"a":1e400}"#).is_ok());
        assert!(parser.parse(br#"{"a":1e400}"#).is_err());
        assert!(parser.validate_whole(br#"{"a":[1,{"b":null}]}"#).is_ok());
        assert!(parser.validate_whole(br#"{"a":1e400}"#).is_err());
    }
}
