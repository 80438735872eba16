//! A document read the way Meilisearch's engine reads it: the object's top level first, each
//! top-level field's value kept as text, then every value parsed on its own.
//!
//! Why: Meilisearch accepts an array or NDJSON payload whose objects are valid JSON *syntax*
//! (their keys read as strings, their values only scanned), and parses each field's value
//! later, when it indexes the document. A number out of `f64`'s range, a lone UTF-16
//! surrogate in a string escape, or a value nested 128 levels deep is accepted at upload and
//! fails the task; and the nesting limit applies to each field's value, not to the whole
//! document. [`validate_object`] is that upload check; [`parse_fields`] builds the document
//! and reports the first field whose value does not parse, with the position *in that value's
//! text*, as Meilisearch's message has it.
//!
//! Invariants: for an object serde_json reads as a document, [`parse_fields`] gives the same
//! document (same keys in the same order, a repeated key keeping its first place and its last
//! value); nothing here recurses on the input's nesting beyond serde_json's own limit.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Document;

/// Checks that `text` is one JSON object whose keys are strings and whose values are valid
/// JSON syntax, without reading what the values hold (Meilisearch's check at upload).
pub fn validate_object(text: &[u8]) -> Result<(), serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    (&mut deserializer).deserialize_map(KeysOnly)?;
    deserializer.end()
}

/// The document `text` holds, each top-level value parsed on its own; `Err` with the error of
/// the object's own syntax, or of the first field (in the object's order) whose value does
/// not parse.
pub fn parse_fields(text: &[u8]) -> Result<Document, serde_json::Error> {
    let mut document = Document::new();
    for (key, value) in raw_fields(text)? {
        document.insert(key, serde_json::from_str::<Value>(value.get())?);
    }
    Ok(document)
}

/// The document `text` holds with every value that does not parse read as `null`: for
/// reading an id out of a document whose other values fail the task later (the failing value
/// is then reported by [`parse_fields`]). `Err` only for the object's own syntax.
pub fn parse_fields_lossy(text: &[u8]) -> Result<Document, serde_json::Error> {
    Ok(raw_fields(text)?
        .into_iter()
        .map(|(key, value)| {
            let value = serde_json::from_str::<Value>(value.get()).unwrap_or(Value::Null);
            (key, value)
        })
        .collect())
}

/// The top-level fields of the object `text` holds, each value as its text, in order.
fn raw_fields(text: &[u8]) -> Result<Vec<(String, &RawValue)>, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let fields = (&mut deserializer).deserialize_map(RawFields)?;
    deserializer.end()?;
    Ok(fields)
}

/// Reads an object's keys and checks its values' texts.
struct KeysOnly;

impl<'de> Visitor<'de> for KeysOnly {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // A value's text is kept raw, as Meilisearch's upload keeps it: its syntax and its
        // UTF-8 are checked, what it holds is not.
        while map.next_entry::<String, &'de RawValue>()?.is_some() {}
        Ok(())
    }
}

/// Reads an object's keys and its values' texts.
struct RawFields;

impl<'de> Visitor<'de> for RawFields {
    type Value = Vec<(String, &'de RawValue)>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::new();
        while let Some(field) = map.next_entry::<String, &'de RawValue>()? {
            fields.push(field);
        }
        Ok(fields)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Nesting `depth` arrays around `1`.
    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn values_serde_json_refuses_are_accepted_at_upload() {
        for text in [
            r#"{"id":1,"n":1e400}"#,
            r#"{"id":1,"s":"\ud800"}"#,
            &format!(r#"{{"id":1,"deep":{}}}"#, nested(300)),
        ] {
            assert!(validate_object(text.as_bytes()).is_ok(), "{text}");
            assert!(serde_json::from_str::<Document>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn invalid_utf8_in_a_value_is_refused_at_upload() {
        let error = validate_object(b"{\"id\":1,\"t\":\"\xff\"}").unwrap_err();
        assert!(
            error.to_string().starts_with("invalid unicode code point"),
            "{error}"
        );
    }

    #[test]
    fn syntax_errors_and_bad_keys_are_refused_at_upload() {
        for text in [
            r#"{"id":1,"n":}"#,
            r#"{"id":1,"\ud800":2}"#,
            r#"{"id":1} 2"#,
            r#"[1]"#,
        ] {
            assert!(validate_object(text.as_bytes()).is_err(), "{text}");
        }
    }

    #[test]
    fn a_bad_value_reports_its_position_in_its_own_text() {
        let error = parse_fields(br#"{"id":1, "a": {"b":1e400}}"#).unwrap_err();
        assert_eq!(error.to_string(), "number out of range at line 1 column 10");
        let error = parse_fields(br#"{"id":1,"s":"\ud800"}"#).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unexpected end of hex escape at line 1 column 8"
        );
        let text = format!(r#"{{"id":1,"deep":{}}}"#, nested(128));
        let error = parse_fields(text.as_bytes()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "recursion limit exceeded at line 1 column 128"
        );
    }

    #[test]
    fn a_lossy_read_keeps_the_values_that_parse() {
        let document = parse_fields_lossy(br#"{"id":"a","n":1e400,"m":2}"#).unwrap();
        assert_eq!(document["id"], "a");
        assert_eq!(document["n"], Value::Null);
        assert_eq!(document["m"], 2);
        assert!(parse_fields_lossy(br#"{"id":"a","n":}"#).is_err());
    }

    #[test]
    fn the_nesting_limit_applies_to_each_value() {
        let text = format!(r#"{{"id":1,"deep":{}}}"#, nested(127));
        assert!(serde_json::from_str::<Document>(&text).is_err());
        let document = parse_fields(text.as_bytes()).unwrap();
        assert_eq!(document["id"], 1);
    }

    #[test]
    fn documents_serde_json_reads_are_read_the_same() {
        for text in [
            r#"{"b":1,"a":{"x":[1,2.5,"é\n"]},"c":null}"#,
            r#"{"a":1,"b":2,"a":3}"#,
            "{}",
        ] {
            let expected: Document = serde_json::from_str(text).unwrap();
            let document = parse_fields(text.as_bytes()).unwrap();
            assert_eq!(document, expected, "{text}");
            let keys: Vec<&String> = document.keys().collect();
            assert_eq!(keys, expected.keys().collect::<Vec<_>>(), "{text}");
        }
    }
}
