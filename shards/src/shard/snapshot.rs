//! Reads on one committed snapshot of a shard: documents by external id (with `fields`
//! selection), listings, counts, field distribution, facet source, and statistics.
//!
//! The search side of the snapshot is defined in `search/`, one `impl` block per concern,
//! each method only a public entry point (their helpers are free functions there):
//! - [`ShardSnapshot::search`] and [`ShardSnapshot::term_document_counts`] in
//!   `search/execute.rs` (full-text search, and the per-term counts that
//!   `matchingStrategy: frequency` adds over shards);
//! - [`ShardSnapshot::facet_counts`] in `search/facet_counts.rs` (`facetDistribution`,
//!   `facetStats`);
//! - [`ShardSnapshot::facet_values`] in `search/facet_values.rs` (facet search).
//!
//! They read the commit's caches this file hands out ([`ShardSnapshot::dictionary`],
//! `prefix_words`, `prefix_unions`, `facet_columns`, `facet_forms`, `derivation_memo`, `split_memo`,
//! `synonyms`), which [`super::commit_view`] keeps per commit.
//!
//! Invariant: everything answered by one [`ShardSnapshot`] describes the same commit.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use roaring::RoaringBitmap;
use serde_json::{Map, Value};
use storage_engine::{Direction, ReadTransaction};

use super::commit_view::{CommitView, CommitViews, FieldsMap};
use super::facet_source::{MembershipReads, ShardFacetSource};
use super::fields_selection::select_fields;
use super::listing::{ListQuery, list_ids};
use super::network_membership::MembershipSlot;
use super::settings::FacetSettings;
use super::state::ShardState;
use super::stored_document::StoredDocument;
use crate::analysis::{Analyzer, TextSettings};
use crate::error::{ShardError, ShardResult};
use crate::index::document_codec::{self, DecoderCache, Dictionaries, DictionaryDecoder};
use crate::index::keys::{decode_u64, document_from_key, document_key};
use crate::index::trees::{
    DOCUMENT_DICTIONARIES_TREE, DOCUMENTS_TREE, EXTERNAL_IDS_TREE, FIELD_DISTRIBUTION_TREE,
    FIELDS_TREE,
};
use crate::search::derivation_memo::DerivationMemo;
use crate::search::dictionary::Dictionary;
use crate::search::facet_columns::FacetColumns;
use crate::search::facet_forms::FacetForms;
use crate::search::prefix_unions::PrefixUnions;
use crate::search::prefix_words::PrefixWords;
use crate::search::split_words::SplitMemo;
use crate::search::term_postings::TermPostingsMemo;
use crate::search::terms::Synonyms;
use crate::vectors::{GraphSet, VectorSettings};

/// Document statistics of a shard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardStats {
    pub number_of_documents: u64,
    /// Bytes of the stored (compressed) documents.
    pub raw_document_bytes: u64,
    /// `raw_document_bytes / number_of_documents`, 0 without documents.
    pub average_document_bytes: u64,
    /// Length of the shard file.
    pub file_bytes: u64,
    /// Top-level field → number of documents having it.
    pub field_distribution: BTreeMap<String, u64>,
    /// Live vectors of every embedder.
    pub number_of_embeddings: u64,
    /// Documents with at least one vector.
    pub number_of_embedded_documents: u64,
}

/// A page of `(internal id, document)` and the number of matching documents.
pub type DocumentPage = (Vec<(u32, Map<String, Value>)>, u64);

/// A read snapshot of a shard.
pub struct ShardSnapshot {
    read: ReadTransaction,
    /// What every snapshot of this commit shares (state, analyzer, dictionary).
    view: Arc<CommitView>,
    /// The shard's prepared document dictionaries.
    decoders: Arc<DecoderCache>,
    /// The shard's embedder graphs.
    graphs: Arc<GraphSet>,
    /// The shard's network membership (what `_shard` filters select).
    membership: Arc<MembershipSlot>,
}

/// The document dictionaries a read transaction sees, prepared once per shard.
struct ReadDictionaries<'a> {
    read: &'a ReadTransaction,
    decoders: &'a DecoderCache,
}

