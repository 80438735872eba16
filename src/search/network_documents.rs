//! A document listing across the network (`useNetwork`, Meilisearch 1.50: the default when
//! the network has a leader): one copy of the listing per network shard, restricted to it by
//! a `_shard = "S"` filter AND-ed with the listing's own, listed here when this instance owns
//! the shard, else sent to one of its owners as `POST /indexes/{uid}/documents/fetch` with
//! `useNetwork: false` and the `Meili-Proxy-Search` header (the next owner is asked when one
//! fails; see [`crate::search::shard_partition`]); the pages are merged in the listing's
//! order and cut at `offset`/`limit`.
//!
//! What each copy is asked: its first `offset + limit` documents (`offset` 0), each with
//! `_federation.weightedScoreValues` (its sort values). Meilisearch 1.50 sends the listing's
//! own `offset` to every shard and cuts it again after the merge, so its pages after the
//! first lose documents; here a page is the page an unsharded index would give.
//!
//! The merge: by the sort values, as a federated search compares them; without a sort (or
//! on ties) shard by shard in shard name order, each shard's documents in its own order.
//! `total` sums the shards that answered; a shard no owner answered is named in
//! `remoteErrors` by its failed remotes, and adds nothing.
//!
//! Invariant: every shard with an owner is listed exactly once; no copy fans out again.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use shards::search::weighted_score::{WeightedValue, compare_weighted};

use super::owner_reads::ask_owners;
use super::remote::{NetworkContext, parse_score_values};
use super::shard_partition::{ReadKey, ShardCopy, shard_copies, shard_filter};
use crate::errors::ResponseError;
use crate::network::remote_call::{
    FEDERATION_FIELD, IndexRead, WEIGHTED_SCORE_VALUES, missing_in_remote_hit,
};

/// A listing as its copies are sent: the request's own parts, not yet read by any index.
#[derive(Debug, Clone)]
pub struct NetworkListing {
    pub offset: usize,
    pub limit: usize,
    pub fields: Option<Vec<String>>,
    pub ids: Option<Vec<String>>,
    pub filter: Option<Value>,
    pub sort: Option<Vec<String>>,
    pub retrieve_vectors: bool,
}

/// One shard's page: its documents (each with its sort values), in its order, and its total.
#[derive(Debug, Default)]
pub struct ShardPage {
    pub documents: Vec<(Vec<WeightedValue>, Map<String, Value>)>,
    pub total: u64,
}

/// Where each shard of the network is listed.
pub enum ShardSource {
    /// This instance owns the shard: list it here with this filter.
    Local { filter: Option<Value> },
    /// Other instances own it: ask them in this order.
    Remote { owners: Vec<String>, body: Value },
}

impl NetworkListing {
    /// The documents each copy must send: everything up to the page's end.
    fn needed(&self) -> usize {
        self.offset.saturating_add(self.limit)
    }

    /// What every page of this listing has in common: all of it but `offset` and `limit`.
    fn read_key(&self, index_uid: &str) -> ReadKey {
        let parameters = json!({
            "fields": self.fields,
            "ids": self.ids,
            "filter": self.filter,
            "sort": self.sort,
            "retrieveVectors": self.retrieve_vectors,
        });
        ReadKey::of(index_uid, &parameters.to_string())
    }

    /// Where each shard of `index_uid` is listed, in shard name order; every page of one
    /// listing asks a shard of the same owner (see [`super::shard_partition`]).
    pub fn sources(&self, index_uid: &str, network: &NetworkContext) -> Vec<ShardSource> {
        let read = self.read_key(index_uid);
        shard_copies(&network.network, &network.availability, read)
            .into_iter()
            .map(|ShardCopy { shard, owners }| {
                let filter = shard_filter(self.filter.clone(), &shard);
                match owners.as_slice() {
                    [only] if network.network.is_local(only) => ShardSource::Local { filter },
                    _ => ShardSource::Remote {
                        body: self.remote_body(filter),
                        owners,
                    },
                }
            })
            .collect()
    }

    /// The `documents/fetch` body a remote owner of a shard is sent.
    fn remote_body(&self, filter: Option<Value>) -> Value {
        json!({
            "offset": 0,
            "limit": self.needed(),
            "fields": self.fields,
            "ids": self.ids,
            "filter": filter,
            "sort": self.sort,
            "retrieveVectors": self.retrieve_vectors,
            "useNetwork": false,
        })
    }

    /// The listing's answer from every shard's page (in shard order) and the remotes that
    /// failed: `results`, `offset`, `limit`, `total`, and `remoteErrors` when one failed.
    pub fn answer(
        &self,
        pages: Vec<ShardPage>,
        remote_errors: BTreeMap<String, ResponseError>,
    ) -> Map<String, Value> {
        let total: u64 = pages.iter().map(|page| page.total).sum();
        let results: Vec<Value> = merged(pages)
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .map(Value::Object)
            .collect();
        let mut answer = Map::new();
        answer.insert("results".to_owned(), Value::Array(results));
        answer.insert("offset".to_owned(), json!(self.offset));
        answer.insert("limit".to_owned(), json!(self.limit));
        answer.insert("total".to_owned(), json!(total));
        if !remote_errors.is_empty() {
            let errors: Map<String, Value> = remote_errors
                .into_iter()
                .map(|(name, error)| (name, error.to_value()))
                .collect();
            answer.insert("remoteErrors".to_owned(), Value::Object(errors));
        }
        answer
    }
}

