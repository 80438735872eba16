//! A facet search across the network (`useNetwork` on `POST /indexes/{uid}/facet-search`,
//! Meilisearch 1.50; the default when the network has a leader): this instance searches the
//! network shards it owns at once (their `_shard` conditions OR-ed, AND-ed with the body's
//! filter), every other shard is asked of its owners in turn with the body, its filter
//! restricted to the shard and `useNetwork: false` (see [`super::owner_reads`]); the facet
//! values are merged by value, their counts added.
//!
//! The merged order is the facet's `sortFacetValuesBy` here (`alpha` when this instance has
//! no such index): by value, or by decreasing count (ties by value). As in 1.50, the merged
//! list is not cut again, and `remoteErrors` is always present (empty when every shard
//! answered).
//!
//! Invariant: every shard with an owner is counted exactly once.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::facet_search::{FacetSearchBody, facet_search};
use super::owner_reads::ask_owners;
use super::prepare::fuse_filters;
use super::remote::NetworkContext;
use super::shard_partition::{ReadKey, shard_copies, shard_filter};
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::errors::ResponseError;
use crate::network::remote_call::{IndexRead, missing_in_remote_hit};
use crate::settings::model::FacetValuesSort;

/// A facet search of `index_uid` across the network: `raw` is the body as sent, `body` the
/// same decoded without its filter, `filter` the filter (the tenant token's AND-ed in), in
/// `raw` too.
pub async fn facet_search_across_network(
    coordinator: &Rc<Coordinator>,
    index_uid: &str,
    raw: Map<String, Value>,
    (mut body, filter): (FacetSearchBody, Option<Value>),
    features: RuntimeFeatures,
    network: &NetworkContext,
) -> Result<Map<String, Value>, ResponseError> {
    let mut local_shards = Vec::new();
    let mut in_flight = Vec::new();
    let parameters = serde_json::to_string(&raw).map_err(ResponseError::internal)?;
    let read = ReadKey::of(index_uid, &parameters);
    for copy in shard_copies(&network.network, &network.availability, read) {
        if let [only] = copy.owners.as_slice()
            && network.network.is_local(only)
        {
            local_shards.push(copy.shard);
            continue;
        }
        let mut remote_body = raw.clone();
        remote_body.insert(
            "filter".to_owned(),
            shard_filter(filter.clone(), &copy.shard).unwrap_or(Value::Null),
        );
        remote_body.insert("useNetwork".to_owned(), Value::Bool(false));
        let (index_uid, network) = (index_uid.to_owned(), network.clone());
        in_flight.push(crate::runtime::spawn(async move {
            let body = Value::Object(remote_body);
            let read = IndexRead::FacetSearch;
            ask_owners(&index_uid, read, &copy.owners, &body, &network, facet_hits).await
        }));
    }
    let facet_query = body.facet_query().map(str::to_owned);
    let mut order = FacetValuesSort::Alpha;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut processing_time_ms = json!(0);
    if !local_shards.is_empty() {
        let record = coordinator.index(index_uid)?;
        order = record
            .settings
            .sort_facet_values_by
            .get(body.facet_name())
            .or_else(|| record.settings.sort_facet_values_by.get("*"))
            .copied()
            .unwrap_or_default();
        body.set_filter(fuse_filters(filter, Some(any_of_shards(&local_shards))));
        let mut local = facet_search(coordinator, &record, body, None, features).await?;
        processing_time_ms = local.remove("processingTimeMs").unwrap_or(json!(0));
        add_counts(&mut counts, facet_hits(Value::Object(local))?);
    }
    let mut remote_errors = Map::new();
    for task in in_flight {
        match task.await {
            Ok(hits) => add_counts(&mut counts, hits),
            Err(failures) => remote_errors.extend(
                failures
                    .into_iter()
                    .map(|(name, error)| (name, error.to_value())),
            ),
        }
    }
    let mut answer = Map::new();
    answer.insert("facetHits".to_owned(), merged_hits(counts, order));
    answer.insert(
        "facetQuery".to_owned(),
        facet_query.map_or(Value::Null, Value::String),
    );
    answer.insert("processingTimeMs".to_owned(), processing_time_ms);
    answer.insert("remoteErrors".to_owned(), Value::Object(remote_errors));
    Ok(answer)
}

/// `[["_shard = \"a\"", "_shard = \"b\""]]`: any of `shards` (an inner array is an OR).
fn any_of_shards(shards: &[String]) -> Value {
    let clauses: Vec<Value> = shards
        .iter()
        .filter_map(|shard| shard_filter(None, shard))
        .collect();
    Value::Array(vec![Value::Array(clauses)])
}

/// The `facetHits` of a facet search answer, as `(value, count)`.
fn facet_hits(answer: Value) -> Result<Vec<(String, u64)>, ResponseError> {
    let hits = answer["facetHits"]
        .as_array()
        .ok_or_else(|| missing_in_remote_hit(".facetHits"))?;
    hits.iter()
        .map(|hit| match (hit["value"].as_str(), hit["count"].as_u64()) {
            (Some(value), Some(count)) => Ok((value.to_owned(), count)),
            _ => Err(missing_in_remote_hit(".facetHits[].value")),
        })
        .collect()
}

fn add_counts(counts: &mut BTreeMap<String, u64>, hits: Vec<(String, u64)>) {
    for (value, count) in hits {
        *counts.entry(value).or_insert(0) += count;
    }
}

/// The merged values in `order`: by value, or by decreasing count then value.
fn merged_hits(counts: BTreeMap<String, u64>, order: FacetValuesSort) -> Value {
    let mut hits: Vec<(String, u64)> = counts.into_iter().collect();
    if order == FacetValuesSort::Count {
        hits.sort_by(|left, right| right.1.cmp(&left.1).then_with(|| left.0.cmp(&right.0)));
    }
    Value::Array(
        hits.into_iter()
            .map(|(value, count)| json!({"value": value, "count": count}))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_of_one_value_add_up_across_shards_in_either_order() {
        let mut counts = BTreeMap::new();
        add_counts(
            &mut counts,
            vec![("drama".to_owned(), 2), ("comedy".to_owned(), 1)],
        );
        add_counts(
            &mut counts,
            vec![("drama".to_owned(), 1), ("action".to_owned(), 5)],
        );
        assert_eq!(
            merged_hits(counts.clone(), FacetValuesSort::Alpha),
            json!([{"value": "action", "count": 5}, {"value": "comedy", "count": 1}, {"value": "drama", "count": 3}])
        );
        assert_eq!(
            merged_hits(counts, FacetValuesSort::Count),
            json!([{"value": "action", "count": 5}, {"value": "drama", "count": 3}, {"value": "comedy", "count": 1}])
        );
    }

    #[test]
    fn local_shards_are_or_ed_and_a_bad_answer_is_refused() {
        assert_eq!(
            any_of_shards(&["s0".to_owned(), "s1".to_owned()]),
            json!([["_shard = \"s0\"", "_shard = \"s1\""]])
        );
        assert!(facet_hits(json!({"facetHits": [{"value": 1, "count": 1}]})).is_err());
        assert!(facet_hits(json!({"hits": []})).is_err());
    }
}
