//! One search on one index, the use case behind `POST /indexes/{uid}/search` and each
//! query of a non-federated `/multi-search`: the tenant token's filter is AND-ed with the
//! query's, the query is prepared against the index's settings, given the documents dynamic
//! search rules pin, run on every shard, and formatted, with the time of each stage; then,
//! under `personalize`, its hits are reordered within the search's budget
//! ([`super::personalize`]).

use std::rc::Rc;
use std::time::Instant;

use serde_json::Value;

use super::execute::execute;
use super::parameters::SearchBody;
use super::personalize::{personalize_result, take_personalize};
use super::prepare::{fuse_filters, prepare};
use super::response::search_result;
use super::stages::StageTimer;
use crate::auth::AuthContext;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::errors::ResponseError;
use crate::personalization::Personalization;

/// Runs one search on one index and returns its result object (with `performanceDetails`,
/// the duration of each stage, under `showPerformanceDetails`), its hits reordered by
/// `personalization` when the search asks for it.
pub async fn search_index(
    coordinator: &Rc<Coordinator>,
    index_uid: &str,
    mut body: SearchBody,
    context: &AuthContext,
    features: RuntimeFeatures,
    personalization: &Personalization,
) -> Result<serde_json::Map<String, Value>, ResponseError> {
    let started = Instant::now();
    let personalize = take_personalize(&mut body);
    let record = coordinator.index(index_uid)?;
    if let Some(rules) = context.index_search_rules(index_uid) {
        body.filter = fuse_filters(rules.filter, body.filter.take());
    }
    let show_performance_details = body.show_performance_details;
    let mut stages = StageTimer::new();
    let mut prepared = prepare(&record, body, features, coordinator.filter_shards())?;
    super::pins::attach_pins(coordinator, features, index_uid, &mut prepared);
    stages.finish("search > prepare");
    let outcome = execute(coordinator, &record, &prepared).await?;
    stages.finish("search > keyword search");
    let request_uid = uuid::Uuid::now_v7().to_string();
    let mut result = search_result(
        &record,
        &prepared,
        outcome,
        started.elapsed().as_millis(),
        &request_uid,
    );
    if let (true, Some(Value::Array(hits))) = (features.foreign_keys, result.get_mut("hits")) {
        super::hydration::hydrate_hits(coordinator, &record, hits).await?;
    }
    stages.finish("search > format");
    if show_performance_details {
        result.insert(
            "performanceDetails".to_owned(),
            Value::Object(stages.into_details()),
        );
    }
    if let Some(request) = &personalize {
        personalize_result(personalization, &mut result, request, prepared.deadline).await?;
    }
    Ok(result)
}
