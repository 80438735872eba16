//! `/indexes/{index_uid}/documents`, the writes: additions and updates (the payload is
//! checked, written to a synced update file, then registered), deletions (one, a batch, by
//! filter, all) and editions. The reads are in [`super::document_reads`].

use deserr::Deserr;
use serde_json::Value;
use shards::documents::payload::{PayloadFormat, csv_delimiter_from_parameter};
use shards::filter::Filter;

use crate::auth::AuthContext;
use crate::control::features::RuntimeFeatures;
use crate::decode::{JsonError, Param, QueryError};
use crate::errors::documents_error;
use crate::errors::{Code, ResponseError, codes};
use crate::host::edition::check_compiles;
use crate::http::{Request, Response};
use crate::routes::indexes::{checked_path_uid, register_write, write_headers};
use crate::routes::{Services, body};
use crate::search::prepare::check_filter_features;
use crate::tasks::KindWithContent;
use crate::tasks::model::DocumentMethod;

/// The discussion `feature_not_enabled` points to for `POST /documents/edit`.
const EDIT_DOCUMENTS_BY_FUNCTION_LINK: &str = "https://github.com/orgs/meilisearch/discussions/762";
/// The media types a document payload may have.
const PAYLOAD_TYPES: [&str; 3] = ["application/json", "application/x-ndjson", "text/csv"];

#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct AdditionQuery {
    #[deserr(default, error = QueryError<codes::InvalidIndexPrimaryKey>)]
    primary_key: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentCsvDelimiter>)]
    csv_delimiter: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidIndexCustomMetadata>)]
    custom_metadata: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSkipCreation>)]
    skip_creation: Option<Param<bool>>,
}

#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct MetadataQuery {
    #[deserr(default, error = QueryError<codes::InvalidIndexCustomMetadata>)]
    custom_metadata: Option<String>,
}

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct DeleteByFilterBody {
    #[deserr(error = JsonError<codes::InvalidDocumentFilter>, missing_field_error = JsonError::<codes::MissingDocumentFilter>::missing_field)]
    filter: Value,
}

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct EditionBody {
    #[deserr(default, error = JsonError<codes::InvalidDocumentFilter>)]
    filter: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidDocumentEditionContext>)]
    context: Option<Value>,
    #[deserr(error = JsonError<codes::InvalidDocumentEditionFunctionFilter>, missing_field_error = JsonError::<codes::MissingDocumentEditionFunction>::missing_field)]
    function: String,
}

/// `POST` (replace) and `PUT` (update) `/indexes/{index_uid}/documents`.
///
/// The payload arrives streamed into an upload (see [`crate::routes::payload`]).
pub async fn add(
    services: &Services,
    request: Request,
    index_uid: &str,
    context: &AuthContext,
    method: DocumentMethod,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let query = crate::decode::decode_query::<AdditionQuery, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    let format = payload_format(&request, query.csv_delimiter.as_deref())?;
    let headers = write_headers(services, &request)?;
    let dry_run = headers.replication.dry_run;
    let (content_file, documents_count, content_bytes) =
        crate::routes::payload::store_payload(services, request, format).await?;
    let kind = KindWithContent::DocumentAdditionOrUpdate {
        index_uid: index_uid.to_owned(),
        primary_key: query.primary_key,
        method,
        content_file: content_file.clone(),
        documents_count,
        content_bytes,
        allow_index_creation: context.allow_index_creation(index_uid),
        skip_creation: query.skip_creation.is_some_and(|flag| flag.0),
    };
    let registered = register_write(services, headers, kind, query.custom_metadata).await;
    // A dry run stores no task, so nothing will ever read the payload.
    if registered.is_err() || dry_run {
        let _ = services.update_files.remove(&content_file);
    }
    registered
}

/// The payload format from the `Content-Type` header and `csvDelimiter`.
fn payload_format(
    request: &Request,
    csv_delimiter: Option<&str>,
) -> Result<PayloadFormat, ResponseError> {
    let Some(raw) = request.headers.get("content-type") else {
        return Err(crate::decode::json::missing_content_type(&PAYLOAD_TYPES));
    };
    let shown = String::from_utf8_lossy(raw).to_string();
    let media_type = shown
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let format = match media_type.as_str() {
        "application/json" => PayloadFormat::Json,
        "application/x-ndjson" => PayloadFormat::Ndjson,
        "text/csv" => {
            let delimiter = match csv_delimiter {
                Some(text) => csv_delimiter_from_parameter(text).map_err(documents_error)?,
                None => b',',
            };
            return Ok(PayloadFormat::Csv { delimiter });
        }
        _ => {
            return Err(crate::decode::json::invalid_content_type(
                &shown,
                &PAYLOAD_TYPES,
            ));
        }
    };
    if csv_delimiter.is_some() {
        return Err(ResponseError::new(
            Code::InvalidContentType,
            format!(
                "The Content-Type `{media_type}` does not support the use of a csv delimiter. The csv delimiter can only be used with the Content-Type `text/csv`."
            ),
        ));
    }
    Ok(format)
}

