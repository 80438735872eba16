//! `personalize` in a search of one index (`POST`/`GET /indexes/{uid}/search` and each query
//! of a non-federated multi-search): taken out of the query before it runs, then applied to
//! the written answer's hits through [`crate::personalization`].
//!
//! As in Meilisearch 1.41, the reordering comes after everything else: `processingTimeMs`
//! and `performanceDetails` describe the search without it, and totals, facets and
//! pagination are the search's. A federated search refuses `personalize` (see
//! [`super::multi`]).
//!
//! Invariant: the query's `personalize` never reaches the shards nor a remote instance.

use std::time::Instant;

use serde_json::{Map, Value};

use super::parameters::SearchBody;
use crate::errors::ResponseError;
use crate::personalization::Personalization;

/// What a search asked to personalize: the user's context and the search's `q`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonalizeRequest {
    pub user_context: String,
    pub query: Option<String>,
}

/// Takes `personalize` out of `body`, with the `q` it is to be applied with.
pub fn take_personalize(body: &mut SearchBody) -> Option<PersonalizeRequest> {
    let parameter = body.personalize.take()?;
    Some(PersonalizeRequest {
        user_context: parameter.user_context,
        query: body.q.clone(),
    })
}

/// Reorders the hits of `result` as `personalization` ranks them for `request`, asked
/// before `deadline` (the search's budget).
pub async fn personalize_result(
    personalization: &Personalization,
    result: &mut Map<String, Value>,
    request: &PersonalizeRequest,
    deadline: Option<Instant>,
) -> Result<(), ResponseError> {
    let Some(Value::Array(hits)) = result.get_mut("hits") else {
        return Ok(());
    };
    let taken = std::mem::take(hits);
    let reranked = personalization
        .rerank(
            taken,
            &request.user_context,
            request.query.as_deref(),
            deadline,
        )
        .await?;
    *hits = reranked;
    Ok(())
}