impl Dictionaries for ReadDictionaries<'_> {
    fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>> {
        self.decoders.decoder(id, || {
            let Some(tree) = self.read.open_tree(DOCUMENT_DICTIONARIES_TREE)? else {
                return Ok(None);
            };
            Ok(tree.get(&document_key(id))?.map(<[u8]>::to_vec))
        })
    }
}

impl ShardSnapshot {
    pub(crate) fn new(
        read: ReadTransaction,
        views: &CommitViews,
        graphs: &Arc<GraphSet>,
        membership: &Arc<MembershipSlot>,
    ) -> ShardResult<ShardSnapshot> {
        let view = views.view(&read)?;
        Ok(ShardSnapshot::on_view(
            read, view, views, graphs, membership,
        ))
    }

    /// A snapshot reading `read` through `view` (the view of `read`'s commit).
    pub(crate) fn on_view(
        read: ReadTransaction,
        view: Arc<CommitView>,
        views: &CommitViews,
        graphs: &Arc<GraphSet>,
        membership: &Arc<MembershipSlot>,
    ) -> ShardSnapshot {
        assert_eq!(
            read.transaction_id(),
            view.commit(),
            "a snapshot reads through its own commit's view"
        );
        ShardSnapshot {
            read,
            view,
            decoders: Arc::clone(views.decoders()),
            graphs: Arc::clone(graphs),
            membership: Arc::clone(membership),
        }
    }

    /// The shared view of this snapshot's commit.
    pub(crate) fn view(&self) -> &Arc<CommitView> {
        &self.view
    }

    /// The shard's embedder graphs.
    pub(crate) fn graphs(&self) -> &GraphSet {
        &self.graphs
    }

    /// The embedder slots of this commit.
    pub fn vector_settings(&self) -> &VectorSettings {
        &self.state().vector_settings
    }

