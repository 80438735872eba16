//! One shard of an index: a single page-store file holding the documents, the external-id map,
//! the fields map, the field distribution, the facet indexes (numbers, strings and booleans,
//! null/empty/exists) that also serve as sort values, the `_geo` points, and the uid of the
//! last applied batch.
//!
//! Invariants:
//! - Every change happens inside one write transaction; a batch is applied with
//!   [`Shard::prepare`], [`PreparedBatch::apply_chunk`] and [`PreparedBatch::commit`]. Dropping a
//!   prepared batch (or dying) before `commit` changes nothing.
//! - Applying is deterministic and idempotent: a batch whose uid is not above the recorded
//!   applied uid is a no-op, so replay after a restart is safe.
//! - Internal ids: a new document takes the smallest freed id if any, else the next never-used
//!   id; a replaced document keeps its id; `DeleteAll` frees everything and restarts at 0. The
//!   same operations in the same order always give the same ids.
//! - The fields map only grows (as Meilisearch's fields ids map), also across `DeleteAll`.
//! - The facet indexes always describe exactly the stored documents under the stored settings.
//!
//! Trees: every tree the shard keeps is named in [`crate::index::trees`] and encoded as
//! [`crate::index`] says (`shards/DESIGN.md` §2 draws them). This folder holds their writers
//! (`apply` and the change sets it flushes, `rebuild`) and the read snapshot.

mod analysis_ahead;
mod apply;
mod assigned_ids;
mod commit_view;
mod delta;
mod dictionary_changes;
mod extract;
pub(crate) mod facet_source;
mod fields_selection;
mod geo_field;
mod listing;
mod network_membership;
mod new_external_ids;
mod pair_changes;
mod position_merge;
pub(crate) mod range_unions;
mod rebuild;
mod repack;
mod segmented_vec;
mod settings;
mod snapshot;
mod state;
mod store_sizes;
mod stored_document;
mod vector_filter;
mod vector_settings;
mod vocabulary;
mod word_changes;
pub(crate) mod word_touches;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Map, Value};
use storage_engine::{Database, Options};

use crate::analysis::TextSettings;
use crate::cache_meter::{CacheAccount, CacheMeter};
use crate::vectors::GraphSet;
use commit_view::CommitViews;

pub use crate::error::{ShardError, ShardResult};
/// The document codec, at the path the server and the benchmarks knew it by.
pub use crate::index::document_codec as codec;
/// Two encodings of [`crate::index::keys`] the server reads stored facets with.
pub use crate::index::keys::{decode_bitmap, ordered_number};
pub use analysis_ahead::{AHEAD_OPERATIONS_MIN, AheadJob, AheadRunner};
pub use apply::{ApplyOutcome, Operation, PENDING_CHANGES_BYTES_DEFAULT, PreparedBatch};
pub use commit_view::FieldsMap;
pub use facet_source::ShardFacetSource;
pub use fields_selection::select_fields;
pub use listing::{ListQuery, SortRule};
pub use repack::{
    IDLE_REPACK_FILL_BELOW, IDLE_REPACK_GROWTH_PERCENT_MIN, IDLE_REPACK_SPARE_PAGES_MIN, Repack,
    RepackOutcome,
};
pub use settings::FacetSettings;
pub use snapshot::{DocumentPage, ShardSnapshot, ShardStats};
pub use store_sizes::{
    FREE_PAGES_PART, StoreSizes, VECTOR_FILES_PART_PREFIX, VECTOR_GRAPH_PART_PREFIX,
};
pub use stored_document::StoredDocument;
pub use vector_settings::StoredVectors;

/// One shard's page-store file.
pub struct Shard {
    database: Database,
    /// What the snapshots of the newest commit read share (see [`CommitViews`]).
    views: CommitViews,
    /// The trees' entry counts at their last repack (see [`Repack::Sparse`]).
    repacked: repack::RepackRecord,
    /// About how many heap bytes a batch's or a rebuild's pending changes may take before they
    /// are written to the trees (see [`Shard::bound_pending_changes`]).
    pending_changes_bytes: AtomicUsize,
    /// The embedders' graphs (vector files beside the shard file).
    graphs: Arc<GraphSet>,
    /// Which network shard each document belongs to, kept between commits (see
    /// [`network_membership`]).
    membership: Arc<network_membership::MembershipSlot>,
}

