//! Answering one `_meiliSearchInIndex` call of the model: a real search, run as the caller's
//! key allows, whose documents are rendered for the model with the index's
//! `chat.documentTemplate` (Liquid, cut at `chat.documentTemplateMaxBytes`, through the
//! embedders' template rendering).
//!
//! As Meilisearch 1.41 runs it: the arguments (`index_uid`, `q`, `filter`) are read; the
//! index is looked up; the request's token is authorized again for `search` on that index
//! (an API key's index scope, a tenant token's rules — its filter is AND-ed with the
//! model's); the query is the index's `chat.searchParameters` with the model's `q` and
//! `filter`; it waits for a permit of the core's search queue. The model is answered with
//! the rendered documents, one per line; the client may get the documents themselves
//! (their displayed attributes) as sources.
//!
//! Invariants: a refusal the search engine makes of the query (a field that cannot be
//! filtered, sorted or searched) is the model's answer, so it can correct itself; any other
//! failure (a filter that does not parse, an index the caller cannot reach) answers `the
//! search tool call failed with <message>` and is also reported to the client as an error
//! event; arguments that do not parse are answered with serde's message.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::context::ChatContext;
use super::figures::{INTERNAL_SEARCH, record_search};
use crate::auth::{Action, AuthContext, AuthRequest, authenticate};
use crate::coordinator::catalog::IndexRecord;
use crate::decode::JsonError;
use crate::embedders::DocumentTemplate;
use crate::errors::{Code, ResponseError};
use crate::search::parameters::SearchBody;
use crate::search::prepare::{EngineErrors, fuse_filters, prepare_with};

/// The codes of the refusals the search engine makes of a query (its user errors).
const ENGINE_REFUSALS: [Code; 5] = [
    Code::InvalidSearchFilter,
    Code::InvalidSearchSort,
    Code::InvalidSearchDistinct,
    Code::InvalidSearchAttributesToSearchOn,
    Code::InvalidSearchFacets,
];

/// What answering one call gave.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchToolOutcome {
    /// The tool message's content for the model.
    pub answer: String,
    /// The documents found (displayed attributes), when a search ran.
    pub sources: Option<Vec<Value>>,
    /// A failure to report to the client as an error event.
    pub error: Option<ResponseError>,
}

/// The arguments of a `_meiliSearchInIndex` call.
#[derive(Deserialize)]
struct SearchInIndexParameters {
    index_uid: String,
    q: Option<String>,
    filter: Option<String>,
}

/// How a search ended.
enum Searched {
    /// The documents (displayed attributes) and the text for the model.
    Found { sources: Vec<Value>, text: String },
    /// The engine refused the query: its message is the answer.
    Refused(String),
}

/// Answers the call whose arguments are `arguments`.
pub async fn answer_call(context: &ChatContext, arguments: &str) -> SearchToolOutcome {
    let parameters: SearchInIndexParameters = match serde_json::from_str(arguments) {
        Ok(parameters) => parameters,
        Err(error) => {
            return SearchToolOutcome {
                answer: error.to_string(),
                sources: None,
                error: None,
            };
        }
    };
    match search(context, parameters).await {
        Ok(Searched::Found { sources, text }) => SearchToolOutcome {
            answer: text,
            sources: Some(sources),
            error: None,
        },
        Ok(Searched::Refused(message)) => SearchToolOutcome {
            answer: message,
            sources: Some(Vec::new()),
            error: None,
        },
        Err(error) => SearchToolOutcome {
            answer: format!("the search tool call failed with {}", error.message),
            sources: None,
            error: Some(error),
        },
    }
}

/// Runs the search the model asked for.
async fn search(
    context: &ChatContext,
    parameters: SearchInIndexParameters,
) -> Result<Searched, ResponseError> {
    let index_uid = parameters.index_uid;
    let record = context.coordinator.index(&index_uid)?;
    let mut body = query_body(&record, parameters.q, parameters.filter)?;
    let access = authorize_search(context, &index_uid)?;
    if let Some(rules) = access.index_search_rules(&index_uid) {
        body.filter = fuse_filters(rules.filter, body.filter.take());
    }
    // A filter that does not parse fails the call; one naming what cannot be filtered is
    // refused by the engine (Meilisearch parses filters before it searches).
    let parsable = body
        .filter
        .as_ref()
        .is_none_or(|filter| shards::filter::Filter::from_json(filter).is_ok());
    let _permit = context.search_queue.permit().await?;
    let features = context.control.features();
    let filter_shards = context.coordinator.filter_shards();
    let prepared = match prepare_with(&record, body, features, filter_shards, EngineErrors::Plain) {
        Ok(prepared) => prepared,
        Err(error) if parsable && ENGINE_REFUSALS.contains(&error.code) => {
            return Ok(Searched::Refused(error.message));
        }
        Err(error) => return Err(error),
    };
    let outcome = crate::search::execute::execute(&context.coordinator, &record, &prepared).await?;
    record_search(INTERNAL_SEARCH);
    let documents: Vec<Map<String, Value>> = outcome
        .hits
        .iter()
        .map(|hit| hit.document.clone())
        .collect();
    let request_uid = uuid::Uuid::now_v7().to_string();
    let mut result =
        crate::search::response::search_result(&record, &prepared, outcome, 0, &request_uid);
    let sources = match result.remove("hits") {
        Some(Value::Array(hits)) => hits,
        _ => Vec::new(),
    };
    let text = render_documents(&record, &documents)?;
    Ok(Searched::Found { sources, text })
}

/// The query: the index's `chat.searchParameters`, then the model's `q` and `filter`.
fn query_body(
    record: &IndexRecord,
    q: Option<String>,
    filter: Option<String>,
) -> Result<SearchBody, ResponseError> {
    let mut query = match &record.settings.chat_search_parameters {
        Value::Object(parameters) => parameters.clone(),
        _ => Map::new(),
    };
    query.insert("q".to_owned(), q.map_or(Value::Null, Value::String));
    query.insert(
        "filter".to_owned(),
        filter.map_or(Value::Null, Value::String),
    );
    crate::decode::json::decode_json_value::<SearchBody, JsonError>(Value::Object(query))
}

/// The caller's access for a `search` on `index_uid`, from the request's own token.
fn authorize_search(context: &ChatContext, index_uid: &str) -> Result<AuthContext, ResponseError> {
    let keys = context.control.keys();
    let request = AuthRequest {
        authorization: context.authorization.as_deref(),
        action: Action::Search,
        index_uid: Some(index_uid),
    };
    authenticate(&keys, &request, time::OffsetDateTime::now_utc()).map_err(ResponseError::from)
}

/// Each document rendered with the index's chat template, one per line.
fn render_documents(
    record: &IndexRecord,
    documents: &[Map<String, Value>],
) -> Result<String, ResponseError> {
    let settings = &record.settings;
    let template_error = |error: &dyn std::fmt::Display| {
        ResponseError::new(Code::InvalidChatSettingDocumentTemplate, error.to_string())
    };
    let template = DocumentTemplate::new(
        &settings.chat_document_template,
        settings.chat_document_template_max_bytes,
    )
    .map_err(|error| template_error(&error))?;
    let searchable = |field: &str| {
        crate::embedders::template::is_searchable(settings.searchable_attributes.as_deref(), field)
    };
    let mut renders = Vec::with_capacity(documents.len());
    for document in documents {
        renders.push(
            template
                .render(document, &searchable)
                .map_err(|error| template_error(&error))?,
        );
    }
    Ok(renders.join("\n"))
}
