//! The shards a core owns, and the commands other cores send them.
//!
//! Each core opens the shard files it owns lazily, on the first command for them, and keeps
//! them open. A batch is applied in two phases: [`ShardCommand::Prepare`] opens the batch's
//! write transaction (with the internal ids the batch assigns), then each
//! [`ShardCommand::Apply`] brings a bounded chunk of the batch's planned documents, resolved
//! against the shard's stored ones on the core and applied inside that transaction on the
//! core's helper thread, [`APPLY_CHUNK_DOCUMENTS`] at a time (so searches on this core and
//! the coordinator keep flowing);
//! [`ShardCommand::Commit`] makes it durable (the sync runs off the core) and
//! [`ShardCommand::Abort`] drops it. [`ShardCommand::Edit`] prepares a document edition the
//! same way: the shard runs the function on its own documents and applies the results.
//!
//! Invariants: at most one prepared batch per shard (the scheduler runs one batch at a
//! time); reads use a snapshot of the last commit and never see a prepared batch; applying
//! is idempotent by batch uid (the shard records the last batch it applied).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::{Map, Value};
use shards::documents::operation::{Outcome, PlannedDocument, merge_top_level};
use shards::documents::payload_document::PayloadDocument;
use shards::documents::simd_document::SimdParser;
use shards::filter::{Filter, FilterableRules, evaluate};
use shards::shard::{
    ListQuery, Operation, PENDING_CHANGES_BYTES_DEFAULT, PreparedBatch, Repack, Shard, ShardError,
    ShardSnapshot, ShardStats, SortRule,
};
use storage_engine::Options;

use super::document_edition::{Edited, Edition, EditionRequest};
use super::read_documents::{ReadDocument, read_documents};
use crate::errors::{Code, ResponseError};
use crate::search::shard_search::{
    ShardSearchAnswer, ShardSearchRequest, facets_of_queries, search_shard,
};

/// Documents an edition reads before handing them to the helper thread.
pub const EDITION_STEP_DOCUMENTS: usize = 256;

/// How long one step of an edition's scripts may keep the core's helper thread: long
/// enough to amortise the hand-off (tens of microseconds), short enough that a file sync
/// queued behind it barely waits.
pub const EDITION_STEP_BUDGET: std::time::Duration = std::time::Duration::from_millis(1);

/// Changed pages one shard's write transaction keeps in memory by default. A batch rewrites
/// leaves all over the word trees, so without a bound its transaction would hold most of the
/// shard file in memory until it commits. Measured on the 886k PyPI documents (two shards):
/// peak RSS after indexing 1,541-1,762 MiB unbounded; with 8, 16, 32 and 256 MiB, 689, 779,
/// 718 and 1,592 MiB; indexing time within the runs' noise (27-33 s for all).
pub const SHARD_WRITE_MEMORY_BYTES_DEFAULT: u64 = 32 << 20;

/// Share of `--max-indexing-memory` the write transactions of all cores may hold together;
/// the rest is for the batch's pending word changes, its plan and its payloads.
const WRITE_MEMORY_SHARE_OF_INDEXING_MEMORY: u64 = 4;

/// Share of `--max-indexing-memory` the pending word and facet changes of all cores' batches
/// may take together.
const PENDING_CHANGES_SHARE_OF_INDEXING_MEMORY: u64 = 2;

/// `default`, lowered so that one per core stays within `1 / share` of `max_indexing_memory`.
fn per_core_share(default: u64, max_indexing_memory: Option<u64>, share: u64, cores: usize) -> u64 {
    let cores = u64::try_from(cores.max(1)).unwrap_or(u64::MAX);
    match max_indexing_memory {
        Some(memory) => default.min(memory / share / cores),
        None => default,
    }
}

/// Changed pages one shard's write transaction keeps in memory at most: the default, lowered
/// so that one transaction per core stays within a quarter of `max_indexing_memory`.
pub fn shard_write_memory_bytes(max_indexing_memory: Option<u64>, cores: usize) -> u64 {
    per_core_share(
        SHARD_WRITE_MEMORY_BYTES_DEFAULT,
        max_indexing_memory,
        WRITE_MEMORY_SHARE_OF_INDEXING_MEMORY,
        cores,
    )
}

