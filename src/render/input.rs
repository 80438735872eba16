//! Finding what `POST /render-template` renders its template with: a document stored in an
//! index (fetched afterwards, from its shard), a document given inline, or a search query
//! (`q` and `media`) given inline.
//!
//! Order, as Meilisearch 1.50 checks (the first failure is the answer): the input's index
//! (reused when it is the template's), the kind's feature gate, the kind's fields one by
//! one, then the inline value.
//!
//! Invariants: a stored document is rendered with its index's searchable attributes (for
//! `field.is_searchable`), an inline one as if every field were searchable; an inline value
//! that is no JSON object is refused with serde's own explanation, as Meilisearch reads it.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::error::{FetchInputError, input_index_not_found};
use super::gates::check_input_kind;
use super::parameters::{refuse, require};
use super::request::{InputKind, InputRequest};
use super::template::IndexLookup;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;

/// The field names the messages give.
const INDEX_UID: &str = "index_uid";
/// The name the "missing" message of `indexDocument` gives the index uid.
const INDEX_UID_CAMEL_CASE: &str = "indexUid";
const ID: &str = "id";
const INLINE: &str = "inline";

/// What a template renders.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A document; `searchable` lists its searchable fields (`None`: every field).
    Document {
        document: Map<String, Value>,
        searchable: Option<Vec<String>>,
    },
    /// A search query.
    Search {
        q: Option<String>,
        media: Option<Value>,
    },
}

/// The input, or the stored document still to fetch.
#[derive(Debug, Clone, PartialEq)]
pub enum InputPlan {
    /// Document `id` of `record`.
    Stored {
        record: Arc<IndexRecord>,
        id: String,
    },
    Ready(Input),
}

/// The input `request` names. `template_index` is the index the template was read from
/// (reused when the input names it too), `lookup` finds the others.
pub fn plan_input(
    request: &InputRequest,
    features: RuntimeFeatures,
    template_index: Option<&Arc<IndexRecord>>,
    lookup: IndexLookup<'_>,
) -> Result<InputPlan, ResponseError> {
    let index = match &request.index_uid {
        Some(uid) => Some(input_index(uid, template_index, lookup)?),
        None => None,
    };
    check_input_kind(request.kind, features).map_err(FetchInputError::Feature)?;
    let plan = match request.kind {
        InputKind::IndexDocument => stored_document(request, index)?,
        InputKind::InlineDocument => inline_document(request)?,
        InputKind::InlineSearch => inline_search(request)?,
    };
    Ok(plan)
}

/// The input's index: the template's when it is the same, else the one named `uid`.
fn input_index(
    uid: &str,
    template_index: Option<&Arc<IndexRecord>>,
    lookup: IndexLookup<'_>,
) -> Result<Arc<IndexRecord>, ResponseError> {
    match template_index {
        Some(record) if record.uid == uid => Ok(Arc::clone(record)),
        _ => lookup(uid).ok_or_else(|| input_index_not_found(uid)),
    }
}

/// The value of a field `request`'s kind needs.
fn required<'request, Field>(
    request: &InputRequest,
    value: &'request Option<Field>,
    name: &'static str,
) -> Result<&'request Field, FetchInputError> {
    require(value, name).map_err(|violation| FetchInputError::Parameter {
        kind: request.kind,
        violation,
    })
}

/// Checks that a field `request`'s kind refuses is absent.
fn refused<Field>(
    request: &InputRequest,
    value: &Option<Field>,
    name: &'static str,
) -> Result<(), FetchInputError> {
    refuse(value, name).map_err(|violation| FetchInputError::Parameter {
        kind: request.kind,
        violation,
    })
}

/// `indexDocument`: the document `id` of the input's index.
fn stored_document(
    request: &InputRequest,
    index: Option<Arc<IndexRecord>>,
) -> Result<InputPlan, FetchInputError> {
    let record = required(request, &index, INDEX_UID_CAMEL_CASE)?;
    let id = required(request, &request.id, ID)?;
    refused(request, &request.inline, INLINE)?;
    Ok(InputPlan::Stored {
        record: Arc::clone(record),
        id: id.clone(),
    })
}

/// `inlineDocument`: a document given as a JSON object.
fn inline_document(request: &InputRequest) -> Result<InputPlan, FetchInputError> {
    refused(request, &request.index_uid, INDEX_UID)?;
    refused(request, &request.id, ID)?;
    let inline = required(request, &request.inline, INLINE)?;
    let document = json_object(inline).map_err(FetchInputError::InlineDocumentNotAnObject)?;
    Ok(InputPlan::Ready(Input::Document {
        document,
        searchable: None,
    }))
}