/// The `customMetadata` query parameter of a write route.
pub fn custom_metadata(request: &Request) -> Result<Option<String>, ResponseError> {
    crate::decode::decode_query::<MetadataQuery, QueryError>(request.query.as_deref().unwrap_or(""))
        .map(|query| query.custom_metadata)
}

/// `DELETE /indexes/{index_uid}/documents`.
pub async fn clear(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let metadata = custom_metadata(request)?;
    let kind = KindWithContent::DocumentClear {
        index_uid: index_uid.to_owned(),
    };
    register_write(services, write_headers(services, request)?, kind, metadata).await
}

/// `DELETE /indexes/{index_uid}/documents/{document_id}`.
pub async fn delete_one(
    services: &Services,
    request: &Request,
    index_uid: &str,
    document_id: String,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let metadata = custom_metadata(request)?;
    let kind = KindWithContent::DocumentDeletion {
        index_uid: index_uid.to_owned(),
        document_ids: vec![document_id],
    };
    register_write(services, write_headers(services, request)?, kind, metadata).await
}

/// `POST /indexes/{index_uid}/documents/delete-batch`.
pub async fn delete_batch(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let metadata = custom_metadata(request)?;
    let items: Vec<Value> = body::serde_json(request)?;
    let document_ids = items
        .into_iter()
        .map(|item| match item {
            Value::String(text) => text,
            other => other.to_string(),
        })
        .collect();
    let kind = KindWithContent::DocumentDeletion {
        index_uid: index_uid.to_owned(),
        document_ids,
    };
    register_write(services, write_headers(services, request)?, kind, metadata).await
}

/// `POST /indexes/{index_uid}/documents/delete`.
pub async fn delete_by_filter(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let metadata = custom_metadata(request)?;
    let body: DeleteByFilterBody = body::json::<DeleteByFilterBody, JsonError>(request)?;
    check_write_filter(&body.filter, services.control.features())?;
    let kind = KindWithContent::DocumentDeletionByFilter {
        index_uid: index_uid.to_owned(),
        filter: body.filter,
    };
    register_write(services, write_headers(services, request)?, kind, metadata).await
}

/// Refuses the filter of a deletion or an edition that does not parse, uses an operator
/// whose experimental feature is off, or is empty.
fn check_write_filter(filter: &Value, features: RuntimeFeatures) -> Result<(), ResponseError> {
    match Filter::from_json(filter) {
        Ok(Some(filter)) => check_filter_features(&filter, features),
        Ok(None) => Err(ResponseError::new(
            Code::InvalidDocumentFilter,
            "Sending an empty filter is forbidden.",
        )),
        Err(error) => Err(ResponseError::new(
            Code::InvalidDocumentFilter,
            error.message,
        )),
    }
}

/// `POST /indexes/{index_uid}/documents/edit` (experimental `editDocumentsByFunction`).
///
/// Checks in Meilisearch's order: the query and the body, the feature, the index uid, that
/// the function compiles, the filter, the context.
pub async fn edit(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    let metadata = custom_metadata(request)?;
    let body: EditionBody = body::json::<EditionBody, JsonError>(request)?;
    if !services.control.features().edit_documents_by_function {
        return Err(ResponseError::feature_not_enabled(
            "Using the documents edit route",
            "edit documents by function",
            EDIT_DOCUMENTS_BY_FUNCTION_LINK,
        ));
    }
    checked_path_uid(index_uid)?;
    // Compiling is linear in the script's length, which only the payload limit bounds:
    // off the core.
    let function = body.function.clone();
    crate::runtime::blocking::run(move || check_compiles(&function)).await?;
    if let Some(filter) = &body.filter {
        check_write_filter(filter, services.control.features())?;
    }
    let context = match body.context {
        None => None,
        Some(Value::Object(context)) => Some(context),
        Some(_) => {
            return Err(ResponseError::new(
                Code::InvalidDocumentEditionContext,
                "The context must be an object",
            ));
        }
    };
    let kind = KindWithContent::DocumentEdition {
        index_uid: index_uid.to_owned(),
        filter: body.filter,
        context,
        function: body.function,
    };
    register_write(services, write_headers(services, request)?, kind, metadata).await
}
