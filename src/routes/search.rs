//! `POST` and `GET /indexes/{index_uid}/search` and `…/similar`, `POST /multi-search` and
//! `POST /indexes/{index_uid}/facet-search`.
//!
//! Each search, facet search and multi-search runs under a permit of the core's
//! [`crate::search::queue::SearchQueue`] (503 `too_many_search_requests` when it is full).
//! Both forms decode into one [`SearchBody`]; a tenant token's filter for the index is AND-ed
//! with the query's filter before the search is checked and run (see [`crate::search`]). A
//! search of one index that asks for `personalize` is counted for `/metrics` once it holds
//! its permit, as Meilisearch counts it.

use serde_json::{Map, Value};

use crate::auth::AuthContext;
use crate::decode::{JsonError, QueryError};
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::network::remote_call::{
    PROXY_SEARCH_HEADER, PROXY_SEARCH_HEADER_VALUE, SEARCH_BEFORE_CHANGE_HEADER,
};
use crate::network::sharding::filter_shards;
use crate::routes::indexes::checked_path_uid;
use crate::routes::tasks::json;
use crate::routes::{Services, body};
use crate::search::facet_search::{FacetSearchBody, facet_search};
use crate::search::multi::{USE_NETWORK_ACTION, decode_body, multi_search};
use crate::search::network_facet_search::facet_search_across_network;
use crate::search::network_search::search_across_network;
use crate::search::parameters::{SearchBody, SearchQueryString};
use crate::search::prepare::fuse_filters;
use crate::search::remote::NetworkContext;
use crate::search::similar::{SimilarBody, SimilarQueryString, similar};
use crate::search::single::search_index;

/// `POST /indexes/{index_uid}/search`.
pub async fn search_post(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let body: SearchBody = body::json::<SearchBody, JsonError>(request)?;
    checked_path_uid(index_uid)?;
    search(services, index_uid, body, context).await
}

/// `GET /indexes/{index_uid}/search`.
pub async fn search_get(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let query = crate::decode::decode_query::<SearchQueryString, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    checked_path_uid(index_uid)?;
    search(services, index_uid, query.into_body()?, context).await
}

async fn search(
    services: &Services,
    index_uid: &str,
    body: SearchBody,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let _permit = services.search_queue.permit().await?;
    if body.personalize.is_some() {
        crate::metrics::personalized_searches::record();
    }
    let features = services.control.features();
    let network = network_context(services, None);
    // Meilisearch's default: across the network when it shards (has a leader). The copies it
    // sends carry `useNetwork: false`, which the `network` feature gates.
    let use_network = body.use_network.unwrap_or(network.network.is_sharding());
    if body.use_network.is_some() || use_network {
        crate::network::check_network_enabled(features.network, USE_NETWORK_ACTION)?;
    }
    let result = if use_network {
        let search = search_across_network(
            &services.coordinator,
            index_uid,
            body,
            context,
            features,
            &network,
            &services.personalization,
        );
        search.await?
    } else {
        let search = search_index(
            &services.coordinator,
            index_uid,
            body,
            context,
            features,
            &services.personalization,
        );
        search.await?
    };
    Ok(json(200, &Value::Object(result)))
}

/// What a search of this core knows of the network: a user's search is partitioned by the
/// network searches use (during a topology change, the one before it until the change
/// switches them); a search another instance partitioned names its network's version,
/// whose shards its `_shard` conditions name.
pub fn network_context(services: &Services, request: Option<&Request>) -> NetworkContext {
    let control = &services.control;
    let is_proxy = request.is_some_and(|request| {
        request
            .headers
            .get(PROXY_SEARCH_HEADER)
            .is_some_and(|value| value == PROXY_SEARCH_HEADER_VALUE.as_bytes())
    });
    let partitioned_before = request
        .filter(|_| is_proxy)
        .and_then(|request| request.headers.get(SEARCH_BEFORE_CHANGE_HEADER))
        .and_then(|value| std::str::from_utf8(value).ok())
        .and_then(|value| value.parse::<uuid::Uuid>().ok());
    let (network, filter_shards, before_change) = match partitioned_before {
        Some(version) => (
            control.network(),
            filter_shards(&control.network_before_change(version)),
            None,
        ),
        None if is_proxy => (control.network(), filter_shards(&control.network()), None),
        None => {
            let network = control.search_network();
            let shards = filter_shards(&network);
            (network, shards, control.searches_before_change())
        }
    };
    NetworkContext {
        network,
        filter_shards,
        before_change,
        enabled: control.features().network,
        is_proxy,
        numbered_copies: false,
        availability: services.remote_availability.clone(),
    }
}

/// `POST /indexes/{index_uid}/similar`.
pub async fn similar_post(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    let body = body::json::<SimilarBody, JsonError>(request)?;
    checked_path_uid(index_uid)?;
    let _permit = services.search_queue.permit().await?;
    let features = services.control.features();
    let result = similar(&services.coordinator, index_uid, body, features).await?;
    Ok(json(200, &Value::Object(result)))
}

/// `GET /indexes/{index_uid}/similar`.
pub async fn similar_get(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    let query = crate::decode::decode_query::<SimilarQueryString, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    checked_path_uid(index_uid)?;
    let _permit = services.search_queue.permit().await?;
    let features = services.control.features();
    let result = similar(
        &services.coordinator,
        index_uid,
        query.into_body(),
        features,
    )
    .await?;
    Ok(json(200, &Value::Object(result)))
}

/// `POST /multi-search`.
pub async fn multi_search_post(
    services: &Services,
    request: &Request,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let body = decode_body(body::json_value(request)?)?;
    // One permit for the whole multi-search, as Meilisearch takes.
    let _permit = services.search_queue.permit().await?;
    let network = network_context(services, Some(request));
    let features = services.control.features();
    let search = multi_search(
        &services.coordinator,
        body,
        context,
        features,
        &network,
        &services.personalization,
    );
    let result = search.await?;
    Ok(json(200, &Value::Object(result)))
}

/// `POST /indexes/{index_uid}/facet-search`.
pub async fn facet_search_post(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let mut body = body::json::<FacetSearchBody, JsonError>(request)?;
    checked_path_uid(index_uid)?;
    let network = network_context(services, Some(request));
    let networked = network.reads_across(body.use_network())?;
    let tenant_filter = context
        .index_search_rules(index_uid)
        .and_then(|rules| rules.filter);
    let features = services.control.features();
    if networked {
        let _permit = services.search_queue.permit().await?;
        // The tenant token's filter travels with the body to the remotes.
        let filter = fuse_filters(tenant_filter, body.take_filter());
        let mut raw = match body::json_value(request)? {
            Value::Object(raw) => raw,
            _ => Map::new(),
        };
        raw.insert("filter".to_owned(), filter.clone().unwrap_or(Value::Null));
        let search = facet_search_across_network(
            &services.coordinator,
            index_uid,
            raw,
            (body, filter),
            features,
            &network,
        );
        return Ok(json(200, &Value::Object(search.await?)));
    }
    let record = services.coordinator.index(index_uid)?;
    let _permit = services.search_queue.permit().await?;
    let result = facet_search(
        &services.coordinator,
        &record,
        body,
        tenant_filter,
        features,
    )
    .await?;
    Ok(json(200, &Value::Object(result)))
}
