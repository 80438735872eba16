//! A document on its way from a batch's payloads to the shard that owns it: its JSON text as
//! the payload holds it, or a document already built.
//!
//! Why: building a document (a `serde_json::Map` of owned keys and values) is most of the cost
//! of reading a payload. The coordinator reads every payload of a batch on one core; it only
//! needs each document's id to route it, so it hands a plain document on as text and the
//! shard's own core builds it. Documents the coordinator must merge (a batch's updates of one
//! id) or that a CSV payload yields are built where they are read.
//!
//! Invariants: a `Text` is one JSON object of an update file that was validated when it was
//! uploaded and whose id the batch's planning read from a [`SimdParser`]'s parse of it, so
//! building it again gives the document the payload reader would have built.

use super::Document;
use super::simd_document::SimdParser;

/// A payload's document, as text or built.
#[derive(Debug, Clone, PartialEq)]
pub enum PayloadDocument {
    /// The document's JSON object, exactly as the payload holds it.
    Text(Box<[u8]>),
    /// The document itself.
    Built(Document),
}

impl PayloadDocument {
    /// The document, built with `parser` when it is text; `Err` with serde_json's error when
    /// the text is not a JSON object (which the invariant rules out).
    pub fn into_document(self, parser: &mut SimdParser) -> Result<Document, serde_json::Error> {
        match self {
            Self::Text(text) => parser.parse(&text),
            Self::Built(document) => Ok(document),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: serde_json::Value) -> Document {
        match value {
            serde_json::Value::Object(map) => map,
            _ => panic!("test documents are objects"),
        }
    }

    #[test]
    fn text_builds_the_document_the_payload_holds_in_its_key_order() {
        let mut parser = SimdParser::new();
        let text = br#"{"z":1,"a":{"b":[true,null]},"id":"x"}"#;
        let document = PayloadDocument::Text(text.to_vec().into_boxed_slice())
            .into_document(&mut parser)
            .expect("the text parses");
        assert_eq!(
            document.keys().collect::<Vec<_>>(),
            vec!["z", "a", "id"],
            "keys keep the payload's order"
        );
        assert_eq!(
            document,
            object(json!({"z": 1, "a": {"b": [true, null]}, "id": "x"}))
        );
    }
}
