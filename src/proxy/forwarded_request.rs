//! The request a leader sends its remotes for a write it registered, rebuilt from the task
//! (the task is the message): the route and method that registers the same task, the query
//! parameters it carries, and the body — a document payload as the user sent it (its
//! update file, with its format's content type), any other write as JSON.
//!
//! Settings are sent as `PATCH /indexes/{uid}/settings` with the whole change (what
//! Meilisearch 1.50 sends for every settings route; a reset is a `null`).
//!
//! Invariant: only the writes Meilisearch forwards have a forwarded request (documents,
//! settings, index creation, update, deletion and swaps, and 1.50's dynamic search rules);
//! exports, dumps, snapshots, task cancelations and deletions and compactions stay on the
//! instance that registered them.

use serde_json::{Map, Value, json};
use shards::documents::payload::PayloadFormat;

use crate::errors::ResponseError;
use crate::http::Method;
use crate::network::forward::ForwardedWrite;
use crate::outgoing::path_segment;
use crate::tasks::model::{DocumentMethod, KindWithContent};
use crate::tasks::update_files::{UpdateFiles, format_of};

const JSON: &str = "application/json";
/// Where the dynamic search rules are written.
const RULES_PATH: &str = "/dynamic-search-rules";

/// The forwarded request of `kind`, `None` for a task Meilisearch does not forward.
pub async fn forwarded_write(
    kind: &KindWithContent,
    custom_metadata: Option<&str>,
    update_files: &UpdateFiles,
) -> Result<Option<ForwardedWrite>, ResponseError> {
    let mut query = Query::default();
    if let Some(metadata) = custom_metadata {
        query.push("customMetadata", metadata);
    }
    let (method, path, content_type, body) = match kind {
        KindWithContent::DocumentAdditionOrUpdate { .. } => {
            return document_payload(kind, query, update_files).await.map(Some);
        }
        KindWithContent::DocumentDeletion {
            index_uid,
            document_ids,
        } => (
            Method::Post,
            documents_path(index_uid, "/delete-batch"),
            Some(JSON),
            json_bytes(&json!(document_ids))?,
        ),
        KindWithContent::DocumentDeletionByFilter { index_uid, filter } => (
            Method::Post,
            documents_path(index_uid, "/delete"),
            Some(JSON),
            json_bytes(&json!({ "filter": filter }))?,
        ),
        KindWithContent::DocumentEdition {
            index_uid,
            filter,
            context,
            function,
        } => (
            Method::Post,
            documents_path(index_uid, "/edit"),
            Some(JSON),
            json_bytes(&edition_body(filter, context, function))?,
        ),
        KindWithContent::DocumentClear { index_uid } => (
            Method::Delete,
            documents_path(index_uid, ""),
            None,
            Vec::new(),
        ),
        KindWithContent::SettingsUpdate {
            index_uid,
            settings,
            ..
        } => (
            Method::Patch,
            format!("/indexes/{}/settings", path_segment(index_uid)),
            Some(JSON),
            json_bytes(&Value::Object(settings.clone()))?,
        ),
        _ => {
            let write = match index_write(kind)? {
                Some(write) => Some(write),
                None => rules_write(kind)?,
            };
            return Ok(write.map(|write| with_query(write, &query)));
        }
    };
    let write = ForwardedWrite {
        method,
        path_and_query: path,
        content_type: content_type.map(str::to_owned),
        body,
    };
    Ok(Some(with_query(write, &query)))
}

/// The dynamic search rules' writes (Meilisearch 1.50 forwards them): a rule's patch as
/// `PATCH /dynamic-search-rules/{uid}`, its deletion as `DELETE`, and the clear as `DELETE
/// /dynamic-search-rules`.
fn rules_write(kind: &KindWithContent) -> Result<Option<ForwardedWrite>, ResponseError> {
    let (method, path, body) = match kind {
        KindWithContent::DsrUpdate {
            rule_uid,
            update: Some(patch),
        } => (
            Method::Patch,
            format!("{RULES_PATH}/{}", path_segment(rule_uid)),
            Some(Value::Object(patch.to_json())),
        ),
        KindWithContent::DsrUpdate {
            rule_uid,
            update: None,
        } => (
            Method::Delete,
            format!("{RULES_PATH}/{}", path_segment(rule_uid)),
            None,
        ),
        KindWithContent::DsrClear => (Method::Delete, RULES_PATH.to_owned(), None),
        _ => return Ok(None),
    };
    json_write(method, path, body).map(Some)
}