/// Heap bytes one shard's pending word and facet changes take at most between two writes to
/// its trees: the shards' default, lowered so that one batch per core stays within half of
/// `max_indexing_memory`.
pub fn shard_pending_changes_bytes(max_indexing_memory: Option<u64>, cores: usize) -> u64 {
    let default = u64::try_from(PENDING_CHANGES_BYTES_DEFAULT).unwrap_or(u64::MAX);
    per_core_share(
        default,
        max_indexing_memory,
        PENDING_CHANGES_SHARE_OF_INDEXING_MEMORY,
        cores,
    )
}

/// What one shard's batch may hold in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardMemory {
    /// Changed pages its write transaction keeps in memory at most (the page store writes the
    /// rest to the file before the commit).
    pub write_pages_bytes: u64,
    /// Heap bytes its pending word and facet changes take at most between two writes to the
    /// trees.
    pub pending_changes_bytes: u64,
}

impl ShardMemory {
    /// The bounds for `cores` cores sharing `max_indexing_memory`.
    pub fn for_indexing_memory(max_indexing_memory: Option<u64>, cores: usize) -> ShardMemory {
        ShardMemory {
            write_pages_bytes: shard_write_memory_bytes(max_indexing_memory, cores),
            pending_changes_bytes: shard_pending_changes_bytes(max_indexing_memory, cores),
        }
    }
}

/// The name of the threads that run idle maintenance (see
/// [`crate::runtime::blocking::run_in_background`]).
const BACKGROUND_THREAD_NAME: &str = "shard-maintenance";

/// Documents one hand-off to the helper thread applies.
pub const APPLY_CHUNK_DOCUMENTS: usize = 1_000;

/// Where a shard lives: its index's storage directory name and its number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardAddress {
    pub storage: String,
    pub shard: u32,
}

impl ShardAddress {
    /// The shard's page-store file.
    pub fn path(&self, data_directory: &Path) -> PathBuf {
        data_directory
            .join(super::catalog::INDEXES_DIRECTORY)
            .join(&self.storage)
            .join(format!("{}.store", super::catalog::shard_name(self.shard)))
    }
}

/// What a shard is asked.
#[derive(Debug)]
pub enum ShardCommand {
    /// Opens a batch's write transaction (uncommitted until [`ShardCommand::Commit`]).
    Prepare {
        batch_uid: u64,
        delete_all: bool,
        /// Index-wide internal ids for the documents the batch creates.
        assigned: Vec<(String, u32)>,
    },
    /// Runs a document edition on the shard's documents `filter` selects (all without a
    /// filter), uncommitted, like [`ShardCommand::Prepare`]; answers
    /// [`ShardAnswer::Edited`].
    Edit {
        batch_uid: u64,
        filter: Option<Filter>,
        edition: Box<EditionRequest>,
    },
    /// Applies a chunk of the prepared batch's share.
    Apply {
        documents: Vec<(String, PlannedDocument<PayloadDocument>)>,
    },
    /// Applies a chunk of the prepared batch's share that the shard reads from the batch's
    /// update `files` itself (see [`super::read_documents`]).
    ApplyRead {
        files: Arc<[PathBuf]>,
        documents: Vec<ReadDocument>,
    },
    Commit,
    Abort,
    /// Replaces the facet settings (filterable and sortable attributes), rebuilding the
    /// facet indexes when they change; committed at once, idempotent.
    SetFacetSettings {
        filterable: Value,
        sortable: Vec<String>,
    },
    /// Replaces the text settings, rebuilding the inverted index when what it depends on
    /// changed; committed at once, idempotent.
    SetTextSettings {
        settings: Box<shards::analysis::TextSettings>,
    },
    /// One document by external id, with only `fields` when given.
    Document {
        external_id: String,
        fields: Option<Vec<String>>,
    },
    /// The first `needed` documents of a listing, with the number of matches.
    List {
        needed: usize,
        filter: Option<Filter>,
        ids: Option<Vec<String>>,
        sort: Vec<SortRule>,
        fields: Option<Vec<String>>,
    },
    Stats,
    /// Every field path the shard has ever seen, sorted; answers [`ShardAnswer::FieldPaths`].
    FieldPaths,
    /// Bytes of the shard's file that hold no live data; answers [`ShardAnswer::Bytes`].
    UnusedBytes,
    /// The internal ids in use.
    UsedIds,
    /// Which of `ids` are stored.
    Existing {
        ids: Vec<String>,
    },
    /// The external ids of the documents `filter` matches.
    Matching {
        filter: Filter,
    },
    /// A search's share (see [`crate::search::shard_search`]).
    Search(Box<ShardSearchRequest>),
    /// A facet search's share (see [`crate::search::facet_search`]).
    FacetSearch(Box<crate::search::facet_search::ShardFacetSearch>),
    /// Facet counts over the matches of several searches (`queries`, `facets`).
    FacetsOfQueries(Box<(Vec<ShardSearchRequest>, Vec<String>)>),
    /// Per term of a query, the documents of the shard matching it (for
    /// `matchingStrategy: frequency`).
    TermCounts(Box<shards::search::SearchQuery>),
    /// Closes the shard and removes its file (index deletion).
    Remove,
    /// Gives the disk blocks of the shard file's free pages back to the file system when at
    /// least `minimum_pages` are not given back yet (see
    /// [`shards::shard::Shard::release_free_space`]), after rewriting the trees `repack`
    /// selects in full pages (see [`shards::shard::Shard::repack`]): once the task queue is
    /// idle (the sparse trees), and for an `indexCompaction` task (every tree, with no
    /// minimum). Answers [`ShardAnswer::Sizes`], the blocks the file held before and after.
    ReleaseFreeSpace {
        minimum_pages: u64,
        repack: Repack,
        /// Set when a task arrives: stops the repack between two runs of entries.
        interrupt: Arc<AtomicBool>,
    },
}