/// Fewest unreleased free pages worth a release once the task queue is idle: below it the
/// next batches reuse them soon anyway, and punching and re-allocating them would only churn
/// the file system. (A compaction releases them however few.)
pub const IDLE_RELEASE_PAGES_MIN: u64 = 256;

/// Pause between two releases while readers' snapshots still hold free pages: a search or
/// a stats read holds its snapshot for milliseconds.
pub const PENDING_RELEASE_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(5);

/// Longest a release waits for readers' snapshots to end; a longer reader (a dump, an export)
/// leaves the pages it holds to the next idle release.
pub const PENDING_RELEASE_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(1);

impl Shard {
    /// Opens the shard file at `path`, creating it when `options.create` allows; its caches
    /// are counted outside any budget.
    pub fn open(path: &Path, options: Options) -> ShardResult<Shard> {
        Shard::open_within(path, options, CacheMeter::unbounded())
    }

    /// [`Shard::open`], the caches of its commits charged to `caches` (the process's cache
    /// budget).
    pub fn open_within(
        path: &Path,
        options: Options,
        caches: Arc<CacheMeter>,
    ) -> ShardResult<Shard> {
        let database = Database::open(path, options)?;
        let views = CommitViews::charging(CacheAccount::on(caches));
        rebuild::upgrade_text_index(&database, views.decoders(), PENDING_CHANGES_BYTES_DEFAULT)?;
        Ok(Shard {
            database,
            views,
            repacked: repack::RepackRecord::default(),
            pending_changes_bytes: AtomicUsize::new(PENDING_CHANGES_BYTES_DEFAULT),
            graphs: Arc::new(GraphSet::new(path)),
            membership: Arc::default(),
        })
    }

    /// Bounds the heap bytes the pending changes of this shard's batches and rebuilds take
    /// between two writes to the trees ([`PENDING_CHANGES_BYTES_DEFAULT`] until set; the
    /// upgrade a shard written by an older version gets at open uses the default).
    pub fn bound_pending_changes(&self, bytes: usize) {
        self.pending_changes_bytes.store(bytes, Ordering::Relaxed);
    }

    /// The bytes this shard's commit caches hold (what closing it would free of the cache
    /// budget).
    pub fn cache_bytes(&self) -> usize {
        self.views.cache_bytes()
    }

    fn pending_changes_bytes(&self) -> usize {
        self.pending_changes_bytes.load(Ordering::Relaxed)
    }

    /// Whether nothing outside this value reads or writes the shard's files: no snapshot,
    /// transaction or vector graph of it is alive. Dropping the shard then closes its files
    /// at once, so it may be opened again right after (its files' locks let go).
    pub fn is_unreferenced(&self) -> bool {
        self.database.is_unshared() && Arc::strong_count(&self.graphs) == 1
    }

    /// The page store underneath (for statistics and integrity checks).
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// Starts applying batch `batch_uid`: opens the write transaction. A batch already applied
    /// gives a prepared batch whose chunks and commit do nothing.
    pub fn prepare(&self, batch_uid: u64) -> ShardResult<PreparedBatch> {
        let mut batch = PreparedBatch::begin(
            &self.database,
            batch_uid,
            self.views.decoders(),
            self.pending_changes_bytes(),
            &self.graphs,
            &self.membership,
        )?;
        // What the batch touches is recorded only for a commit with prefix entries or term
        // postings to carry (an import nobody searches records nothing).
        if !self.views.newest_has_entries_to_carry() {
            batch.skip_touches();
        }
        Ok(batch)
    }

    /// Applies and commits a whole batch at once.
    pub fn apply(&self, batch_uid: u64, operations: Vec<Operation>) -> ShardResult<ApplyOutcome> {
        let mut prepared = self.prepare(batch_uid)?;
        prepared.apply_chunk(operations)?;
        prepared.commit()
    }

    /// A read snapshot of the last commit, or, while a batch's commit warms its view (see
    /// [`Shard::commit_warmed`]), of the commit before it.
    pub fn read(&self) -> ShardResult<ShardSnapshot> {
        if let Some((read, view)) = self.views.frozen() {
            return Ok(ShardSnapshot::on_view(
                read,
                view,
                &self.views,
                &self.graphs,
                &self.membership,
            ));
        }
        ShardSnapshot::new(
            self.database.begin_read(),
            &self.views,
            &self.graphs,
            &self.membership,
        )
    }