/// The index creation, update, deletion and swap requests.
fn index_write(kind: &KindWithContent) -> Result<Option<ForwardedWrite>, ResponseError> {
    let (method, path, body) = match kind {
        KindWithContent::IndexCreation {
            index_uid,
            primary_key,
        } => (
            Method::Post,
            "/indexes".to_owned(),
            Some(json!({ "uid": index_uid, "primaryKey": primary_key })),
        ),
        KindWithContent::IndexUpdate {
            index_uid,
            primary_key,
            new_index_uid,
        } => {
            let mut body = Map::new();
            if let Some(primary_key) = primary_key {
                body.insert("primaryKey".into(), json!(primary_key));
            }
            if let Some(new_uid) = new_index_uid {
                body.insert("uid".into(), json!(new_uid));
            }
            let path = format!("/indexes/{}", path_segment(index_uid));
            (Method::Patch, path, Some(Value::Object(body)))
        }
        KindWithContent::IndexDeletion { index_uid } => (
            Method::Delete,
            format!("/indexes/{}", path_segment(index_uid)),
            None,
        ),
        KindWithContent::IndexSwap { swaps } => {
            let swaps: Vec<Value> = swaps
                .iter()
                .map(|swap| json!({ "indexes": [swap.indexes.0, swap.indexes.1], "rename": swap.rename }))
                .collect();
            (Method::Post, "/swap-indexes".to_owned(), Some(json!(swaps)))
        }
        _ => return Ok(None),
    };
    json_write(method, path, body).map(Some)
}

/// A forwarded request with a JSON body, or none.
fn json_write(
    method: Method,
    path: String,
    body: Option<Value>,
) -> Result<ForwardedWrite, ResponseError> {
    let (content_type, body) = match body {
        Some(body) => (Some(JSON.to_owned()), json_bytes(&body)?),
        None => (None, Vec::new()),
    };
    Ok(ForwardedWrite {
        method,
        path_and_query: path,
        content_type,
        body,
    })
}

/// A document addition: the update file as the user sent it.
async fn document_payload(
    kind: &KindWithContent,
    mut query: Query,
    update_files: &UpdateFiles,
) -> Result<ForwardedWrite, ResponseError> {
    let KindWithContent::DocumentAdditionOrUpdate {
        index_uid,
        primary_key,
        method,
        content_file,
        skip_creation,
        ..
    } = kind
    else {
        return Err(ResponseError::internal("not a document addition"));
    };
    if let Some(primary_key) = primary_key {
        query.push("primaryKey", primary_key);
    }
    if *skip_creation {
        query.push("skipCreation", "true");
    }
    let format = format_of(content_file)
        .ok_or_else(|| ResponseError::internal(format!("update file `{content_file}`")))?;
    let content_type = match format {
        PayloadFormat::Json => JSON.to_owned(),
        PayloadFormat::Ndjson => "application/x-ndjson".to_owned(),
        PayloadFormat::Csv { delimiter } => {
            query.push("csvDelimiter", &char::from(delimiter).to_string());
            "text/csv".to_owned()
        }
    };
    let path = update_files.path(content_file);
    let body = crate::runtime::blocking::run(move || std::fs::read(path))
        .await
        .map_err(ResponseError::internal)?;
    let method = match method {
        DocumentMethod::Replace => Method::Post,
        DocumentMethod::Update => Method::Put,
    };
    let write = ForwardedWrite {
        method,
        path_and_query: documents_path(index_uid, ""),
        content_type: Some(content_type),
        body,
    };
    Ok(with_query(write, &query))
}

fn edition_body(
    filter: &Option<Value>,
    context: &Option<Map<String, Value>>,
    function: &str,
) -> Value {
    let mut body = Map::new();
    body.insert("function".into(), json!(function));
    if let Some(filter) = filter {
        body.insert("filter".into(), filter.clone());
    }
    if let Some(context) = context {
        body.insert("context".into(), Value::Object(context.clone()));
    }
    Value::Object(body)
}

fn documents_path(index_uid: &str, tail: &str) -> String {
    format!("/indexes/{}/documents{tail}", path_segment(index_uid))
}

/// An index uid in a path (uids are ASCII letters, digits, `-` and `_`: nothing to escape,
/// but a path is never built from unchecked text).
fn json_bytes(value: &Value) -> Result<Vec<u8>, ResponseError> {
    serde_json::to_vec(value).map_err(ResponseError::internal)
}

/// The query parameters of a forwarded write.
#[derive(Default)]
struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    fn push(&mut self, name: &str, value: &str) {
        self.pairs.push((name.to_owned(), value.to_owned()));
    }
}

/// `write` with the query string of `query` appended to its path.
fn with_query(mut write: ForwardedWrite, query: &Query) -> ForwardedWrite {
    if !query.pairs.is_empty() {
        let mut serializer = url::form_urlencoded::Serializer::new(String::new());
        serializer.extend_pairs(query.pairs.iter());
        write.path_and_query.push('?');
        write.path_and_query.push_str(&serializer.finish());
    }
    write
}
