//! Reads of a shard's documents and ids: one document ([`GetDocument`]), a listing page
//! ([`ListDocuments`]), the shard's [`Stats`] (or only its [`DocumentCount`]), its
//! [`FieldPaths`], and the ids a batch plans with ([`UsedIds`], [`ExistingIds`],
//! [`MatchingIds`]).
//!
//! Invariant: every read answers from one snapshot of the shard's last commit.

use serde_json::{Map, Value};
use shards::filter::Filter;
use shards::shard::{ListQuery, ShardSnapshot, ShardStats, SortRule};

use super::protocol::{ShardRead, ShardRequest, shard_reads};
use super::{ShardAddress, ShardForStatistics, ShardHost, filter_ids};
use crate::errors::{Code, ResponseError, shard_error};

/// One document by external id, with only `fields` when given.
#[derive(Debug)]
pub struct GetDocument {
    pub external_id: String,
    pub fields: Option<Vec<String>>,
    /// Attach the document's embeddings as `_vectors` (`retrieveVectors`).
    pub retrieve_vectors: bool,
}

impl ShardRead for GetDocument {
    type Answer = Option<Map<String, Value>>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Self::Answer, ResponseError> {
        let Some(id) = snapshot
            .internal_id(&self.external_id)
            .map_err(shard_error)?
        else {
            return Ok(None);
        };
        let Some(mut document) = snapshot
            .document_by_id(id, self.fields.as_deref())
            .map_err(shard_error)?
        else {
            return Ok(None);
        };
        if self.retrieve_vectors {
            attach_vectors(snapshot, id, &mut document)?;
        }
        Ok(Some(document))
    }
}

/// Adds document `id`'s embeddings to `document` as `_vectors`, when the index has embedders.
pub fn attach_vectors(
    snapshot: &ShardSnapshot,
    id: u32,
    document: &mut Map<String, Value>,
) -> Result<(), ResponseError> {
    if snapshot.vector_settings().is_empty() {
        return Ok(());
    }
    snapshot.attach_vectors(id, document).map_err(shard_error)
}

/// The first `needed` documents of a listing, with the number of matches.
#[derive(Debug)]
pub struct ListDocuments {
    pub needed: usize,
    pub filter: Option<Filter>,
    pub ids: Option<Vec<String>>,
    pub sort: Vec<SortRule>,
    pub fields: Option<Vec<String>>,
    /// Attach each document's embeddings as `_vectors` (`retrieveVectors`).
    pub retrieve_vectors: bool,
}

/// A listed document: its shard-local order key and its body.
#[derive(Debug)]
pub struct ListedDocument {
    pub internal_id: u32,
    pub document: Map<String, Value>,
}

/// A shard's page of a listing.
#[derive(Debug)]
pub struct DocumentPage {
    pub documents: Vec<ListedDocument>,
    pub total: u64,
}

impl ShardRead for ListDocuments {
    type Answer = DocumentPage;

    fn read(self, snapshot: &ShardSnapshot) -> Result<DocumentPage, ResponseError> {
        let selected = selected_ids(snapshot, self.filter.as_ref(), self.ids)?;
        let query = ListQuery {
            offset: 0,
            limit: self.needed,
            filter: selected,
            sort: self.sort,
        };
        let (page, total) = snapshot
            .documents(&query, self.fields.as_deref())
            .map_err(shard_error)?;
        let mut documents = Vec::with_capacity(page.len());
        for (internal_id, mut document) in page {
            if self.retrieve_vectors {
                attach_vectors(snapshot, internal_id, &mut document)?;
            }
            documents.push(ListedDocument {
                internal_id,
                document,
            });
        }
        Ok(DocumentPage { documents, total })
    }
}

