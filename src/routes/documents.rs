//! `/indexes/{index_uid}/documents`: additions and updates (the payload is checked, written
//! to a synced update file, then registered), deletions (one, a batch, by filter, all), and
//! reads (one document from its shard's owner core; listings merged from every shard, waiting
//! in the search queue unless `disableDocumentsFetchQueue` is on).

use std::sync::Arc;

use deserr::Deserr;
use serde_json::{Map, Value, json};
use shards::documents::document_id::document_id_from_value;
use shards::documents::payload::{PayloadFormat, csv_delimiter_from_parameter};
use shards::filter::{Filter, FilterableRules, check_filterable};
use shards::shard::SortRule;

use crate::auth::AuthContext;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::{JsonError, Param, QueryError};
use crate::documents::get::get_document;
use crate::documents::listing::{ListingQuery, list_page};
use crate::errors::documents_error;
use crate::errors::{Code, ResponseError, codes};
use crate::host::edition::check_compiles;
use crate::http::{Request, Response};
use crate::routes::indexes::{checked_path_uid, register_write, write_headers};
use crate::routes::tasks::json;
use crate::routes::{Services, body};
use crate::search::parameters::{comma_list, sort_list, sort_rule_parts};
use crate::search::prepare::check_filter_features;
use crate::search::queue::SearchPermit;
use crate::tasks::KindWithContent;
use crate::tasks::model::DocumentMethod;

/// The reserved field of user-provided embeddings.
const VECTORS_FIELD: &str = "_vectors";
/// Default page size of document listings.
pub const DOCUMENTS_LIMIT_DEFAULT: usize = 20;
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
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct ListQuery {
    #[deserr(default = Param(0), error = QueryError<codes::InvalidDocumentOffset>)]
    offset: Param<usize>,
    #[deserr(default = Param(DOCUMENTS_LIMIT_DEFAULT), error = QueryError<codes::InvalidDocumentLimit>)]
    limit: Param<usize>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentFields>)]
    fields: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentRetrieveVectors>)]
    retrieve_vectors: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentIds>)]
    ids: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentFilter>)]
    filter: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentSort>)]
    sort: Option<String>,
}

#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct GetOneQuery {
    #[deserr(default, error = QueryError<codes::InvalidDocumentFields>)]
    fields: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentRetrieveVectors>)]
    retrieve_vectors: Option<Param<bool>>,
}

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct FetchBody {
    #[deserr(default, error = JsonError<codes::InvalidDocumentOffset>)]
    offset: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidDocumentLimit>)]
    limit: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidDocumentFields>)]
    fields: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidDocumentRetrieveVectors>)]
    retrieve_vectors: Option<bool>,
    #[deserr(default, error = JsonError<codes::InvalidDocumentIds>)]
    ids: Option<Vec<Value>>,
    #[deserr(default, error = JsonError<codes::InvalidDocumentFilter>)]
    filter: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidDocumentSort>)]
    sort: Option<Vec<String>>,
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

/// A listing request once decoded.
struct Listing {
    offset: usize,
    limit: usize,
    fields: Option<Vec<String>>,
    ids: Option<Vec<String>>,
    filter: Option<Filter>,
    sort: Vec<SortRule>,
    retrieve_vectors: bool,
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

/// `GET /indexes/{index_uid}/documents/{document_id}`.
pub async fn get_one(
    services: &Services,
    request: &Request,
    index_uid: &str,
    document_id: &str,
) -> Result<Response, ResponseError> {
    let query = crate::decode::decode_query::<GetOneQuery, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    checked_path_uid(index_uid)?;
    let record = services.coordinator.index(index_uid)?;
    let fields = query.fields.as_deref().map(comma_list);
    let retrieve = query.retrieve_vectors.is_some_and(|flag| flag.0);
    let answer = get_document(
        &services.coordinator,
        &record,
        document_id,
        fields,
        retrieve,
    )
    .await?;
    match answer {
        Some(document) => Ok(json(200, &Value::Object(with_vectors(document, retrieve)))),
        None => Err(ResponseError::document_not_found(document_id)),
    }
}

/// `GET /indexes/{index_uid}/documents`.
pub async fn list(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    let query = crate::decode::decode_query::<ListQuery, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    let _permit = listing_permit(services).await?;
    checked_path_uid(index_uid)?;
    let ids = match query.ids.as_deref() {
        Some(text) => Some(checked_ids(
            comma_list(text).into_iter().map(Value::String),
        )?),
        None => None,
    };
    let record = services.coordinator.index(index_uid)?;
    let filter = match &query.filter {
        Some(text) => {
            let value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()));
            parse_filter(&record, &value, services)?
        }
        None => None,
    };
    let listing = Listing {
        offset: query.offset.0,
        limit: query.limit.0,
        fields: query.fields.as_deref().map(comma_list),
        ids,
        filter,
        sort: match &query.sort {
            Some(text) => parse_sort(&record, &sort_list(text))?,
            None => Vec::new(),
        },
        retrieve_vectors: query.retrieve_vectors.is_some_and(|flag| flag.0),
    };
    list_documents(services, record, listing).await
}

