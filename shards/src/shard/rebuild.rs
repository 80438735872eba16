//! Rebuilding indexes from the stored documents when what they derive from changes: the facet
//! trees after a facet settings change, the inverted index after a text settings change that
//! touches it, or when a shard written by an older version opens without its newer trees.
//!
//! Every rebuild has one skeleton ([`Rebuild::run`]): in one write transaction, empty the
//! trees it rebuilds, index every live document again through the batch machinery of
//! [`super::apply`] (its pending changes bounded in bytes like a batch's), store the state and
//! commit.
//!
//! Invariants: a rebuild commits in one transaction or not at all, so readers see the old
//! indexes or the new, never a mix; it changes no document, internal id or applied batch uid
//! (the live ids are checked in debug builds); afterwards the rebuilt trees describe exactly
//! the stored documents under the stored settings. A settings change that leaves the indexes
//! as they are commits the settings alone, and an unchanged setting commits nothing.

use std::sync::Arc;

use serde_json::{Map, Value};
use storage_engine::{Database, ReadTransaction, WriteTransaction};

use super::apply::PreparedBatch;
use super::settings::FacetSettings;
use super::state::ShardState;
use crate::analysis::{Analyzer, TextSettings};
use crate::error::ShardResult;
use crate::index::document_codec::DecoderCache;
use crate::index::trees::{
    FACET_TREES, FIELD_WORD_COUNTS_TREE, LEGACY_WORD_POSITIONS_TREE, TEXT_TREES,
    WORD_DOCUMENTS_TREE, WORD_FIELDS_TREE, WORD_PAIR_TREES, WORD_POSITIONS_TREE,
};

/// The trees a text rebuild empties: the inverted index's, then the legacy tree it replaced.
const TEXT_REBUILD_TREES: [&str; TEXT_TREES.len() + 1] = {
    let mut trees = [LEGACY_WORD_POSITIONS_TREE; TEXT_TREES.len() + 1];
    let mut index = 0;
    while index < TEXT_TREES.len() {
        trees[index] = TEXT_TREES[index];
        index += 1;
    }
    trees
};

/// Stores new facet settings and rebuilds the facet trees from the stored documents.
/// Returns whether the settings changed (nothing is written when they did not).
pub(crate) fn rebuild_facets(
    database: &Database,
    settings: FacetSettings,
    decoders: &Arc<DecoderCache>,
    pending_bytes_max: usize,
) -> ShardResult<bool> {
    let transaction = database.begin_write()?;
    let mut state = ShardState::load_write(&transaction)?;
    if state.settings == settings {
        transaction.abort();
        return Ok(false);
    }
    state.settings = settings;
    let facets = Rebuild {
        emptied_trees: &FACET_TREES,
        // Facets are not analysed: any tokenizer will do.
        analyzer: Analyzer::new(&TextSettings::default()),
        reindex: PreparedBatch::reindex_facets,
    };
    facets.run(transaction, state, decoders, pending_bytes_max)?;
    Ok(true)
}

/// Stores new text settings; when what the inverted index depends on changed, rebuilds it from
/// the stored documents, in the same transaction. Returns whether anything changed.
pub(crate) fn rebuild_text(
    database: &Database,
    settings: TextSettings,
    decoders: &Arc<DecoderCache>,
    pending_bytes_max: usize,
) -> ShardResult<bool> {
    let transaction = database.begin_write()?;
    let mut state = ShardState::load_write(&transaction)?;
    if state.text_settings == settings {
        transaction.abort();
        return Ok(false);
    }
    let rebuild = state.text_settings.index_key() != settings.index_key();
    state.text_settings = settings;
    if !rebuild {
        state.store(&transaction)?;
        transaction.commit()?;
        return Ok(true);
    }
    reindex_text(transaction, state, decoders, pending_bytes_max)?;
    Ok(true)
}

/// Rebuilds the inverted index of a shard written before its `word_fields`,
/// `word_position_buckets`, pair trees (`word_pairs`, `word_pairs_2`, `word_pairs_3`),
/// `field_word_counts` or `word_position_chunks` trees
/// existed (they are derived from the stored documents, so the rebuild loses nothing; the
/// legacy `word_positions` tree goes). Returns whether it rebuilt.
pub(crate) fn upgrade_text_index(
    database: &Database,
    decoders: &Arc<DecoderCache>,
    pending_bytes_max: usize,
) -> ShardResult<bool> {
    // A read snapshot tells, without taking the writer, that the usual shard is current.
    let read = database.begin_read();
    let outdated = read.open_tree(WORD_DOCUMENTS_TREE)?.is_some()
        && (read.open_tree(WORD_FIELDS_TREE)?.is_none()
            || !every_tree_exists(&read, &WORD_PAIR_TREES)?
            || read.open_tree(FIELD_WORD_COUNTS_TREE)?.is_none()
            || read.open_tree(WORD_POSITIONS_TREE)?.is_none())
        || read.open_tree(LEGACY_WORD_POSITIONS_TREE)?.is_some();
    drop(read);
    if !outdated {
        return Ok(false);
    }
    let transaction = database.begin_write()?;
    let state = ShardState::load_write(&transaction)?;
    reindex_text(transaction, state, decoders, pending_bytes_max)?;
    Ok(true)
}

/// Whether every tree of `names` exists in `read`.
fn every_tree_exists(read: &ReadTransaction, names: &[&str]) -> ShardResult<bool> {
    for name in names {
        if read.open_tree(name)?.is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Empties the inverted index, fills it again from the stored documents under
/// `state.text_settings`, stores `state`, and commits.
fn reindex_text(
    transaction: WriteTransaction,
    state: ShardState,
    decoders: &Arc<DecoderCache>,
    pending_bytes_max: usize,
) -> ShardResult<()> {
    let text = Rebuild {
        emptied_trees: &TEXT_REBUILD_TREES,
        analyzer: Analyzer::new(&state.text_settings),
        reindex: PreparedBatch::reindex_text,
    };
    text.run(transaction, state, decoders, pending_bytes_max)
}

/// What a rebuild empties and how it indexes one stored document again.
struct Rebuild {
    /// The trees emptied before the documents are indexed again.
    emptied_trees: &'static [&'static str],
    /// The tokenizer the documents are indexed with.
    analyzer: Analyzer,
    /// Indexes one live document (its internal id and content) into the emptied trees.
    reindex: fn(&mut PreparedBatch, u32, &Map<String, Value>) -> ShardResult<()>,
}

impl Rebuild {
    /// Empties the trees, indexes every live document again (writing the pending changes
    /// whenever they take `pending_bytes_max` bytes), stores `state` and commits.
    fn run(
        self,
        transaction: WriteTransaction,
        state: ShardState,
        decoders: &Arc<DecoderCache>,
        pending_bytes_max: usize,
    ) -> ShardResult<()> {
        for name in self.emptied_trees {
            transaction.delete_tree(name)?;
        }
        let mut prepared = PreparedBatch::for_rebuild(
            transaction,
            state,
            self.analyzer,
            decoders,
            pending_bytes_max,
        )?;
        let ids = prepared.live_ids();
        for &id in &ids {
            let document = prepared.live_document(id)?;
            (self.reindex)(&mut prepared, id, &document)?;
            prepared.rebuilt_one()?;
        }
        debug_assert!(
            prepared.live_ids() == ids,
            "a rebuild changes no internal id"
        );
        prepared.commit_rebuild()
    }
}