impl ShardCommand {
    /// Whether the command is part of the write path (a batch, a settings rebuild, an
    /// index removal), which runs in the indexing latency class.
    pub fn is_write(&self) -> bool {
        match self {
            ShardCommand::Prepare { .. }
            | ShardCommand::Edit { .. }
            | ShardCommand::Apply { .. }
            | ShardCommand::ApplyRead { .. }
            | ShardCommand::Commit
            | ShardCommand::Abort
            | ShardCommand::SetFacetSettings { .. }
            | ShardCommand::SetTextSettings { .. }
            | ShardCommand::Remove
            | ShardCommand::ReleaseFreeSpace { .. } => true,
            ShardCommand::Document { .. }
            | ShardCommand::List { .. }
            | ShardCommand::Stats
            | ShardCommand::FieldPaths
            | ShardCommand::UnusedBytes
            | ShardCommand::UsedIds
            | ShardCommand::Existing { .. }
            | ShardCommand::Matching { .. }
            | ShardCommand::Search(_)
            | ShardCommand::FacetSearch(_)
            | ShardCommand::FacetsOfQueries(_)
            | ShardCommand::TermCounts(_) => false,
        }
    }
}

/// A listed document: its shard-local order key and its body.
#[derive(Debug)]
pub struct ListedDocument {
    pub internal_id: u32,
    pub document: Map<String, Value>,
}

/// A shard's answer.
#[derive(Debug)]
pub enum ShardAnswer {
    /// An edition's share is prepared: the documents the function ran on (0 when the shard
    /// had already applied the batch).
    Edited {
        candidates: u64,
    },
    Done,
    Document(Option<Map<String, Value>>),
    Page {
        documents: Vec<ListedDocument>,
        total: u64,
    },
    Stats(ShardStats),
    Bytes(u64),
    /// A file's allocated bytes before and after a change.
    Sizes {
        before: u64,
        after: u64,
    },
    Ids(Vec<String>),
    FieldPaths(Vec<String>),
    Bitmap(roaring::RoaringBitmap),
    Search(Box<ShardSearchAnswer>),
    Counts(Vec<u64>),
    Facets(std::collections::BTreeMap<String, shards::search::FieldFacetCounts>),
    FacetValues(Vec<shards::search::facet_values::FacetValueCount>),
}

/// The shards of one core.
pub struct ShardHost {
    data_directory: PathBuf,
    /// What a shard's batch may hold in memory.
    memory: ShardMemory,
    open: RefCell<HashMap<ShardAddress, Arc<Shard>>>,
    prepared: RefCell<HashMap<ShardAddress, Preparing>>,
}

