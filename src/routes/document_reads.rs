//! `/indexes/{index_uid}/documents`, the reads: one document (from its shard's owner core),
//! and listings (`GET /documents`, `POST /documents/fetch`) merged from every shard, waiting
//! in the search queue unless `disableDocumentsFetchQueue` is on.
//!
//! With `useNetwork` (Meilisearch 1.50; the default when the network has a leader) a listing
//! is read from every network shard ([`crate::search::network_documents`]), and a document
//! not found here is looked for there. A listing another instance asks for (the
//! `Meili-Proxy-Search` header) never fans out again, and its documents carry their sort
//! values in `_federation`.
//!
//! Invariants: a listing's request is decoded before it waits in the queue, and checked
//! (index uid, ids, index, filter, sort) in Meilisearch's order after.

use std::collections::BTreeMap;

use deserr::Deserr;
use serde_json::{Map, Value, json};
use shards::documents::document_id::document_id_from_value;
use shards::filter::{Filter, FilterableRules, check_filterable};
use shards::shard::SortRule;

use crate::coordinator::catalog::IndexRecord;
use crate::decode::{JsonError, Param, QueryError};
use crate::documents::get::get_document;
use crate::documents::listing::{ListingQuery, list_page};
use crate::errors::{Code, ResponseError, codes};
use crate::http::{Request, Response};
use crate::routes::indexes::checked_path_uid;
use crate::routes::search::network_context;
use crate::routes::tasks::json;
use crate::routes::{Services, body};
use crate::search::network_documents::{
    NetworkListing, ShardPage, ShardSource, fetch_from_owners, local_page,
};
use crate::search::parameters::{comma_list, sort_list, sort_rule_parts};
use crate::search::prepare::check_filter_features;
use crate::search::queue::SearchPermit;
use crate::search::remote::NetworkContext;

/// The reserved field of user-provided embeddings.
const VECTORS_FIELD: &str = "_vectors";
/// Default page size of document listings.
pub const DOCUMENTS_LIMIT_DEFAULT: usize = 20;

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
    #[deserr(default, error = QueryError<codes::InvalidDocumentUseNetwork>)]
    use_network: Option<Param<bool>>,
}

#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct GetOneQuery {
    #[deserr(default, error = QueryError<codes::InvalidDocumentFields>)]
    fields: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentRetrieveVectors>)]
    retrieve_vectors: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidDocumentUseNetwork>)]
    use_network: Option<Param<bool>>,
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
    #[deserr(default, error = JsonError<codes::InvalidDocumentUseNetwork>)]
    use_network: Option<bool>,
}

/// `GET /indexes/{index_uid}/documents/{document_id}`: from this instance, else (across the
/// network) from the shard that holds it.
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
    let network = network_context(services, Some(request));
    let across_network = network.reads_across(query.use_network.map(|flag| flag.0))?;
    let record = services.coordinator.index(index_uid)?;
    let fields = query.fields.as_deref().map(comma_list);
    let retrieve = query.retrieve_vectors.is_some_and(|flag| flag.0);
    let answer = get_document(
        &services.coordinator,
        &record,
        document_id,
        fields.clone(),
        retrieve,
    )
    .await?;
    if let Some(document) = answer {
        return Ok(json(200, &Value::Object(with_vectors(document, retrieve))));
    }
    if !across_network {
        return Err(ResponseError::document_not_found(document_id));
    }
    let listing = NetworkListing {
        offset: 0,
        limit: 1,
        fields,
        ids: Some(vec![document_id.to_owned()]),
        filter: None,
        sort: None,
        retrieve_vectors: retrieve,
    };
    let mut answer = list_across_network(services, index_uid, listing, &network).await?;
    match answer.get_mut("results").and_then(Value::as_array_mut) {
        Some(results) if !results.is_empty() => Ok(json(200, &results.swap_remove(0))),
        _ => Err(ResponseError::document_not_found(document_id)),
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
    let network = network_context(services, Some(request));
    let networked = network.reads_across(query.use_network.map(|flag| flag.0))?;
    let ids = match query.ids.as_deref() {
        Some(text) => Some(checked_ids(
            comma_list(text).into_iter().map(Value::String),
        )?),
        None => None,
    };
    let listing = NetworkListing {
        offset: query.offset.0,
        limit: query.limit.0,
        fields: query.fields.as_deref().map(comma_list),
        ids,
        filter: query.filter.map(|text| {
            serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()))
        }),
        sort: query.sort.as_deref().map(sort_list),
        retrieve_vectors: query.retrieve_vectors.is_some_and(|flag| flag.0),
    };
    read_listing(services, index_uid, listing, &network, networked).await
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
    let network = network_context(services, Some(request));
    let networked = network.reads_across(body.use_network)?;
    let ids = match body.ids {
        Some(values) => Some(checked_ids(values.into_iter())?),
        None => None,
    };
    let listing = NetworkListing {
        offset: body.offset.unwrap_or(0),
        limit: body.limit.unwrap_or(DOCUMENTS_LIMIT_DEFAULT),
        fields: body.fields,
        ids,
        filter: body.filter,
        sort: body.sort,
        retrieve_vectors: body.retrieve_vectors.unwrap_or(false),
    };
    read_listing(services, index_uid, listing, &network, networked).await
}

