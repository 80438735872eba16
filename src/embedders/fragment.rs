//! A fragment of a multimodal `rest` embedder (`indexingFragments`, `searchFragments`): a
//! JSON value whose every string is a Liquid template. An indexing fragment renders a
//! document (`doc`, without the reserved `_vectors`, `_geo` and `_geojson`); a search
//! fragment renders a query (`q` and `media`, each only when the query has it). The
//! rendered value takes the `{{fragment}}` placeholder of the embedder's `request`.
//!
//! A fragment *applies* to a document or query when it renders: Liquid refuses to read a
//! variable or a field that is not there, so a fragment that reads what the document or
//! query lacks does not render, and nothing is embedded for it (Meilisearch's rule).
//!
//! Invariants: every string of the value is parsed once, when the fragment is built; a
//! rendered value has the template's shape with each string replaced by its rendering;
//! error messages are Meilisearch's (`in `.indexingFragments.name.path`, error while
//! parsing template: …` for the settings; its JSON templates' wording, the path quoted
//! twice, for `POST /render-template`).

use std::fmt;

use liquid::model::KString;
use serde_json::{Map, Value};

use super::ordered_object::OrderedObject;
use super::template::{TemplateError, doc_globals};
use super::value_path::{PathComponent, ValuePath, path_with_root, set_at};

/// A parsed fragment.
pub struct FragmentTemplate {
    value: Value,
    templates: Vec<(ValuePath, liquid::Template)>,
}

impl fmt::Debug for FragmentTemplate {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("FragmentTemplate")
            .field("value", &self.value)
            .finish_non_exhaustive()
    }
}

/// Why a fragment did not parse or render: the string's path and Liquid's explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentError {
    pub path: ValuePath,
    pub reason: String,
}

impl FragmentError {
    /// The parse error of the fragment at `root` (`.indexingFragments.name`).
    pub fn parsing_message(&self, root: &str) -> String {
        format!(
            "in {}, error while parsing template: {}",
            path_with_root(root, &self.path),
            self.reason
        )
    }

    /// The parse error as Meilisearch's JSON templates word it: the path below `root`
    /// quoted twice, or no path at all for the fragment's root value.
    pub fn parsing_error(&self, root: &str) -> String {
        self.stage_error(root, "parsing")
    }

    /// The render error as Meilisearch's JSON templates word it (see
    /// [`FragmentError::parsing_error`]).
    pub fn rendering_error(&self, root: &str) -> String {
        self.stage_error(root, "rendering")
    }

    fn stage_error(&self, root: &str, stage: &str) -> String {
        if self.path.is_empty() {
            format!("error while {stage} template: {}", self.reason)
        } else {
            format!(
                "in `{}`, error while {stage} template: {}",
                path_with_root(root, &self.path),
                self.reason
            )
        }
    }
}

/// The error of a document whose fields Liquid cannot take (at the fragment's root).
fn globals_error(error: &TemplateError) -> FragmentError {
    let reason = match error {
        TemplateError::Parse(reason) | TemplateError::Render(reason) => reason.clone(),
    };
    FragmentError {
        path: Vec::new(),
        reason,
    }
}