/// A batch being applied to one shard.
struct Preparing {
    batch: PreparedBatch,
    /// The last commit, to resolve planned documents against the stored ones.
    snapshot: ShardSnapshot,
    delete_all: bool,
}

impl ShardHost {
    pub fn new(data_directory: PathBuf, memory: ShardMemory) -> ShardHost {
        ShardHost {
            data_directory,
            memory,
            open: RefCell::new(HashMap::new()),
            prepared: RefCell::new(HashMap::new()),
        }
    }

    /// The bound of a batch's pending changes, as the shard takes it.
    fn pending_changes_bytes(&self) -> usize {
        usize::try_from(self.memory.pending_changes_bytes).unwrap_or(usize::MAX)
    }

    /// Runs `command` on the shard at `address`.
    pub async fn handle(
        &self,
        address: ShardAddress,
        command: ShardCommand,
    ) -> Result<ShardAnswer, ResponseError> {
        match command {
            ShardCommand::Prepare {
                batch_uid,
                delete_all,
                assigned,
            } => self
                .prepare(address, batch_uid, delete_all, assigned)
                .map(|()| ShardAnswer::Done),
            ShardCommand::Apply { documents } => self
                .apply(&address, documents)
                .await
                .map(|()| ShardAnswer::Done),
            ShardCommand::ApplyRead { files, documents } => {
                let documents = read_documents(&files, documents)?;
                self.apply(&address, documents)
                    .await
                    .map(|()| ShardAnswer::Done)
            }
            ShardCommand::Edit {
                batch_uid,
                filter,
                edition,
            } => self
                .prepare_edition(address, batch_uid, filter, &edition)
                .await
                .map(|candidates| ShardAnswer::Edited { candidates }),
            ShardCommand::Commit => self.commit(&address).await.map(|()| ShardAnswer::Done),
            ShardCommand::Abort => {
                self.prepared.borrow_mut().remove(&address);
                Ok(ShardAnswer::Done)
            }
            ShardCommand::SetFacetSettings {
                filterable,
                sortable,
            } => {
                let shard = self.shard(&address)?;
                crate::runtime::blocking::run(move || {
                    shard.set_facet_settings(&filterable, &sortable)
                })
                .await
                .map_err(shard_error)?;
                Ok(ShardAnswer::Done)
            }
            ShardCommand::SetTextSettings { settings } => {
                let shard = self.shard(&address)?;
                crate::runtime::blocking::run(move || shard.set_text_settings(*settings))
                    .await
                    .map_err(shard_error)?;
                Ok(ShardAnswer::Done)
            }
            ShardCommand::Remove => self.remove(&address).await.map(|()| ShardAnswer::Done),
            ShardCommand::ReleaseFreeSpace {
                minimum_pages,
                repack,
                interrupt,
            } => {
                let shard = self.shard(&address)?;
                let path = address.path(&self.data_directory);
                let work = move || {
                    let before = allocated_bytes(&path)?;
                    let outcome = shard.repack(repack, &interrupt).map_err(shard_error)?;
                    if !outcome.repacked.is_empty() || outcome.interrupted {
                        tracing::debug!(?outcome, "trees rewritten");
                    }
                    shard
                        .release_free_space(minimum_pages, &interrupt)
                        .map_err(shard_error)?;
                    Ok::<_, ResponseError>((before, allocated_bytes(&path)?))
                };
                let (before, after) = match repack {
                    // Idle maintenance yields the CPU to requests and indexing.
                    Repack::Sparse => {
                        crate::runtime::blocking::run_in_background(BACKGROUND_THREAD_NAME, work)
                            .await
                            .map_err(|error| crate::errors::io_error(&error))??
                    }
                    Repack::Nothing | Repack::Everything => {
                        crate::runtime::blocking::run(work).await?
                    }
                };
                Ok(ShardAnswer::Sizes { before, after })
            }
            ShardCommand::UnusedBytes => {
                Ok(ShardAnswer::Bytes(self.shard(&address)?.unused_bytes()))
            }
            read => self.read(&address, read),
        }
    }