    /// Commits `batch`; with `warm`, lets readers see the commit only once its view is
    /// warmed: the word dictionary of the commit before (if searches built it) merged with the
    /// batch's words, the derivations, prefix unions and prefix words searches asked for on
    /// the commit before, carried over the batch's words, and what `warm` builds by reading a
    /// snapshot of the new commit (what the searches it replays read). The first
    /// searches of the commit then find them ready. Until the warming ends, snapshots read
    /// the commit before the batch (the batch's task has not succeeded yet, so no client
    /// expects to see it). Without `warm` (no search ran lately), the commit is visible at
    /// once and its view is made lazily, as after a commit outside a batch; so is it when the
    /// new view cannot be made.
    pub fn commit_warmed(
        &self,
        batch: PreparedBatch,
        warm: Option<impl FnOnce(&ShardSnapshot)>,
    ) -> ShardResult<ApplyOutcome> {
        let Some(warm) = warm.filter(|_| !batch.is_already_applied()) else {
            return batch.commit();
        };
        let before = self.read()?;
        let frozen = self
            .views
            .freeze(before.read_transaction().clone(), Arc::clone(before.view()));
        let (outcome, mut words) = batch.commit_with_changes()?;
        let read = self.database.begin_read();
        let Ok(view) = self.views.unpublished(&read) else {
            return Ok(outcome);
        };
        // Searches built the dictionary on the commit before: this one's is that one merged
        // with the batch's words (commits are numbered one after the other, so `before` is
        // the commit the batch started from).
        if before.view().commit() + 1 == view.commit() {
            if let Some(previous) = before.view().built_dictionary() {
                if let Ok(Some(merged)) = words.applied_to(&previous) {
                    view.adopt_dictionary(merged);
                }
            }
            // And the words searches derived there are carried over the batch's words, the
            // prefix unions and words and the term postings they read over the batch's
            // touched words.
            view.inherit_derivations(before.view(), || words.delta().ok().flatten());
            if let Some(touched) = words.touched() {
                view.inherit_search_entries(before.view(), &read, touched);
            }
        }
        drop(before);
        let snapshot = ShardSnapshot::on_view(
            read,
            Arc::clone(&view),
            &self.views,
            &self.graphs,
            &self.membership,
        );
        // Every text search needs the fields map; a failure leaves it to the first search.
        snapshot.fields_map().ok();
        warm(&snapshot);
        drop(snapshot);
        frozen.publish(view);
        Ok(outcome)
    }

    /// Replaces the `filterableAttributes` setting and rebuilds the facet indexes in one
    /// transaction (nothing happens when the setting is unchanged).
    pub fn set_filterable_fields(&self, filterable_setting: &Value) -> ShardResult<bool> {
        let current = self.read()?.settings().clone();
        let sortable: Vec<String> = current.sortable().iter().cloned().collect();
        self.set_facet_settings(filterable_setting, &sortable)
    }

    /// Replaces the sortable attributes and rebuilds the facet indexes in one transaction.
    pub fn set_sortable_fields(&self, sortable: &[String]) -> ShardResult<bool> {
        let current = self.read()?.settings().clone();
        self.set_facet_settings(current.filterable_setting(), sortable)
    }

    /// Replaces both facet settings; returns whether anything changed (and was rebuilt).
    pub fn set_facet_settings(
        &self,
        filterable_setting: &Value,
        sortable: &[String],
    ) -> ShardResult<bool> {
        let settings =
            FacetSettings::new(filterable_setting, sortable).map_err(ShardError::InvalidSetting)?;
        rebuild::rebuild_facets(
            &self.database,
            settings,
            self.views.decoders(),
            self.pending_changes_bytes(),
        )
    }

    /// Replaces the text settings (searchable attributes, stop words, separators, dictionary,
    /// synonyms, typo tolerance, ranking rules, ...). When a setting the inverted index depends
    /// on changed, the index is rebuilt from the stored documents in the same transaction.
    /// Returns whether anything changed.
    pub fn set_text_settings(&self, settings: TextSettings) -> ShardResult<bool> {
        rebuild::rebuild_text(
            &self.database,
            settings,
            self.views.decoders(),
            self.pending_changes_bytes(),
        )
    }

