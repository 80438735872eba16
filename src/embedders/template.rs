//! The `documentTemplate`: a Liquid template rendering one document to the text that is
//! embedded, with `doc` (the document, nested fields included) and `fields` (each
//! top-level field as `name`, `value` and `is_searchable`, in the document's order), the
//! reserved `_vectors`, `_geo` and `_geojson` left out.
//!
//! Invariants: the rendered text is never longer than the template's byte limit and is
//! cut at a char boundary, so it stays valid UTF-8; an error's message is Meilisearch's
//! (`cannot parse template: …`, `missing field in document: …`), the liquid crate's
//! explanation included.

use std::fmt;

use liquid::model::{KString, Object, Value as LiquidValue};
use serde_json::{Map, Value};

use super::ordered_object::OrderedObject;
use crate::errors::{Code, ResponseError};

/// The reserved top-level fields a template never sees, as in Meilisearch.
pub const HIDDEN_FIELDS: [&str; 3] = ["_vectors", "_geo", "_geojson"];

/// Why a document template was refused or could not render a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// The template text does not parse (liquid's explanation).
    Parse(String),
    /// Rendering a document failed, usually on a missing field (liquid's explanation).
    Render(String),
}

impl fmt::Display for TemplateError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::Parse(reason) => {
                write!(formatter, "user error: cannot parse template: {reason}")
            }
            TemplateError::Render(reason) => {
                write!(formatter, "user error: missing field in document: {reason}")
            }
        }
    }
}

impl std::error::Error for TemplateError {}

impl TemplateError {
    /// The settings error for embedder `embedder`'s template (`invalid_settings_embedders`).
    pub fn to_settings_error(&self, embedder: &str) -> ResponseError {
        ResponseError::new(
            Code::InvalidSettingsEmbedders,
            format!("`.embedders.{embedder}.documentTemplate`: Invalid template: {self}."),
        )
    }

    /// The task error for document `document_id` (`invalid_document_fields`).
    pub fn to_document_error(&self, document_id: &str) -> ResponseError {
        let message = match self {
            TemplateError::Render(reason) => {
                format!("user error: missing field in document `{document_id}`: {reason}")
            }
            TemplateError::Parse(_) => self.to_string(),
        };
        ResponseError::new(Code::InvalidDocumentFields, message)
    }
}

/// A parsed document template and its byte limit.
pub struct DocumentTemplate {
    template: liquid::Template,
    max_bytes: usize,
}

