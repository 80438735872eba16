//! The one entry of a search of one index: [`execute`] runs the pinned documents' lookup
//! when dynamic search rules pin some ([`super::pins`]), then the ranking: hybrid or
//! semantic ([`super::hybrid`]) or keyword ([`super::ranked`]), then places the pins among
//! the ranked hits. Each of those paths is a leaf: none calls back into this file, and every
//! ranking runs through [`super::ranked::execute_ranked`].
//!
//! Invariant: a filter refusal found by the shards is answered with its ``Index `uid`: ``
//! prefix, once.

use std::rc::Rc;

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;

use super::outcome::SearchOutcome;
use super::prepare::PreparedSearch;
use super::shard_request::index_filter_error;

/// Runs `prepared` on every shard of `record` and merges the answers: a keyword search, or
/// a semantic or hybrid one, with the documents dynamic search rules pin placed among the
/// ranked hits.
pub async fn execute(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
) -> Result<SearchOutcome, ResponseError> {
    if prepared.pins.is_empty() {
        return rank(coordinator, record, prepared, &[]).await;
    }
    let pinned = super::pins::pinned_hits(coordinator, record, prepared).await?;
    let organic = super::pins::organic_search(prepared);
    let outcome = rank(coordinator, record, &organic, &pinned.positions()).await?;
    Ok(super::pins::place_pinned(outcome, pinned, prepared))
}

/// Ranks `prepared`; `pin_positions` are the places pinned documents will take, which a
/// hybrid search counts among its keyword hits.
async fn rank(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
    pin_positions: &[u32],
) -> Result<SearchOutcome, ResponseError> {
    let outcome = match &prepared.semantic {
        Some(semantic) => {
            super::hybrid::execute_hybrid(coordinator, record, prepared, semantic, pin_positions)
                .await
        }
        None => super::ranked::execute_ranked(coordinator, record, prepared, None).await,
    };
    outcome.map_err(|error| index_filter_error(record, error))
}