/// Collects the templates of every string below `value`.
fn parse_strings(
    value: &Value,
    path: &mut ValuePath,
    parser: &liquid::Parser,
    templates: &mut Vec<(ValuePath, liquid::Template)>,
) -> Result<(), FragmentError> {
    match value {
        Value::String(text) => {
            let template = parser.parse(text).map_err(|error| FragmentError {
                path: path.clone(),
                reason: error.to_string(),
            })?;
            templates.push((path.clone(), template));
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(PathComponent::Index(index));
                parse_strings(item, path, parser, templates)?;
                path.pop();
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                path.push(PathComponent::Key(key.clone()));
                parse_strings(item, path, parser, templates)?;
                path.pop();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

impl FragmentTemplate {
    /// Parses every string of `value` with Liquid's standard library.
    pub fn new(value: Value) -> Result<Self, FragmentError> {
        let parser = liquid::ParserBuilder::with_stdlib()
            .build()
            .map_err(|error| FragmentError {
                path: Vec::new(),
                reason: error.to_string(),
            })?;
        let mut templates = Vec::new();
        parse_strings(&value, &mut Vec::new(), &parser, &mut templates)?;
        Ok(FragmentTemplate { value, templates })
    }

    /// The fragment as configured.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The value with every string rendered against `globals`.
    fn render(&self, globals: &OrderedObject) -> Result<Value, FragmentError> {
        let mut rendered = self.value.clone();
        for (path, template) in &self.templates {
            let text = template.render(globals).map_err(|error| FragmentError {
                path: path.clone(),
                reason: error.to_string(),
            })?;
            set_at(&mut rendered, path, Value::String(text));
        }
        Ok(rendered)
    }

    /// The fragment rendered for `document`; `None` when it does not apply (it reads what
    /// the document lacks).
    pub fn render_document(&self, document: &Map<String, Value>) -> Option<Value> {
        self.try_render_document(document).ok()
    }

    /// The fragment rendered for `document`, or why it does not apply.
    pub fn try_render_document(
        &self,
        document: &Map<String, Value>,
    ) -> Result<Value, FragmentError> {
        let globals = doc_globals(document).map_err(|error| globals_error(&error))?;
        self.render(&globals)
    }

    /// The fragment rendered for a query with `q` and `media`; `None` when it does not
    /// apply.
    pub fn render_search(&self, q: Option<&str>, media: Option<&Value>) -> Option<Value> {
        self.try_render_search(q, media).ok()
    }

    /// The fragment rendered for a query with `q` and `media`, or why it does not apply.
    pub fn try_render_search(
        &self,
        q: Option<&str>,
        media: Option<&Value>,
    ) -> Result<Value, FragmentError> {
        let mut globals = OrderedObject::default();
        if let Some(q) = q {
            globals.push(
                KString::from_static("q"),
                Box::new(liquid::model::Value::scalar(q.to_owned())),
            );
        }
        if let Some(media) = media {
            let media = liquid::model::to_value(media).map_err(|error| FragmentError {
                path: Vec::new(),
                reason: error.to_string(),
            })?;
            globals.push(KString::from_static("media"), Box::new(media));
        }
        self.render(&globals)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn document(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    #[test]
    fn every_string_renders_and_the_shape_stays() {
        let fragment = FragmentTemplate::new(json!({
            "type": "image_url", "url": "{{doc.picture}}", "detail": 3, "tags": ["{{doc.kind}}", "x"]
        }))
        .expect("parses");
        let rendered = fragment
            .render_document(&document(json!({"picture": "a.png", "kind": "cat"})))
            .expect("applies");
        assert_eq!(
            rendered,
            json!({"type": "image_url", "url": "a.png", "detail": 3, "tags": ["cat", "x"]})
        );
    }

    #[test]
    fn a_fragment_reading_a_missing_field_does_not_apply() {
        let fragment = FragmentTemplate::new(json!({"url": "{{doc.picture}}"})).expect("parses");
        assert_eq!(
            fragment.render_document(&document(json!({"title": "no picture"}))),
            None
        );
        // The reserved fields are not part of `doc`.
        let vectors = FragmentTemplate::new(json!("{{doc._vectors}}")).expect("parses");
        assert_eq!(
            vectors.render_document(&document(json!({"_vectors": {"e": [1]}}))),
            None
        );
    }

    #[test]
    fn search_fragments_see_q_and_media_only_when_given() {
        let text = FragmentTemplate::new(json!({"text": "{{q}}"})).expect("parses");
        let image = FragmentTemplate::new(json!({"image": "{{media.url}}"})).expect("parses");
        assert_eq!(
            text.render_search(Some("hello"), None),
            Some(json!({"text": "hello"}))
        );
        assert_eq!(image.render_search(Some("hello"), None), None);
        let media = json!({"url": "b.png"});
        assert_eq!(text.render_search(None, Some(&media)), None);
        assert_eq!(
            image.render_search(None, Some(&media)),
            Some(json!({"image": "b.png"}))
        );
        assert_eq!(image.render_search(None, Some(&json!({"other": 1}))), None);
    }

    #[test]
    fn render_errors_name_the_string_and_liquid_s_reason() {
        let fragment =
            FragmentTemplate::new(json!({"a": ["{{doc.name}}", {"b": "{{doc.breed}}"}]}))
                .expect("parses");
        let error = fragment
            .try_render_document(&document(json!({"name": "kefir"})))
            .expect_err("no breed");
        assert!(
            error.rendering_error("").starts_with(
                "in ``.a[1].b``, error while rendering template: liquid: Unknown index"
            ),
            "{error:?}"
        );
        let whole = FragmentTemplate::new(json!("{{q}}")).expect("parses");
        let error = whole.try_render_search(None, None).expect_err("no q");
        assert!(
            error
                .rendering_error("")
                .starts_with("error while rendering template: liquid: Unknown variable"),
            "{error:?}"
        );
        let error = FragmentTemplate::new(json!("{{ q")).expect_err("does not parse");
        assert!(
            error
                .parsing_error("")
                .starts_with("error while parsing template: liquid: "),
            "{error:?}"
        );
    }

    #[test]
    fn a_parse_error_names_the_string_in_meilisearch_words() {
        let error = FragmentTemplate::new(json!({"a": ["{% for %}"]})).expect_err("invalid");
        let message = error.parsing_message(".indexingFragments.f");
        assert!(
            message.starts_with(
                "in `.indexingFragments.f.a[0]`, error while parsing template: liquid: "
            ),
            "{message}"
        );
    }
}
