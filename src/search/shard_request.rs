//! What every shard of an index is asked for a prepared search, and the index prefix a
//! shard's filter refusal gets.

use shards::search::{MatchingStrategy, SearchQuery};

use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::host::search::ShardSearchRequest;
use crate::settings::locale::Locale;

use super::parameters::MatchingStrategyParameter;
use super::prepare::PreparedSearch;

/// What every shard is asked for `prepared` (before index-wide term counts are added).
pub fn shard_request(prepared: &PreparedSearch) -> ShardSearchRequest {
    ShardSearchRequest {
        query: shard_query(prepared),
        filter: prepared.filter.clone(),
        facets: prepared.body.facets.clone(),
        vector: None,
        retrieve_vectors: prepared.body.retrieve_vectors,
        pinned_documents: prepared.pinned_documents.clone(),
    }
}

/// The shard-level query of `prepared`: its first `offset + limit` hits.
fn shard_query(prepared: &PreparedSearch) -> SearchQuery {
    let body = &prepared.body;
    SearchQuery {
        q: body.q.clone(),
        offset: 0,
        limit: prepared.offset.saturating_add(prepared.limit),
        matching_strategy: match body.matching_strategy {
            MatchingStrategyParameter::Last => MatchingStrategy::Last,
            MatchingStrategyParameter::All => MatchingStrategy::All,
            MatchingStrategyParameter::Frequency => MatchingStrategy::Frequency,
        },
        attributes_to_search_on: body.attributes_to_search_on.clone(),
        candidates: None,
        sort: prepared.sort.clone(),
        term_document_counts: None,
        distinct: body.distinct.clone(),
        locales: body.locales.as_deref().map(canonical_locales),
        deadline: prepared.deadline,
    }
}

/// The ISO-639-3 codes of `locales` (the form the shards' analysis takes).
pub fn canonical_locales(locales: &[Locale]) -> Vec<String> {
    locales
        .iter()
        .map(|locale| locale.canonical().to_owned())
        .collect()
}

/// A shard's refusal of a filter it evaluated (an unknown embedder in a vector filter, say)
/// is an error of the index's engine: Meilisearch names the index before its message.
pub fn index_filter_error(record: &IndexRecord, error: ResponseError) -> ResponseError {
    if error.code == Code::InvalidSearchFilter {
        error.prefixed(&format!("Index `{}`: ", record.uid))
    } else {
        error
    }
}
