//! The body of `POST /render-template`, decoded with Meilisearch 1.50's shapes and error
//! codes: a `template` object (`invalid_render_template`) and an optional `input` object
//! (`invalid_render_input`), each with a `kind` that says which of its other fields it
//! needs.
//!
//! Invariants: unknown fields are refused at every level; a field given as `null` is a
//! field left out; an index uid that is no valid uid is refused here, before anything is
//! looked up; problems of the body itself (not an object, no `template`, an unknown
//! top-level field) are `bad_request`.

use std::fmt;
use std::num::NonZeroUsize;

use deserr::Deserr;
use serde_json::Value;

use crate::control::dynamic_search_rules::{IndexUidError, checked_index_uid};
use crate::decode::JsonError;
use crate::errors::codes;

/// The whole body.
#[derive(Debug, Clone, PartialEq, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct RenderRequest {
    /// Which template to render.
    #[deserr(error = JsonError<codes::InvalidRenderTemplate>)]
    pub template: TemplateRequest,
    /// What to render it with; `None`: the template is only shown.
    #[deserr(default, error = JsonError<codes::InvalidRenderInput>)]
    pub input: Option<InputRequest>,
}

/// `template`: where the template comes from, by `kind`.
#[derive(Debug, Clone, PartialEq, Deserr)]
#[deserr(
    error = JsonError<codes::InvalidRenderTemplate>,
    rename_all = camelCase,
    deny_unknown_fields
)]
pub struct TemplateRequest {
    pub kind: TemplateKind,
    #[deserr(default, try_from(Option<String>) = checked_index_uid -> IndexUidError)]
    pub index_uid: Option<String>,
    #[deserr(default)]
    pub embedder: Option<String>,
    #[deserr(default)]
    pub fragment: Option<String>,
    #[deserr(default)]
    pub inline: Option<Value>,
    #[deserr(default)]
    pub document_template_max_bytes: Option<NonZeroUsize>,
}

/// The kinds of template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserr)]
#[deserr(error = JsonError<codes::InvalidRenderTemplate>, rename_all = camelCase)]
pub enum TemplateKind {
    /// An embedder's `documentTemplate`.
    DocumentTemplate,
    /// The index's `chat.documentTemplate`.
    ChatDocumentTemplate,
    /// One of an embedder's `indexingFragments`.
    IndexingFragment,
    /// One of an embedder's `searchFragments`.
    SearchFragment,
    /// A document template given in `inline`.
    InlineDocumentTemplate,
    /// A fragment given in `inline`.
    InlineFragment,
}

impl TemplateKind {
    /// The kind's wire name.
    pub fn name(self) -> &'static str {
        match self {
            TemplateKind::DocumentTemplate => "documentTemplate",
            TemplateKind::ChatDocumentTemplate => "chatDocumentTemplate",
            TemplateKind::IndexingFragment => "indexingFragment",
            TemplateKind::SearchFragment => "searchFragment",
            TemplateKind::InlineDocumentTemplate => "inlineDocumentTemplate",
            TemplateKind::InlineFragment => "inlineFragment",
        }
    }
}

impl fmt::Display for TemplateKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// `input`: what the template is rendered with, by `kind`.
#[derive(Debug, Clone, PartialEq, Deserr)]
#[deserr(
    error = JsonError<codes::InvalidRenderInput>,
    rename_all = camelCase,
    deny_unknown_fields
)]
pub struct InputRequest {
    pub kind: InputKind,
    #[deserr(default, try_from(Option<String>) = checked_index_uid -> IndexUidError)]
    pub index_uid: Option<String>,
    #[deserr(default)]
    pub id: Option<String>,
    #[deserr(default)]
    pub inline: Option<Value>,
}

/// The kinds of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserr)]
#[deserr(error = JsonError<codes::InvalidRenderInput>, rename_all = camelCase)]
pub enum InputKind {
    /// A document stored in an index, by id.
    IndexDocument,
    /// A document given in `inline`.
    InlineDocument,
    /// A search query (`q`, `media`) given in `inline`.
    InlineSearch,
}