/// The internal ids a listing keeps: those `filter` selects AND those of `ids` that are
/// stored (`None`: every document).
fn selected_ids(
    snapshot: &ShardSnapshot,
    filter: Option<&Filter>,
    ids: Option<Vec<String>>,
) -> Result<Option<roaring::RoaringBitmap>, ResponseError> {
    let mut selected = match filter {
        Some(filter) => Some(filter_ids(snapshot, filter, Code::InvalidDocumentFilter)?),
        None => None,
    };
    if let Some(ids) = ids {
        let mut wanted = roaring::RoaringBitmap::new();
        for id in ids {
            if let Some(internal) = snapshot.internal_id(&id).map_err(shard_error)? {
                wanted.insert(internal);
            }
        }
        selected = Some(match selected {
            Some(filtered) => filtered & wanted,
            None => wanted,
        });
    }
    Ok(selected)
}

/// The shard's document count and field distribution.
#[derive(Debug)]
pub struct Stats;

impl ShardRequest for Stats {
    type Answer = ShardStats;
    const IS_WRITE: bool = false;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<ShardStats, ResponseError> {
        match host.shard_for_statistics(&address)? {
            ShardForStatistics::Closed(closed) => Ok(closed.stats),
            ShardForStatistics::Open(shard) => shard.stats().map_err(shard_error),
        }
    }
}

/// The shard's document count alone (what `/metrics` needs: no field distribution, no
/// embedding counts).
#[derive(Debug)]
pub struct DocumentCount;

impl ShardRequest for DocumentCount {
    type Answer = u64;
    const IS_WRITE: bool = false;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<u64, ResponseError> {
        match host.shard_for_statistics(&address)? {
            ShardForStatistics::Closed(closed) => Ok(closed.stats.number_of_documents),
            ShardForStatistics::Open(shard) => Ok(shard.read().map_err(shard_error)?.count()),
        }
    }
}

/// Every field path the shard has ever seen, sorted.
#[derive(Debug)]
pub struct FieldPaths;

impl ShardRead for FieldPaths {
    type Answer = Vec<String>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Vec<String>, ResponseError> {
        snapshot.fields().map_err(shard_error)
    }
}

/// The internal ids in use.
#[derive(Debug)]
pub struct UsedIds;

impl ShardRead for UsedIds {
    type Answer = roaring::RoaringBitmap;

    fn read(self, snapshot: &ShardSnapshot) -> Result<roaring::RoaringBitmap, ResponseError> {
        Ok(snapshot.document_ids().clone())
    }
}

/// Which of `ids` are stored.
#[derive(Debug)]
pub struct ExistingIds {
    pub ids: Vec<String>,
}

impl ShardRead for ExistingIds {
    type Answer = Vec<String>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Vec<String>, ResponseError> {
        snapshot.stored_external_ids(self.ids).map_err(shard_error)
    }
}

/// The external ids of the documents `filter` matches.
#[derive(Debug)]
pub struct MatchingIds {
    pub filter: Filter,
}

impl ShardRead for MatchingIds {
    type Answer = Vec<String>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Vec<String>, ResponseError> {
        let matched = filter_ids(snapshot, &self.filter, Code::InvalidDocumentFilter)?;
        snapshot.external_ids(&matched).map_err(shard_error)
    }
}

shard_reads!(
    GetDocument,
    ListDocuments,
    FieldPaths,
    UsedIds,
    ExistingIds,
    MatchingIds,
    DocumentEmbeddings
);

/// A document's internal id and its embeddings for one embedder (`None`: no such document).
#[derive(Debug)]
pub struct DocumentEmbeddings {
    pub external_id: String,
    pub embedder: String,
}

impl ShardRead for DocumentEmbeddings {
    type Answer = Option<(u32, Vec<Vec<f32>>)>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Self::Answer, ResponseError> {
        let Some(id) = snapshot
            .internal_id(&self.external_id)
            .map_err(shard_error)?
        else {
            return Ok(None);
        };
        let embeddings = snapshot
            .embeddings(&self.embedder, id)
            .map_err(shard_error)?;
        Ok(Some((id, embeddings)))
    }
}