    fn read(
        &self,
        address: &ShardAddress,
        command: ShardCommand,
    ) -> Result<ShardAnswer, ResponseError> {
        let snapshot = self.shard(address)?.read().map_err(shard_error)?;
        match command {
            ShardCommand::Document {
                external_id,
                fields,
            } => snapshot
                .document(&external_id, fields.as_deref())
                .map(ShardAnswer::Document)
                .map_err(shard_error),
            ShardCommand::List {
                needed,
                filter,
                ids,
                sort,
                fields,
            } => {
                let mut selected = match filter {
                    Some(filter) => {
                        Some(filter_ids(&snapshot, &filter, Code::InvalidDocumentFilter)?)
                    }
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
                let query = ListQuery {
                    offset: 0,
                    limit: needed,
                    filter: selected,
                    sort,
                };
                let (page, total) = snapshot
                    .documents(&query, fields.as_deref())
                    .map_err(shard_error)?;
                let documents = page
                    .into_iter()
                    .map(|(internal_id, document)| ListedDocument {
                        internal_id,
                        document,
                    })
                    .collect();
                Ok(ShardAnswer::Page { documents, total })
            }
            ShardCommand::Stats => {
                let shard = self.shard(address)?;
                shard.stats().map(ShardAnswer::Stats).map_err(shard_error)
            }
            ShardCommand::FieldPaths => snapshot
                .fields()
                .map(ShardAnswer::FieldPaths)
                .map_err(shard_error),
            ShardCommand::UsedIds => Ok(ShardAnswer::Bitmap(snapshot.document_ids().clone())),
            ShardCommand::Existing { ids } => snapshot
                .stored_external_ids(ids)
                .map(ShardAnswer::Ids)
                .map_err(shard_error),
            ShardCommand::Search(request) => search_shard(&snapshot, *request)
                .map(|answer| ShardAnswer::Search(Box::new(answer))),
            ShardCommand::FacetSearch(request) => {
                crate::search::facet_search::facet_search_shard(&snapshot, *request)
                    .map(ShardAnswer::FacetValues)
            }
            ShardCommand::FacetsOfQueries(request) => {
                let (queries, facets) = *request;
                facets_of_queries(&snapshot, queries, &facets).map(ShardAnswer::Facets)
            }
            ShardCommand::TermCounts(query) => snapshot
                .term_document_counts(&query)
                .map(ShardAnswer::Counts)
                .map_err(shard_error),
            ShardCommand::Matching { filter } => {
                let matched = filter_ids(&snapshot, &filter, Code::InvalidDocumentFilter)?;
                snapshot
                    .external_ids(&matched)
                    .map(ShardAnswer::Ids)
                    .map_err(shard_error)
            }
            other => Err(ResponseError::internal(format!(
                "`{other:?}` is not a read"
            ))),
        }
    }

    /// The open shard at `address`, opened (created) on first use.
    fn shard(&self, address: &ShardAddress) -> Result<Arc<Shard>, ResponseError> {
        if let Some(shard) = self.open.borrow().get(address) {
            return Ok(shard.clone());
        }
        let path = address.path(&self.data_directory);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| crate::errors::io_error(&error))?;
        }
        let options = Options {
            write_memory_bytes_max: Some(self.memory.write_pages_bytes),
            ..Options::default()
        };
        let shard = Shard::open(&path, options).map_err(shard_error)?;
        shard.bound_pending_changes(self.pending_changes_bytes());
        let shard = Arc::new(shard);
        self.open
            .borrow_mut()
            .insert(address.clone(), shard.clone());
        Ok(shard)
    }

    fn prepare(
        &self,
        address: ShardAddress,
        batch_uid: u64,
        delete_all: bool,
        assigned: Vec<(String, u32)>,
    ) -> Result<(), ResponseError> {
        let shard = self.shard(&address)?;
        self.prepared.borrow_mut().remove(&address);
        let snapshot = shard.read().map_err(shard_error)?;
        let mut batch = shard.prepare(batch_uid).map_err(shard_error)?;
        batch.assign_ids(assigned);
        if delete_all {
            batch
                .apply_chunk(vec![Operation::DeleteAll])
                .map_err(shard_error)?;
        }
        self.prepared.borrow_mut().insert(
            address,
            Preparing {
                batch,
                snapshot,
                delete_all,
            },
        );
        Ok(())
    }

    /// Applies `documents` to the batch prepared on `address`.
    async fn apply(
        &self,
        address: &ShardAddress,
        documents: Vec<(String, PlannedDocument<PayloadDocument>)>,
    ) -> Result<(), ResponseError> {
        let Some(mut preparing) = self.prepared.borrow_mut().remove(address) else {
            return Err(ResponseError::internal(
                "documents arrived for a shard with no prepared batch",
            ));
        };
        let mut chunk = Vec::with_capacity(APPLY_CHUNK_DOCUMENTS.min(documents.len()));
        let mut parser = SimdParser::new();
        for (external_id, planned) in documents {
            // The shard looks the id up again when it applies the operation; reading the
            // stored document here only serves outcomes that depend on it.
            let stored = if preparing.delete_all || !planned.depends_on_stored() {
                None
            } else {
                preparing
                    .snapshot
                    .document(&external_id, None)
                    .map_err(shard_error)?
            };
            if let Some(operation) = resolve(external_id, planned, stored, &mut parser)? {
                chunk.push(operation);
            }
            if chunk.len() >= APPLY_CHUNK_DOCUMENTS {
                preparing.batch =
                    apply_off_core(preparing.batch, std::mem::take(&mut chunk)).await?;
            }
        }
        if !chunk.is_empty() {
            preparing.batch = apply_off_core(preparing.batch, chunk).await?;
        }
        self.prepared
            .borrow_mut()
            .insert(address.clone(), preparing);
        Ok(())
    }

    /// Runs the edition on the selected documents inside a prepared batch; answers how many
    /// documents the function ran on. A script error drops the batch (nothing changes).
    async fn prepare_edition(
        &self,
        address: ShardAddress,
        batch_uid: u64,
        filter: Option<Filter>,
        request: &EditionRequest,
    ) -> Result<u64, ResponseError> {
        let shard = self.shard(&address)?;
        self.prepared.borrow_mut().remove(&address);
        let snapshot = shard.read().map_err(shard_error)?;
        let mut prepared = shard.prepare(batch_uid).map_err(shard_error)?;
        let edited = if prepared.is_already_applied() {
            0
        } else {
            run_edition(&snapshot, &mut prepared, filter.as_ref(), request).await?
        };
        self.prepared.borrow_mut().insert(
            address,
            Preparing {
                batch: prepared,
                snapshot,
                delete_all: false,
            },
        );
        Ok(edited)
    }

    async fn commit(&self, address: &ShardAddress) -> Result<(), ResponseError> {
        let Some(preparing) = self.prepared.borrow_mut().remove(address) else {
            return Err(ResponseError::internal(
                "a commit arrived for a shard with no prepared batch",
            ));
        };
        let Preparing {
            batch, snapshot, ..
        } = preparing;
        drop(snapshot);
        crate::runtime::blocking::run(move || batch.commit())
            .await
            .map(|_| ())
            .map_err(shard_error)
    }

    async fn remove(&self, address: &ShardAddress) -> Result<(), ResponseError> {
        self.prepared.borrow_mut().remove(address);
        self.open.borrow_mut().remove(address);
        let path = address.path(&self.data_directory);
        crate::runtime::blocking::run(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(error),
        })
        .await
        .map_err(|error| crate::errors::io_error(&error))
    }
}