/// `POST /indexes/{index_uid}/documents/fetch`.
pub async fn fetch(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    let body: FetchBody = body::json::<FetchBody, JsonError>(request)?;
    let _permit = listing_permit(services).await?;
    checked_path_uid(index_uid)?;
    let ids = match body.ids {
        Some(values) => Some(checked_ids(values.into_iter())?),
        None => None,
    };
    let record = services.coordinator.index(index_uid)?;
    let filter = match &body.filter {
        Some(value) => parse_filter(&record, value, services)?,
        None => None,
    };
    let listing = Listing {
        offset: body.offset.unwrap_or(0),
        limit: body.limit.unwrap_or(DOCUMENTS_LIMIT_DEFAULT),
        fields: body.fields,
        ids,
        filter,
        sort: match &body.sort {
            Some(rules) => parse_sort(&record, rules)?,
            None => Vec::new(),
        },
        retrieve_vectors: body.retrieve_vectors.unwrap_or(false),
    };
    list_documents(services, record, listing).await
}

/// A listing's place in the search queue, which it waits in as a search does (503
/// `too_many_search_requests` when the queue is full), unless `disableDocumentsFetchQueue`
/// is on. Taken once the request is decoded, before the index is looked up, as Meilisearch
/// 1.50 takes it.
async fn listing_permit(services: &Services) -> Result<Option<SearchPermit>, ResponseError> {
    if services.control.features().disable_documents_fetch_queue {
        return Ok(None);
    }
    services.search_queue.permit().await.map(Some)
}

/// The ids a listing asks for, each a valid document id (`invalid_document_ids` names the
/// first that is not, by its position); checked before the index is looked up, as
/// Meilisearch does.
fn checked_ids(values: impl Iterator<Item = Value>) -> Result<Vec<String>, ResponseError> {
    values
        .enumerate()
        .map(|(position, value)| {
            document_id_from_value(&value).map_err(|error| {
                ResponseError::new(
                    Code::InvalidDocumentIds,
                    format!("In `.ids[{position}]`: {error}"),
                )
            })
        })
        .collect()
}

async fn list_documents(
    services: &Services,
    record: Arc<IndexRecord>,
    listing: Listing,
) -> Result<Response, ResponseError> {
    let query = ListingQuery {
        offset: listing.offset,
        limit: listing.limit,
        fields: listing.fields,
        ids: listing.ids,
        filter: listing.filter,
        sort: listing.sort,
        retrieve_vectors: listing.retrieve_vectors,
    };
    let (page, total) = list_page(&services.coordinator, &record, query).await?;
    let results: Vec<Value> = page
        .into_iter()
        .map(|document| Value::Object(with_vectors(document, listing.retrieve_vectors)))
        .collect();
    Ok(json(
        200,
        &json!({
            "results": results,
            "offset": listing.offset,
            "limit": listing.limit,
            "total": total,
        }),
    ))
}

/// `_vectors` as `retrieveVectors` asks: removed unless asked for, then present (the
/// document's own, or an empty object: no embedder generates vectors yet).
fn with_vectors(mut document: Map<String, Value>, retrieve: bool) -> Map<String, Value> {
    if retrieve {
        if !document.contains_key(VECTORS_FIELD) {
            document.insert(VECTORS_FIELD.to_owned(), Value::Object(Map::new()));
        }
    } else {
        document.remove(VECTORS_FIELD);
    }
    document
}

/// A filter checked for gated operators, then against the index's filterable attributes;
/// its `_shard` conditions name the network's shards of the moment.
fn parse_filter(
    record: &IndexRecord,
    value: &Value,
    services: &Services,
) -> Result<Option<Filter>, ResponseError> {
    let filter = Filter::from_json(value)
        .map_err(|error| ResponseError::new(Code::InvalidDocumentFilter, error.message))?
        .map(|filter| filter.with_network_shards(services.coordinator.filter_shards()));
    if let Some(filter) = &filter {
        check_filter_features(filter, services.control.features())?;
        let rules =
            FilterableRules::from_setting(&record.settings.setting_view("filterableAttributes"))
                .map_err(ResponseError::internal)?;
        // The document routes answer the message without the ``Index `uid`: `` prefix that
        // search and task errors carry.
        check_filterable(filter, &rules)
            .map_err(|error| ResponseError::new(Code::InvalidDocumentFilter, error.message))?;
    }
    Ok(filter)
}

/// Sort rules `field:asc|desc`, each field sortable.
fn parse_sort(record: &IndexRecord, rules: &[String]) -> Result<Vec<SortRule>, ResponseError> {
    let sortable = &record.settings.sortable_attributes;
    let mut parsed = Vec::with_capacity(rules.len());
    for rule in rules {
        let (field, ascending) = sort_rule_parts(rule, Code::InvalidDocumentSort)?;
        if !sortable.contains(field) {
            let available = if sortable.is_empty() {
                "This index does not have configured sortable attributes.".to_owned()
            } else {
                let names: Vec<&str> = sortable.iter().map(String::as_str).collect();
                format!("Available sortable attributes are: `{}`.", names.join(", "))
            };
            // The documents routes answer without the ``Index `uid`: `` prefix, every
            // sortable attribute listed in one pair of backticks, as Meilisearch does.
            return Err(ResponseError::new(
                Code::InvalidDocumentSort,
                format!("Attribute `{field}` is not sortable. {available}"),
            ));
        }
        parsed.push(SortRule {
            field: field.to_owned(),
            ascending,
        });
    }
    Ok(parsed)
}