/// Every page's documents in the listing's order (without their `_federation`): by sort
/// values, then by shard, then by place in the shard's page.
fn merged(pages: Vec<ShardPage>) -> Vec<Map<String, Value>> {
    let mut all: Vec<(usize, Vec<WeightedValue>, Map<String, Value>)> = pages
        .into_iter()
        .enumerate()
        .flat_map(|(shard, page)| {
            page.documents
                .into_iter()
                .map(move |(values, document)| (shard, values, document))
        })
        .collect();
    // Stable: equal documents keep shard order, then their shard's order.
    all.sort_by(|left, right| {
        match compare_weighted(&left.1, 0.0, &right.1, 0.0) {
            // `Greater` goes first.
            Ordering::Greater => Ordering::Less,
            Ordering::Less => Ordering::Greater,
            Ordering::Equal => left.0.cmp(&right.0),
        }
    });
    all.into_iter().map(|(_, _, document)| document).collect()
}

/// A page listed here (documents carrying `_federation`) as a shard's page.
pub fn local_page(
    documents: Vec<Map<String, Value>>,
    total: u64,
) -> Result<ShardPage, ResponseError> {
    let documents = documents
        .into_iter()
        .map(take_score_values)
        .collect::<Result<_, _>>()?;
    Ok(ShardPage { documents, total })
}

/// Asks the owners of one shard in turn for their page (see [`super::owner_reads`]).
pub async fn fetch_from_owners(
    index_uid: &str,
    owners: &[String],
    body: &Value,
    network: &NetworkContext,
) -> Result<ShardPage, BTreeMap<String, ResponseError>> {
    ask_owners(
        index_uid,
        IndexRead::DocumentsFetch,
        owners,
        body,
        network,
        remote_page,
    )
    .await
}

/// A remote's `documents/fetch` answer as a shard's page.
fn remote_page(answer: Value) -> Result<ShardPage, ResponseError> {
    let total = answer["total"]
        .as_u64()
        .ok_or_else(|| missing_in_remote_hit(".total"))?;
    let Value::Array(results) = answer["results"].clone() else {
        return Err(missing_in_remote_hit(".results"));
    };
    let documents = results
        .into_iter()
        .map(|document| match document {
            Value::Object(document) => take_score_values(document),
            _ => Err(missing_in_remote_hit("._federation")),
        })
        .collect::<Result<_, _>>()?;
    Ok(ShardPage { documents, total })
}

/// Takes a document's `_federation.weightedScoreValues` out of it.
fn take_score_values(
    mut document: Map<String, Value>,
) -> Result<(Vec<WeightedValue>, Map<String, Value>), ResponseError> {
    let federation = document
        .remove(FEDERATION_FIELD)
        .ok_or_else(|| missing_in_remote_hit("._federation"))?;
    let path = format!("._federation.{WEIGHTED_SCORE_VALUES}");
    let values = federation
        .get(WEIGHTED_SCORE_VALUES)
        .ok_or_else(|| missing_in_remote_hit(&path))?;
    let values = parse_score_values(values).map_err(|_| missing_in_remote_hit(&path))?;
    Ok((values, document))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shards::search::SortValue;

    fn document(id: u64, price: Option<f64>) -> (Vec<WeightedValue>, Map<String, Value>) {
        let values = price
            .map(|price| {
                vec![WeightedValue::Sort {
                    ascending: true,
                    value: SortValue::Number(price),
                }]
            })
            .unwrap_or_default();
        let Value::Object(document) = json!({"id": id}) else {
            unreachable!("an object literal")
        };
        (values, document)
    }

    fn ids(documents: &[Map<String, Value>]) -> Vec<u64> {
        documents
            .iter()
            .map(|document| document["id"].as_u64().expect("ids are numbers"))
            .collect()
    }

    #[test]
    fn unsorted_pages_follow_each_other_in_shard_order() {
        let pages = vec![
            ShardPage {
                documents: vec![document(3, None), document(1, None)],
                total: 2,
            },
            ShardPage {
                documents: vec![document(2, None)],
                total: 1,
            },
        ];
        assert_eq!(ids(&merged(pages)), [3, 1, 2]);
    }

    #[test]
    fn sorted_pages_interleave_by_their_values_and_the_cut_comes_after_the_merge() {
        let pages = || {
            vec![
                ShardPage {
                    documents: vec![document(1, Some(1.0)), document(3, Some(3.0))],
                    total: 5,
                },
                ShardPage {
                    documents: vec![document(2, Some(2.0)), document(4, Some(4.0))],
                    total: 7,
                },
            ]
        };
        assert_eq!(ids(&merged(pages())), [1, 2, 3, 4]);
        let listing = NetworkListing {
            offset: 1,
            limit: 2,
            fields: None,
            ids: None,
            filter: None,
            sort: Some(vec!["price:asc".to_owned()]),
            retrieve_vectors: false,
        };
        assert_eq!(listing.needed(), 3);
        let answer = listing.answer(pages(), BTreeMap::new());
        assert_eq!(answer["results"], json!([{"id": 2}, {"id": 3}]));
        assert_eq!(answer["total"], 12);
        assert!(!answer.contains_key("remoteErrors"));
    }

    #[test]
    fn a_remote_page_without_score_values_is_a_bad_response() {
        let answer = json!({"results": [{"id": 1}], "total": 1, "offset": 0, "limit": 20});
        let error = remote_page(answer).expect_err("a document lacks _federation");
        assert_eq!(error.code, crate::errors::Code::RemoteBadResponse);
        let answer =
            json!({"results": [{"id": 1, "_federation": {"weightedScoreValues": []}}], "total": 1});
        let page = remote_page(answer).expect("the page reads");
        assert_eq!(page.total, 1);
        assert_eq!(
            page.documents[0].1,
            *json!({"id": 1}).as_object().expect("an object")
        );
    }
}
