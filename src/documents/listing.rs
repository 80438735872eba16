//! `GET /indexes/{uid}/documents` and `POST …/documents/fetch`: a page of the index's
//! documents, filtered, restricted to ids, sorted and cut at `offset`/`limit`, as one
//! unsharded index would list them.
//!
//! Each shard answers its first `offset + limit` matches in its own order with its match
//! count; [`super::merge`] takes the global page from them.
//!
//! Invariant: with a sort, shards send whole documents (the merge compares the sort fields'
//! values) and `fields` is applied after the merge; without, shards apply `fields`. The sort
//! values a proxied listing shows are read from the whole document.

use std::rc::Rc;

use serde_json::{Map, Value};
use shards::filter::Filter;
use shards::shard::{SortRule, select_fields};

use super::merge::{ShardPage, merge_pages, shown_sort_value};
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::documents::{DocumentPage, ListDocuments};
use crate::network::remote_call::{FEDERATION_FIELD, WEIGHTED_SCORE_VALUES};

/// What a listing asks, decoded and checked.
#[derive(Debug, Clone)]
pub struct ListingQuery {
    pub offset: usize,
    pub limit: usize,
    pub fields: Option<Vec<String>>,
    pub ids: Option<Vec<String>>,
    pub filter: Option<Filter>,
    pub sort: Vec<SortRule>,
    pub retrieve_vectors: bool,
    /// Each document carries `_federation.weightedScoreValues` (its sort values), as a
    /// listing another instance asked for (`Meili-Proxy-Search`) answers them.
    pub score_values: bool,
}

/// The page of documents `query` selects in `record`, and the number of matches.
pub async fn list_page(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    query: ListingQuery,
) -> Result<(Vec<Map<String, Value>>, u64), ResponseError> {
    let needed = query.offset.saturating_add(query.limit);
    let shard_fields = if query.sort.is_empty() {
        query.fields.clone()
    } else {
        None
    };
    let answers = coordinator
        .ask_every_shard(&record.shard_set(), |_| ListDocuments {
            needed,
            filter: query.filter.clone(),
            ids: query.ids.clone(),
            sort: query.sort.clone(),
            fields: shard_fields.clone(),
            retrieve_vectors: query.retrieve_vectors,
        })
        .await;
    let mut pages = Vec::with_capacity(answers.len());
    let mut total = 0u64;
    for (shard, answer) in answers.into_iter().enumerate() {
        let DocumentPage {
            documents,
            total: shard_total,
        } = answer?;
        total += shard_total;
        let shard = u32::try_from(shard).map_err(ResponseError::internal)?;
        pages.push(ShardPage { shard, documents });
    }
    let page = merge_pages(pages, &query.sort, query.offset, query.limit)
        .into_iter()
        .map(|document| {
            let values = query
                .score_values
                .then(|| score_values(&document, &query.sort));
            let mut document = match (&query.fields, shard_fields.is_none()) {
                (Some(fields), true) => select_fields(&document, fields),
                _ => document,
            };
            if let Some(values) = values {
                document.insert(
                    FEDERATION_FIELD.to_owned(),
                    serde_json::json!({ WEIGHTED_SCORE_VALUES: values }),
                );
            }
            document
        })
        .collect();
    Ok((page, total))
}

/// A document's sort values, read before `fields` selects what is shown.
fn score_values(document: &Map<String, Value>, sort: &[SortRule]) -> Vec<Value> {
    sort.iter()
        .map(|rule| shown_sort_value(document, rule))
        .collect()
}
