//! The shard side of dynamic search rules: the documents a search pins, by external id, are
//! found in the shard, kept when the search's filter selects them, and sent with their
//! documents (and, when asked, their facet counts) apart from the ranked hits, which never
//! hold them.
//!
//! Invariants: a pinned document is never ranked (the search's universe leaves every pinned
//! id out, see [`super::search::resolved_query`]); one the filter leaves out is neither shown
//! nor counted, as in Meilisearch, where pins are kept only within the filtered universe.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;
use shards::search::{FieldFacetCounts, ShardHit};
use shards::shard::ShardSnapshot;

use super::filter_ids;
use super::protocol::{ShardRead, shard_reads};
use super::search::{ShardFoundHit, ShardSearchRequest, found_hits};
use crate::errors::{Code, ResponseError, shard_error};

/// The documents of a search's pins this shard holds and its filter selects.
#[derive(Debug)]
pub struct PinnedDocuments {
    pub request: ShardSearchRequest,
}

/// A shard's pinned documents: each with the place of its id in the request's list.
#[derive(Debug, Default)]
pub struct PinnedAnswer {
    pub hits: Vec<(usize, ShardFoundHit)>,
    /// The facet counts of the pinned documents, when the search asks for facets.
    pub facets: Option<BTreeMap<String, FieldFacetCounts>>,
}

impl ShardRead for PinnedDocuments {
    type Answer = PinnedAnswer;

    fn read(self, snapshot: &ShardSnapshot) -> Result<PinnedAnswer, ResponseError> {
        let request = self.request;
        let found = found_pins(snapshot, &request)?;
        let documents: RoaringBitmap = found.iter().map(|(_, id)| *id).collect();
        let hits = found
            .iter()
            .map(|(_, id)| ShardHit {
                id: *id,
                score: 1.0,
                details: Vec::new(),
                matched_words: Vec::new(),
                distinct_values: Vec::new(),
            })
            .collect();
        let hits = found_hits(snapshot, hits, request.retrieve_vectors, false)?;
        let facets = match &request.facets {
            Some(requested) => Some(
                snapshot
                    .facet_counts(requested, &documents)
                    .map_err(shard_error)?,
            ),
            None => None,
        };
        Ok(PinnedAnswer {
            hits: found.iter().map(|(place, _)| *place).zip(hits).collect(),
            facets,
        })
    }
}

shard_reads!(PinnedDocuments);

/// Each pinned id this shard holds (its place in the list, its internal id) that the
/// request's filter selects.
fn found_pins(
    snapshot: &ShardSnapshot,
    request: &ShardSearchRequest,
) -> Result<Vec<(usize, u32)>, ResponseError> {
    let Some(ids) = &request.pinned_documents else {
        return Ok(Vec::new());
    };
    let selected = match &request.filter {
        Some(filter) => Some(filter_ids(snapshot, filter, Code::InvalidSearchFilter)?),
        None => None,
    };
    let mut found = Vec::new();
    for (place, id) in ids.iter().enumerate() {
        let Some(internal) = snapshot.internal_id(id).map_err(shard_error)? else {
            continue;
        };
        if selected
            .as_ref()
            .is_none_or(|selected| selected.contains(internal))
        {
            found.push((place, internal));
        }
    }
    Ok(found)
}

/// Every document of the shard the request pins (whatever its filter).
pub fn pinned_ids(
    snapshot: &ShardSnapshot,
    request: &ShardSearchRequest,
) -> Result<RoaringBitmap, ResponseError> {
    let mut ids = RoaringBitmap::new();
    for id in request.pinned_documents.iter().flat_map(|ids| ids.iter()) {
        if let Some(internal) = snapshot.internal_id(id).map_err(shard_error)? {
            ids.insert(internal);
        }
    }
    Ok(ids)
}

/// The documents of the shard the request pins and its filter selects: matches of the
/// search beside the ranked ones.
pub fn pinned_matches(
    snapshot: &ShardSnapshot,
    request: &ShardSearchRequest,
) -> Result<RoaringBitmap, ResponseError> {
    Ok(found_pins(snapshot, request)?
        .into_iter()
        .map(|(_, id)| id)
        .collect())
}