/// A listing, here or (`networked`) across the network.
async fn read_listing(
    services: &Services,
    index_uid: &str,
    listing: NetworkListing,
    network: &NetworkContext,
    networked: bool,
) -> Result<Response, ResponseError> {
    if networked {
        let answer = list_across_network(services, index_uid, listing, network).await?;
        return Ok(json(200, &Value::Object(answer)));
    }
    let record = services.coordinator.index(index_uid)?;
    let query = local_query(
        services,
        &record,
        &listing,
        listing.filter.as_ref(),
        network.is_proxy,
    )?;
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

/// The listing of this instance's index, its filter and sort checked against it.
fn local_query(
    services: &Services,
    record: &IndexRecord,
    listing: &NetworkListing,
    filter: Option<&Value>,
    score_values: bool,
) -> Result<ListingQuery, ResponseError> {
    let filter = match filter {
        Some(value) => parse_filter(record, value, services)?,
        None => None,
    };
    Ok(ListingQuery {
        offset: listing.offset,
        limit: listing.limit,
        fields: listing.fields.clone(),
        ids: listing.ids.clone(),
        filter,
        sort: match &listing.sort {
            Some(rules) => parse_sort(record, rules)?,
            None => Vec::new(),
        },
        retrieve_vectors: listing.retrieve_vectors,
        score_values,
    })
}

/// Lists every network shard (the remote ones all at once, while this instance lists its
/// own) and merges their pages.
async fn list_across_network(
    services: &Services,
    index_uid: &str,
    listing: NetworkListing,
    network: &NetworkContext,
) -> Result<Map<String, Value>, ResponseError> {
    let sources = listing.sources(index_uid, network);
    let mut pages: Vec<Option<ShardPage>> = sources.iter().map(|_| None).collect();
    let mut in_flight = Vec::new();
    let mut local = Vec::new();
    for (position, source) in sources.into_iter().enumerate() {
        match source {
            ShardSource::Local { filter } => local.push((position, filter)),
            ShardSource::Remote { owners, body } => {
                let index_uid = index_uid.to_owned();
                let network = network.clone();
                let task = crate::runtime::spawn(async move {
                    fetch_from_owners(&index_uid, &owners, &body, &network).await
                });
                in_flight.push((position, task));
            }
        }
    }
    let first_page = NetworkListing {
        offset: 0,
        limit: listing.offset.saturating_add(listing.limit),
        ..listing.clone()
    };
    for (position, filter) in local {
        let page = list_local_shard(services, index_uid, &first_page, filter.as_ref()).await?;
        pages[position] = Some(page);
    }
    let mut remote_errors = BTreeMap::new();
    for (position, task) in in_flight {
        match task.await {
            Ok(page) => pages[position] = Some(page),
            Err(failures) => remote_errors.extend(failures),
        }
    }
    Ok(listing.answer(pages.into_iter().flatten().collect(), remote_errors))
}

/// The page of one network shard this instance owns, filtered to it.
async fn list_local_shard(
    services: &Services,
    index_uid: &str,
    listing: &NetworkListing,
    filter: Option<&Value>,
) -> Result<ShardPage, ResponseError> {
    let record = services.coordinator.index(index_uid)?;
    let query = local_query(services, &record, listing, filter, true)?;
    let (documents, total) = list_page(&services.coordinator, &record, query).await?;
    let documents = documents
        .into_iter()
        .map(|document| with_vectors(document, listing.retrieve_vectors))
        .collect();
    local_page(documents, total)
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