/// Applies `chunk` to `batch` on the core's helper thread and hands the batch back: the
/// analysis and the posting flushes it runs take up to a second of CPU per flush, which on
/// the core would stall its searches and the coordinator feeding the other shards.
async fn apply_off_core(
    mut batch: PreparedBatch,
    chunk: Vec<Operation>,
) -> Result<PreparedBatch, ResponseError> {
    crate::runtime::blocking::run(move || batch.apply_chunk(chunk).map(|()| batch))
        .await
        .map_err(shard_error)
}

/// The operation that gives `planned`'s effect on a document `stored` (or absent). A document
/// written over nothing goes on as it came (as text, the shard builds it on its helper
/// thread); one written over the stored document is built here with `parser` and merged.
fn resolve(
    external_id: String,
    planned: PlannedDocument<PayloadDocument>,
    stored: Option<Map<String, Value>>,
    parser: &mut SimdParser,
) -> Result<Option<Operation>, ResponseError> {
    Ok(match planned.into_outcome(stored.is_some()) {
        Outcome::Untouched => None,
        Outcome::Deleted => Some(Operation::Delete { external_id }),
        Outcome::Written {
            onto_stored,
            document,
        } => Some(match (stored, document) {
            (Some(mut stored), document) if onto_stored => {
                let update = document.into_document(parser).map_err(|error| {
                    ResponseError::internal(format!(
                        "the text of document `{external_id}` does not parse: {error}"
                    ))
                })?;
                merge_top_level(&mut stored, update);
                Operation::Replace {
                    external_id,
                    document: stored,
                }
            }
            (_, PayloadDocument::Text(text)) => Operation::ReplaceText { external_id, text },
            (_, PayloadDocument::Built(document)) => Operation::Replace {
                external_id,
                document,
            },
        }),
    })
}