/// `inlineSearch`: a query given as a JSON object, of which `q` (a string) and `media`
/// (any value) are read.
fn inline_search(request: &InputRequest) -> Result<InputPlan, FetchInputError> {
    refused(request, &request.index_uid, INDEX_UID)?;
    refused(request, &request.id, ID)?;
    let inline = required(request, &request.inline, INLINE)?;
    let mut search = json_object(inline).map_err(FetchInputError::InlineSearchNotAnObject)?;
    let q = match search.remove("q") {
        None => None,
        Some(Value::String(q)) => Some(q),
        Some(_) => return Err(FetchInputError::SearchQueryNotAString),
    };
    Ok(InputPlan::Ready(Input::Search {
        q,
        media: search.remove("media"),
    }))
}

/// `value` as a JSON object, or serde's explanation of why it is none, as serde words it
/// reading the value's compact text.
fn json_object(value: &Value) -> Result<Map<String, Value>, String> {
    let text = serde_json::to_string(value).map_err(|error| error.to_string())?;
    serde_json::from_str(&text).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use time::OffsetDateTime;

    use super::*;
    use crate::render::parameters::Violation;

    fn index(uid: &str) -> Arc<IndexRecord> {
        Arc::new(IndexRecord::new(
            uid,
            uid.to_owned(),
            1,
            None,
            OffsetDateTime::UNIX_EPOCH,
        ))
    }

    fn request(kind: InputKind) -> InputRequest {
        InputRequest {
            kind,
            index_uid: None,
            id: None,
            inline: None,
        }
    }

    fn multimodal() -> RuntimeFeatures {
        RuntimeFeatures {
            multimodal: true,
            ..RuntimeFeatures::default()
        }
    }

    fn plan(
        request: &InputRequest,
        template_index: Option<&Arc<IndexRecord>>,
    ) -> Result<InputPlan, ResponseError> {
        let books = index("books");
        let lookup = move |uid: &str| (uid == "books").then(|| Arc::clone(&books));
        plan_input(request, multimodal(), template_index, &lookup)
    }

    #[test]
    fn a_stored_document_is_planned_in_the_named_index_the_template_s_reused() {
        let dogs = index("dogs");
        let mut stored = request(InputKind::IndexDocument);
        stored.index_uid = Some("dogs".to_owned());
        stored.id = Some("7".to_owned());
        match plan(&stored, Some(&dogs)).expect("planned") {
            InputPlan::Stored { record, id } => {
                assert!(Arc::ptr_eq(&record, &dogs));
                assert_eq!(id, "7");
            }
            other => panic!("{other:?}"),
        }
        stored.index_uid = Some("books".to_owned());
        assert!(
            matches!(plan(&stored, Some(&dogs)), Ok(InputPlan::Stored { record, .. }) if record.uid == "books")
        );
        stored.index_uid = Some("nope".to_owned());
        assert_eq!(
            plan(&stored, None).expect_err("no index"),
            input_index_not_found("nope")
        );
        stored.index_uid = None;
        assert_eq!(
            plan(&stored, None).expect_err("no index"),
            ResponseError::from(FetchInputError::Parameter {
                kind: InputKind::IndexDocument,
                violation: Violation::Missing("indexUid"),
            })
        );
    }

    #[test]
    fn inline_inputs_are_objects_and_a_query_s_q_is_a_string() {
        let mut document = request(InputKind::InlineDocument);
        document.inline = Some(json!({"name": "iko"}));
        assert_eq!(
            plan(&document, None).expect("planned"),
            InputPlan::Ready(Input::Document {
                document: serde_json::from_value(json!({"name": "iko"})).expect("an object"),
                searchable: None,
            })
        );
        document.index_uid = Some("books".to_owned());
        assert_eq!(
            plan(&document, None).expect_err("refused").message,
            "error while fetching input: parameter `index_uid` disallowed for kind `inlineDocument`"
        );
        let mut search = request(InputKind::InlineSearch);
        search.inline = Some(json!({"q": "hello", "media": null, "filter": "ignored"}));
        assert_eq!(
            plan(&search, None).expect("planned"),
            InputPlan::Ready(Input::Search {
                q: Some("hello".to_owned()),
                media: Some(Value::Null),
            })
        );
        search.inline = Some(json!({"q": 1}));
        assert_eq!(
            plan(&search, None).expect_err("refused"),
            ResponseError::from(FetchInputError::SearchQueryNotAString)
        );
        let gated = plan_input(&search, RuntimeFeatures::default(), None, &|_| None);
        assert_eq!(
            gated.expect_err("gated").code,
            crate::errors::Code::FeatureNotEnabled
        );
    }

    #[test]
    fn a_value_that_is_no_object_is_explained_as_serde_reads_it() {
        assert_eq!(
            json_object(&json!("that's not an object, that's a string")),
            Err(
                "invalid type: string \"that's not an object, that's a string\", expected a map at line 1 column 39"
                    .to_owned()
            )
        );
        assert_eq!(
            json_object(&json!([1])),
            Err("invalid type: sequence, expected a map at line 1 column 0".to_owned())
        );
        assert_eq!(
            json_object(&json!({"b": 1, "a": 2})).map(|map| map.keys().cloned().collect()),
            Ok(vec!["b".to_owned(), "a".to_owned()])
        );
    }
}