    /// Statistics of the last commit, with the file's length.
    pub fn stats(&self) -> ShardResult<ShardStats> {
        self.read()?.stats(self.database.stats().file_bytes)
    }

    /// The bytes of each part of the shard's files as of the last commit (see
    /// [`store_sizes`]): its trees, its free pages, its embedders' graphs and vector files.
    pub fn store_sizes(&self) -> ShardResult<StoreSizes> {
        let mut sizes = self.read()?.store_sizes(&self.graphs)?;
        sizes.insert(FREE_PAGES_PART.to_owned(), self.unused_bytes());
        Ok(sizes)
    }

    /// With `prefetch`, opens every embedder's graph now and loads it into memory, and
    /// loads the graphs opened later as they open (`VECTORSTORE_READER_PREFETCH_MEMORY`).
    pub fn prefetch_vectors(&self, prefetch: bool) -> ShardResult<()> {
        self.graphs.set_prefetch_memory(prefetch);
        if prefetch {
            let snapshot = self.read()?;
            for slot in &snapshot.vector_settings().slots {
                self.graphs.for_read(&self.database.begin_read(), slot)?;
            }
        }
        Ok(())
    }

    /// Bytes of the shard's file that hold no live data as of the last commit (free pages
    /// and the grown tail): read from the commit record, no tree is walked.
    pub fn unused_bytes(&self) -> u64 {
        self.database.stats().unused_bytes()
    }

    /// Gives the disk blocks of the file's reusable free pages back to the file system, when
    /// at least `minimum_pages` are not given back yet; answers how many were. A write in
    /// progress leaves everything as it is (answers zero).
    ///
    /// Pages freed by the last commits that a reader's snapshot still holds (a search or a
    /// stats read overlapping a repack's commit) count toward the release: it waits for the
    /// readers, in steps of [`PENDING_RELEASE_POLL_INTERVAL`] for at most
    /// [`PENDING_RELEASE_WAIT_MAX`] or until `interrupt` is set, and gives them back too.
    /// Without the wait, their blocks would stay until the next idle release.
    pub fn release_free_space(
        &self,
        minimum_pages: u64,
        interrupt: &AtomicBool,
    ) -> ShardResult<u64> {
        let started = std::time::Instant::now();
        let mut released_pages = 0;
        loop {
            // Once some pages went back, the held ones belong to the same release.
            let minimum = if released_pages > 0 { 1 } else { minimum_pages };
            let released = match self.database.release_free_pages(minimum) {
                Ok(released) => released,
                Err(storage_engine::Error::WriteInProgress) => return Ok(released_pages),
                Err(error) => return Err(ShardError::Storage(error)),
            };
            released_pages += released.pages;
            // Waiting only helps when the held pages, with those below the minimum, would
            // make a release.
            let worth_waiting = released_pages > 0
                || released.pending_pages + released.held_back_pages >= minimum_pages;
            if released.pending_pages == 0
                || !worth_waiting
                || interrupt.load(std::sync::atomic::Ordering::Relaxed)
                || started.elapsed() >= PENDING_RELEASE_WAIT_MAX
            {
                return Ok(released_pages);
            }
            std::thread::sleep(PENDING_RELEASE_POLL_INTERVAL);
        }
    }

    /// Rewrites the trees `which` selects with their entries in order, one commit per tree,
    /// until `interrupt` is set (see [`Repack`]); the old pages become free, and
    /// [`Shard::release_free_space`] gives their blocks back once no snapshot reads them.
    /// A compaction ([`Repack::Everything`]) first stores every document not stored with the
    /// shard's newest dictionary again with it, and the older dictionaries go (see
    /// `apply::recompress_documents`), in a commit of its own.
    pub fn repack(&self, which: Repack, interrupt: &AtomicBool) -> ShardResult<RepackOutcome> {
        if which == Repack::Everything {
            let write = self.database.begin_write()?;
            apply::recompress_documents(&write, self.views.decoders())?;
            write.commit()?;
        }
        repack::repack(&self.database, which, &self.repacked, interrupt)
    }

    /// The document with this external id, in the last commit.
    pub fn document(&self, external_id: &str) -> ShardResult<Option<Map<String, Value>>> {
        self.read()?.document(external_id, None)
    }
}