/// The external id of a stored document.
fn external_id(document: &Map<String, Value>, primary_key: &str) -> Result<String, ResponseError> {
    shards::documents::document_id::extract_document_id(document, primary_key)
        .map_err(crate::tasks::index_batch::documents_error)
}

/// Runs the edition's script on `documents` on the core's helper thread, in steps of at
/// most [`EDITION_STEP_BUDGET`] (plus one document), and adds the operations it gives to
/// `chunk`. Off the core, a slow script (up to
/// [`crate::coordinator::document_edition::SCRIPT_OPERATIONS_MAX`] operations per
/// document) never holds up requests; in short steps, it never holds up for long the file
/// syncs that share the helper. Stops at the first document whose script fails.
async fn edit_step(
    edition: &Arc<Edition>,
    mut documents: Vec<Map<String, Value>>,
    primary_key: &str,
    chunk: &mut Vec<Operation>,
) -> Result<(), ResponseError> {
    while !documents.is_empty() {
        let edition = edition.clone();
        let (edited, rest) =
            crate::runtime::blocking::run(move || edit_for_a_step(&edition, documents)).await?;
        documents = rest;
        for (document, outcome) in edited {
            match outcome {
                Edited::Unchanged => {}
                Edited::Deleted => chunk.push(Operation::Delete {
                    external_id: external_id(&document, primary_key)?,
                }),
                Edited::Replaced(edited) => chunk.push(Operation::Replace {
                    external_id: external_id(&document, primary_key)?,
                    document: edited,
                }),
            }
        }
    }
    Ok(())
}

/// What one step of [`edit_step`] gives: the documents it ran the script on, with the
/// outcome, and those left for the next step.
type EditedStep = (Vec<(Map<String, Value>, Edited)>, Vec<Map<String, Value>>);

/// Runs the script on the first documents of `documents` until [`EDITION_STEP_BUDGET`]
/// has passed.
fn edit_for_a_step(
    edition: &Edition,
    documents: Vec<Map<String, Value>>,
) -> Result<EditedStep, ResponseError> {
    let started = std::time::Instant::now();
    let mut remaining = documents.into_iter();
    let mut edited = Vec::new();
    for document in remaining.by_ref() {
        let outcome = edition.edit(&document)?;
        edited.push((document, outcome));
        if started.elapsed() >= EDITION_STEP_BUDGET {
            break;
        }
    }
    Ok((edited, remaining.collect()))
}

/// The bytes of disk blocks the file at `path` holds (what `du` counts, not its length: a
/// shard file's released free pages are holes).
fn allocated_bytes(path: &Path) -> Result<u64, ResponseError> {
    use std::os::unix::fs::MetadataExt;
    /// Bytes per unit of `st_blocks`, fixed by POSIX.
    const STAT_BLOCK_BYTES: u64 = 512;
    std::fs::metadata(path)
        .map(|metadata| metadata.blocks() * STAT_BLOCK_BYTES)
        .map_err(|error| crate::errors::io_error(&error))
}