    /// Where this snapshot's stored documents find their dictionaries.
    fn dictionaries(&self) -> ReadDictionaries<'_> {
        ReadDictionaries {
            read: &self.read,
            decoders: &self.decoders,
        }
    }

    fn state(&self) -> &ShardState {
        self.view.state()
    }

    /// The word dictionary of this snapshot's commit (built on first use after a commit).
    pub fn dictionary(&self) -> ShardResult<Arc<Dictionary>> {
        self.view.dictionary(&self.read)
    }

    /// Whether this commit's word dictionary is built already (by a search, or by the warming
    /// of the batch that made the commit).
    pub fn dictionary_is_built(&self) -> bool {
        self.view.built_dictionary().is_some()
    }

    /// The synonyms setting normalized by the analyzer (made once per commit).
    pub(crate) fn synonyms(&self) -> &Synonyms {
        self.view.synonyms()
    }

    /// The query words already derived on this commit (typos, exact word).
    pub(crate) fn derivation_memo(&self) -> &DerivationMemo {
        self.view.derivations()
    }

    /// The facet columns of the fields counted on this commit.
    pub(crate) fn facet_columns(&self) -> &FacetColumns {
        self.view.facet_columns()
    }

    /// The best splits of the query words searched on this commit.
    pub(crate) fn split_memo(&self) -> &SplitMemo {
        self.view.split_memo()
    }

    /// The unions over prefix expansions computed on this commit.
    pub(crate) fn prefix_unions(&self) -> &PrefixUnions {
        self.view.prefix_unions()
    }

    /// The words of the prefixes read on this commit.
    pub(crate) fn prefix_words(&self) -> &PrefixWords {
        self.view.prefix_words()
    }

    /// The postings of the query terms read on this commit, over every document.
    pub(crate) fn term_postings(&self) -> &TermPostingsMemo {
        self.view.term_postings()
    }

    /// The facet search forms of facet values made on this commit.
    pub(crate) fn facet_forms(&self) -> &FacetForms {
        self.view.facet_forms()
    }

    /// The analyzer the text settings configure (made once per commit).
    pub fn analyzer(&self) -> &Analyzer {
        self.view.analyzer()
    }

    pub fn settings(&self) -> &FacetSettings {
        &self.state().settings
    }

    /// The text settings (searchable attributes, stop words, ranking rules, ...).
    pub fn text_settings(&self) -> &TextSettings {
        &self.state().text_settings
    }

    /// The read transaction underneath (for the search module).
    pub(crate) fn read_transaction(&self) -> &ReadTransaction {
        &self.read
    }

    /// Field path → field id, for every field ever seen by this shard (read once per commit).
    pub fn fields_map(&self) -> ShardResult<Arc<FieldsMap>> {
        self.view.fields_map(&self.read)
    }

    /// The uid of the last batch this snapshot includes.
    pub fn applied_batch(&self) -> Option<u64> {
        self.state().applied_batch
    }

    /// Every internal id.
    pub fn document_ids(&self) -> &RoaringBitmap {
        &self.state().document_ids
    }

    pub fn count(&self) -> u64 {
        self.state().document_ids.len()
    }

    /// The facet indexes, to evaluate filters with.
    pub fn facet_source(&self) -> ShardFacetSource<'_> {
        ShardFacetSource::new(
            &self.read,
            &self.state().document_ids,
            self.view.range_unions(),
            super::vector_filter::VectorReads {
                read: &self.read,
                graphs: &self.graphs,
                settings: &self.state().vector_settings,
            },
            MembershipReads {
                slot: &self.membership,
                applied_batch: self.applied_batch(),
            },
        )
    }

    /// The external ids of the documents in `selected`, in external id order (a scan of the
    /// external-id map: meant for deletions by filter, not for hot paths).
    pub fn external_ids(&self, selected: &RoaringBitmap) -> ShardResult<Vec<String>> {
        let Some(tree) = self.read.open_tree(EXTERNAL_IDS_TREE)? else {
            return Ok(Vec::new());
        };
        let mut found = Vec::with_capacity(selected.len() as usize);
        for entry in tree.range(
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            storage_engine::Direction::Forward,
        )? {
            let (key, value) = entry?;
            if selected.contains(document_from_key(value)?) {
                let external =
                    std::str::from_utf8(key).map_err(|_| ShardError::corrupted("external id"))?;
                found.push(external.to_owned());
            }
        }
        Ok(found)
    }

    /// Every stored document's external id with its internal id, in external id order (a
    /// scan of the external-id map: for moving documents between instances, not for hot
    /// paths).
    pub fn external_ids_with_internal(&self) -> ShardResult<Vec<(String, u32)>> {
        let Some(tree) = self.read.open_tree(EXTERNAL_IDS_TREE)? else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        for entry in tree.range(
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            storage_engine::Direction::Forward,
        )? {
            let (key, value) = entry?;
            let external =
                std::str::from_utf8(key).map_err(|_| ShardError::corrupted("external id"))?;
            found.push((external.to_owned(), document_from_key(value)?));
        }
        Ok(found)
    }

    /// The ids of `external_ids` this shard stores, in byte order. Looked up in byte order,
    /// each lookup starting from the path of the one before: a batch asks for hundreds of
    /// thousands of ids at once, and most of its lookups then stay in the same few leaves.
    pub fn stored_external_ids(&self, mut external_ids: Vec<String>) -> ShardResult<Vec<String>> {
        let Some(tree) = self.read.open_tree(EXTERNAL_IDS_TREE)? else {
            return Ok(Vec::new());
        };
        external_ids.sort_unstable();
        let mut lookup = tree.path_lookup();
        let mut stored = Vec::new();
        for id in external_ids {
            if lookup.get(id.as_bytes())?.is_some() {
                stored.push(id);
            }
        }
        Ok(stored)
    }

    pub fn internal_id(&self, external_id: &str) -> ShardResult<Option<u32>> {
        let Some(tree) = self.read.open_tree(EXTERNAL_IDS_TREE)? else {
            return Ok(None);
        };
        tree.get(external_id.as_bytes())?
            .map(document_from_key)
            .transpose()
    }

    /// The document with internal id `id`, reduced to `fields` when given.
    pub fn document_by_id(
        &self,
        id: u32,
        fields: Option<&[String]>,
    ) -> ShardResult<Option<Map<String, Value>>> {
        let Some(tree) = self.read.open_tree(DOCUMENTS_TREE)? else {
            return Ok(None);
        };
        let Some(stored) = tree.get(&document_key(id))? else {
            return Ok(None);
        };
        let document = document_codec::decode(stored, &self.dictionaries())?;
        Ok(Some(match fields {
            Some(selectors) => select_fields(&document, selectors),
            None => document,
        }))
    }

    /// A document as stored, to be decoded later, anywhere (see [`StoredDocument`]).
    pub fn stored_document(&self, id: u32) -> ShardResult<Option<StoredDocument>> {
        let Some(tree) = self.read.open_tree(DOCUMENTS_TREE)? else {
            return Ok(None);
        };
        tree.get(&document_key(id))?
            .map(|stored| StoredDocument::new(stored.to_vec(), &self.dictionaries()))
            .transpose()
    }

    /// The JSON bytes of a document exactly as stored (as sent, keys in order).
    pub fn document_json(&self, id: u32) -> ShardResult<Option<Vec<u8>>> {
        let Some(tree) = self.read.open_tree(DOCUMENTS_TREE)? else {
            return Ok(None);
        };
        tree.get(&document_key(id))?
            .map(|stored| document_codec::decompress(stored, &self.dictionaries()))
            .transpose()
    }

    pub fn document(
        &self,
        external_id: &str,
        fields: Option<&[String]>,
    ) -> ShardResult<Option<Map<String, Value>>> {
        match self.internal_id(external_id)? {
            Some(id) => self.document_by_id(id, fields),
            None => Ok(None),
        }
    }

    /// The page of documents `query` asks for, with the number of matching documents.
    pub fn documents(
        &self,
        query: &ListQuery,
        fields: Option<&[String]>,
    ) -> ShardResult<DocumentPage> {
        let (ids, total) = list_ids(&self.read, &self.state().document_ids, query)?;
        let mut documents = Vec::with_capacity(ids.len());
        for id in ids {
            let document = self
                .document_by_id(id, fields)?
                .ok_or_else(|| ShardError::corrupted("listed id without document"))?;
            documents.push((id, document));
        }
        Ok((documents, total))
    }

    /// Every field path ever seen by this shard, sorted.
    pub fn fields(&self) -> ShardResult<Vec<String>> {
        let Some(tree) = self.read.open_tree(FIELDS_TREE)? else {
            return Ok(Vec::new());
        };
        let mut fields = Vec::new();
        for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (key, _) = entry?;
            fields.push(
                String::from_utf8(key.to_vec()).map_err(|_| ShardError::corrupted("field path"))?,
            );
        }
        Ok(fields)
    }

    /// Top-level field → number of documents having it.
    pub fn field_distribution(&self) -> ShardResult<BTreeMap<String, u64>> {
        let mut distribution = BTreeMap::new();
        let Some(tree) = self.read.open_tree(FIELD_DISTRIBUTION_TREE)? else {
            return Ok(distribution);
        };
        for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (key, value) = entry?;
            let field =
                String::from_utf8(key.to_vec()).map_err(|_| ShardError::corrupted("field name"))?;
            distribution.insert(field, decode_u64(value, "field count")?);
        }
        Ok(distribution)
    }

    /// Statistics; `file_bytes` is the caller's (the database knows its file length).
    pub fn stats(&self, file_bytes: u64) -> ShardResult<ShardStats> {
        let number_of_documents = self.count();
        let raw_document_bytes = self.state().document_bytes;
        let (number_of_embeddings, number_of_embedded_documents) =
            crate::vectors::reads::counts(&self.read, &self.graphs, self.vector_settings())?;
        Ok(ShardStats {
            number_of_embeddings,
            number_of_embedded_documents,
            number_of_documents,
            raw_document_bytes,
            average_document_bytes: raw_document_bytes
                .checked_div(number_of_documents)
                .unwrap_or(0),
            file_bytes,
            field_distribution: self.field_distribution()?,
        })
    }
}