impl fmt::Debug for DocumentTemplate {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("DocumentTemplate")
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl DocumentTemplate {
    /// Parses `text` with Liquid's standard library; renders are cut to `max_bytes`.
    pub fn new(text: &str, max_bytes: usize) -> Result<Self, TemplateError> {
        let parser = liquid::ParserBuilder::with_stdlib()
            .build()
            .map_err(|error| TemplateError::Parse(error.to_string()))?;
        let template = parser
            .parse(text)
            .map_err(|error| TemplateError::Parse(error.to_string()))?;
        Ok(DocumentTemplate {
            template,
            max_bytes,
        })
    }

    /// The text to embed for `document`; `searchable` says whether a top-level field is
    /// searchable (`field.is_searchable`).
    pub fn render(
        &self,
        document: &Map<String, Value>,
        searchable: &dyn Fn(&str) -> bool,
    ) -> Result<String, TemplateError> {
        let globals = globals(document, searchable)?;
        let mut rendered = self
            .template
            .render(&globals)
            .map_err(|error| TemplateError::Render(error.to_string()))?;
        truncate_at_char_boundary(&mut rendered, self.max_bytes);
        Ok(rendered)
    }
}

/// Whether `field` is searchable under `searchable_attributes` (`None`: every field is),
/// as a template's `field.is_searchable` reads it.
pub fn is_searchable(searchable_attributes: Option<&[String]>, field: &str) -> bool {
    searchable_attributes.is_none_or(|fields| fields.iter().any(|searchable| searchable == field))
}

/// A JSON value as a Liquid value.
fn liquid_value(value: &Value) -> Result<LiquidValue, TemplateError> {
    liquid::model::to_value(value).map_err(|error| TemplateError::Render(error.to_string()))
}

/// `doc` alone (in the document's field order, the reserved fields left out): what an
/// indexing fragment sees of a document.
pub(super) fn doc_globals(document: &Map<String, Value>) -> Result<OrderedObject, TemplateError> {
    let mut doc = OrderedObject::default();
    let visible = document
        .iter()
        .filter(|(name, _)| !HIDDEN_FIELDS.contains(&name.as_str()));
    for (name, value) in visible {
        doc.push(KString::from(name.clone()), Box::new(liquid_value(value)?));
    }
    let mut globals = OrderedObject::default();
    globals.push(KString::from_static("doc"), Box::new(doc));
    Ok(globals)
}

/// `doc` (in the document's field order) and `fields` for one document.
fn globals(
    document: &Map<String, Value>,
    searchable: &dyn Fn(&str) -> bool,
) -> Result<OrderedObject, TemplateError> {
    let mut doc = OrderedObject::default();
    let mut fields = Vec::with_capacity(document.len());
    let visible = document
        .iter()
        .filter(|(name, _)| !HIDDEN_FIELDS.contains(&name.as_str()));
    for (name, value) in visible {
        let value = liquid_value(value)?;
        let mut field = Object::new();
        field.insert("name".into(), LiquidValue::scalar(name.clone()));
        field.insert("value".into(), value.clone());
        field.insert(
            "is_searchable".into(),
            LiquidValue::scalar(searchable(name)),
        );
        fields.push(LiquidValue::Object(field));
        doc.push(KString::from(name.clone()), Box::new(value));
    }
    let mut globals = OrderedObject::default();
    globals.push(KString::from_static("doc"), Box::new(doc));
    globals.push(
        KString::from_static("fields"),
        Box::new(LiquidValue::Array(fields)),
    );
    Ok(globals)
}

/// Cuts `text` to at most `max_bytes`, at the last char boundary that fits.
pub fn truncate_at_char_boundary(text: &mut String, max_bytes: usize) {
    if text.len() <= max_bytes {
        return;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::embedders::config::DEFAULT_DOCUMENT_TEMPLATE;

    fn document(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    #[test]
    fn doc_fields_and_nested_fields_render() {
        let template = DocumentTemplate::new(
            "A {{doc.title}} by {{doc.author.name}} in {{doc.year}}",
            400,
        )
        .expect("parses");
        let rendered = template
            .render(
                &document(json!({"title": "Dune", "author": {"name": "Herbert"}, "year": 1965})),
                &|_| true,
            )
            .expect("renders");
        assert_eq!(rendered, "A Dune by Herbert in 1965");
    }

    #[test]
    fn the_default_template_lists_searchable_fields_with_values() {
        let template = DocumentTemplate::new(DEFAULT_DOCUMENT_TEMPLATE, 400).expect("parses");
        let rendered = template
            .render(
                &document(json!({
                    "id": 1, "title": "Dune", "secret": "x", "none": null,
                    "_vectors": {"e": [1.0]}, "_geo": {"lat": 1, "lng": 2}
                })),
                &|name| name != "secret",
            )
            .expect("renders");
        assert_eq!(rendered, "id: 1\ntitle: Dune\n");
    }

    #[test]
    fn renders_are_cut_at_a_char_boundary() {
        let template = DocumentTemplate::new("{{doc.text}}", 5).expect("parses");
        let rendered = template
            .render(&document(json!({"text": "abcdé"})), &|_| true)
            .expect("renders");
        // `é` takes bytes 4 and 5: it does not fit whole, so it goes.
        assert_eq!(rendered, "abcd");
        let mut text = "ab".to_owned();
        truncate_at_char_boundary(&mut text, 0);
        assert_eq!(text, "");
    }

    #[test]
    fn parse_and_render_errors_read_as_meilisearch_writes_them() {
        let error = DocumentTemplate::new("{% for %}", 400).expect_err("does not parse");
        assert!(
            error.to_settings_error("default").message.starts_with(
                "`.embedders.default.documentTemplate`: Invalid template: user error: cannot parse template: liquid: "
            ),
            "{error}"
        );
        let template = DocumentTemplate::new("{{doc.missing}}", 400).expect("parses");
        let error = template
            .render(&document(json!({"title": "x"})), &|_| true)
            .expect_err("missing field");
        let message = error.to_document_error("42").message;
        assert!(
            message
                .starts_with("user error: missing field in document `42`: liquid: Unknown index"),
            "{message}"
        );
    }
}