/// The internal ids `filter` selects in `snapshot`; an evaluation error (such as a bad geo
/// radius) carries `code`.
pub fn filter_ids(
    snapshot: &shards::shard::ShardSnapshot,
    filter: &Filter,
    code: Code,
) -> Result<roaring::RoaringBitmap, ResponseError> {
    let rules = FilterableRules::from_setting(snapshot.settings().filterable_setting())
        .map_err(ResponseError::internal)?;
    let source = snapshot.facet_source();
    let selected = evaluate(filter, &rules, &source)
        .map_err(|error| ResponseError::new(code, error.message))?;
    if let Some(error) = source.take_error() {
        return Err(shard_error(error));
    }
    Ok(selected)
}

/// A shard failure as an API error (`no_space_left_on_device` and the like keep their code).
pub fn shard_error(error: ShardError) -> ResponseError {
    match error {
        ShardError::Storage(storage_engine::Error::Io(source)) => crate::errors::io_error(&source),
        ShardError::Storage(storage_engine::Error::NoSpace) => crate::errors::io_error(
            &std::io::Error::from_raw_os_error(crate::errors::ERRNO_NO_SPACE_LEFT_ON_DEVICE),
        ),
        other => ResponseError::internal(other),
    }
}

/// Runs the edition's function on the documents of `snapshot` that `filter` selects (all
/// without one), applying the results to `prepared` in chunks; answers how many documents the
/// function ran on.
async fn run_edition(
    snapshot: &ShardSnapshot,
    prepared: &mut PreparedBatch,
    filter: Option<&Filter>,
    request: &EditionRequest,
) -> Result<u64, ResponseError> {
    let candidates = match filter {
        Some(filter) => filter_ids(snapshot, filter, Code::InvalidDocumentFilter)?,
        None => snapshot.document_ids().clone(),
    };
    let edition = Arc::new(Edition::new(request)?);
    let mut chunk = Vec::with_capacity(APPLY_CHUNK_DOCUMENTS);
    let mut step = Vec::with_capacity(EDITION_STEP_DOCUMENTS);
    for internal_id in &candidates {
        let document = snapshot
            .document_by_id(internal_id, None)
            .map_err(shard_error)?
            .ok_or_else(|| ResponseError::internal("a live id without its document"))?;
        step.push(document);
        if step.len() >= EDITION_STEP_DOCUMENTS {
            let documents =
                std::mem::replace(&mut step, Vec::with_capacity(EDITION_STEP_DOCUMENTS));
            edit_step(&edition, documents, &request.primary_key, &mut chunk).await?;
        }
        if chunk.len() >= APPLY_CHUNK_DOCUMENTS {
            prepared
                .apply_chunk(std::mem::take(&mut chunk))
                .map_err(shard_error)?;
            glommio::yield_if_needed().await;
        }
    }
    edit_step(&edition, step, &request.primary_key, &mut chunk).await?;
    prepared.apply_chunk(chunk).map_err(shard_error)?;
    Ok(candidates.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_memory_of_a_shard_is_the_default_unless_indexing_memory_is_small() {
        assert_eq!(
            shard_write_memory_bytes(None, 2),
            SHARD_WRITE_MEMORY_BYTES_DEFAULT
        );
        assert_eq!(
            shard_write_memory_bytes(Some(16 << 30), 2),
            SHARD_WRITE_MEMORY_BYTES_DEFAULT
        );
        // A quarter of 64 MiB shared by two cores.
        assert_eq!(shard_write_memory_bytes(Some(64 << 20), 2), 8 << 20);
        assert_eq!(shard_write_memory_bytes(Some(64 << 20), 0), 16 << 20);
    }

    #[test]
    fn the_pending_changes_of_a_shard_take_the_default_unless_indexing_memory_is_small() {
        let default = u64::try_from(PENDING_CHANGES_BYTES_DEFAULT).expect("fits u64");
        assert_eq!(shard_pending_changes_bytes(None, 2), default);
        assert_eq!(shard_pending_changes_bytes(Some(16 << 30), 2), default);
        // Half of 64 MiB shared by two cores.
        assert_eq!(shard_pending_changes_bytes(Some(64 << 20), 2), 16 << 20);
        let memory = ShardMemory::for_indexing_memory(Some(64 << 20), 2);
        assert_eq!(memory.write_pages_bytes, 8 << 20);
        assert_eq!(memory.pending_changes_bytes, 16 << 20);
    }
}