impl InputKind {
    /// The kind's wire name.
    pub fn name(self) -> &'static str {
        match self {
            InputKind::IndexDocument => "indexDocument",
            InputKind::InlineDocument => "inlineDocument",
            InputKind::InlineSearch => "inlineSearch",
        }
    }
}

impl fmt::Display for InputKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decode::decode_json_value;
    use crate::errors::{Code, ResponseError};

    fn decode(body: Value) -> Result<RenderRequest, ResponseError> {
        decode_json_value::<RenderRequest, JsonError>(body)
    }

    fn refusal(body: Value) -> (Code, String) {
        let error = decode(body).expect_err("refused");
        (error.code, error.message)
    }

    #[test]
    fn a_full_body_decodes_and_nulls_are_absent_fields() {
        let request = decode(json!({
            "template": {"kind": "inlineFragment", "inline": {"a": "{{q}}"}, "indexUid": null},
            "input": {"kind": "inlineSearch", "inline": {"q": "x"}, "id": null}
        }))
        .expect("decodes");
        assert_eq!(request.template.kind, TemplateKind::InlineFragment);
        assert_eq!(request.template.index_uid, None);
        assert_eq!(request.template.inline, Some(json!({"a": "{{q}}"})));
        let input = request.input.expect("an input");
        assert_eq!(input.kind, InputKind::InlineSearch);
        assert_eq!(input.id, None);
        let request = decode(
            json!({"template": {"kind": "inlineDocumentTemplate", "inline": null,
            "documentTemplateMaxBytes": 12}, "input": null}),
        )
        .expect("decodes");
        assert_eq!(request.template.inline, None);
        assert_eq!(
            request.template.document_template_max_bytes,
            NonZeroUsize::new(12)
        );
        assert_eq!(request.input, None);
    }

    #[test]
    fn problems_of_the_body_itself_are_bad_requests() {
        assert_eq!(
            refusal(json!({})),
            (Code::BadRequest, "Missing field `template`".to_owned())
        );
        assert_eq!(
            refusal(json!({"template": {"kind": "inlineFragment", "inline": 1}, "extra": 1})),
            (
                Code::BadRequest,
                "Unknown field `extra`: expected one of `template`, `input`".to_owned()
            )
        );
    }

    #[test]
    fn problems_inside_template_and_input_carry_their_codes() {
        assert_eq!(
            refusal(json!({"template": {"kind": "bad"}})),
            (
                Code::InvalidRenderTemplate,
                "Unknown value `bad` at `.template.kind`: expected one of `documentTemplate`, \
                 `chatDocumentTemplate`, `indexingFragment`, `searchFragment`, \
                 `inlineDocumentTemplate`, `inlineFragment`"
                    .to_owned()
            )
        );
        assert_eq!(
            refusal(json!({"template": {"kind": "inlineFragment", "indexUid": "a b"}})),
            (
                Code::InvalidRenderTemplate,
                "Invalid value at `.template.indexUid`: `a b` is not a valid index uid. Index uid \
                 can be an integer or a string containing only alphanumeric characters, hyphens \
                 (-) and underscores (_), and can not be more than 512 bytes."
                    .to_owned()
            )
        );
        assert_eq!(
            refusal(json!({"template": {"kind": "inlineFragment"}, "input": {}})),
            (
                Code::InvalidRenderInput,
                "Missing field `kind` inside `.input`".to_owned()
            )
        );
        assert_eq!(
            refusal(json!({"template": {"kind": "inlineFragment"},
                "input": {"kind": "inlineDocument", "id": 1}})),
            (
                Code::InvalidRenderInput,
                "Invalid value type at `.input.id`: expected a string, but found a positive \
                 integer: `1`"
                    .to_owned()
            )
        );
    }
}
