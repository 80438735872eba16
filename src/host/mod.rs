//! The shard side of every command: the shards a core owns, and what each command does on
//! its shard. The use cases (`crate::search`, `crate::tasks`, the document and index routes)
//! send typed requests ([`protocol::ShardRequest`]) through `crate::coordinator` to the
//! owner core of a shard, where this folder runs them.
//!
//! Each core opens the shard files it owns lazily, on the first command for them, and keeps
//! them open in the [`registry`] every core shares: a read that needs only a snapshot of a
//! shard's last commit may run on any core once the owner opened the shard. A batch is
//! applied in two phases ([`batch`]): [`batch::Prepare`] opens the
//! batch's write transaction (with the internal ids the batch assigns), then each
//! [`batch::Apply`] brings a bounded chunk of the batch's planned documents, resolved
//! against the shard's stored ones on the core and applied inside that transaction on the
//! core's indexing thread, [`batch::APPLY_CHUNK_DOCUMENTS`] at a time (so searches on this
//! core and the coordinator keep flowing); [`batch::Commit`] makes it durable (on the indexing
//! thread too) and [`batch::Abort`] drops it. [`edit::Edit`] prepares a document edition
//! the same way: the shard runs the function on its own documents and applies the results.
//!
//! Layout: [`protocol`] (the request traits), [`batch`] and [`edit`] (the write path),
//! [`settings`] (facet and text settings), [`maintenance`] (removal, free space),
//! [`documents`] (document reads, stats, ids), [`search`], [`distinct`] and [`facet_search`]
//! (a search's share), [`read_documents`] (reading planned documents from update files),
//! [`edition`] (the Rhai function engine), [`memory`] (what a batch may hold), [`export`] (a
//! shard's documents streamed to another server by an export task), [`dump`] (a shard's
//! documents written into a dump's staging directory), [`snapshot`] (a shard's page store
//! and vector files copied into a snapshot's staging directory), [`registry`] (the open
//! shards, shared by every core's host), [`warming`] (the searches a
//! batch's commit replays before readers see it), [`network_transfer`] and
//! [`network_deletion`] (a shard's share of a network topology change: its documents sent
//! to their new owners, then the ones it no longer keeps deleted), [`growth`] (an index's
//! documents copied into the more numerous shards it grows to).
//!
//! Invariants: at most one prepared batch per shard (the scheduler runs one batch at a
//! time); reads use a snapshot of the last commit and never see a prepared batch; applying
//! is idempotent by batch uid (the shard records the last batch it applied). Nothing here
//! imports from the coordinator, the use cases or the routes.

pub mod batch;
pub mod distinct;
pub mod documents;
pub mod dump;
pub mod edit;
pub mod edition;
pub mod embedding;
pub mod embedding_plan;
pub mod export;
pub mod facet_search;
pub mod growth;
pub mod maintenance;
pub mod memory;
pub mod network_deletion;
pub mod network_transfer;
pub mod pinned;
pub mod protocol;
pub mod read_documents;
pub mod reembed;
pub mod registry;
pub mod search;
pub mod settings;
pub mod snapshot;
pub mod warming;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shards::filter::{Filter, FilterErrorKind, FilterableRules, evaluate};
use shards::shard::{PreparedBatch, Shard, ShardSnapshot};
use storage_engine::Options;

use crate::errors::{Code, ResponseError, shard_error};
pub use memory::ShardMemory;
pub use registry::{ShardRegistry, StoreBudget};

/// The folder of the data directory that holds one folder per index storage.
pub const INDEXES_DIRECTORY: &str = "indexes";

/// The file name (without extension) of shard `shard` in its index's storage folder.
pub fn shard_name(shard: u32) -> String {
    format!("shard-{shard}")
}

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
            .join(INDEXES_DIRECTORY)
            .join(&self.storage)
            .join(format!("{}.store", shard_name(self.shard)))
    }
}

/// The shards of one core: those it owns (opens, writes, removes) and, through the
/// registry every core shares, those it may read.
pub struct ShardHost {
    data_directory: PathBuf,
    /// What a shard's batch may hold in memory.
    memory: ShardMemory,
    /// Which core this is, of how many: shard `s` is owned by core `s mod cores`.
    core: usize,
    cores: usize,
    /// The open shards of every core, and the searches each remembers ([`warming`]).
    registry: Arc<ShardRegistry>,
    prepared: RefCell<HashMap<ShardAddress, Preparing>>,
}

/// A batch being applied to one shard.
struct Preparing {
    batch: PreparedBatch,
    /// The last commit, to resolve planned documents against the stored ones.
    snapshot: ShardSnapshot,
    delete_all: bool,
    /// The index's remote embedders: what a chunk is embedded with before it applies.
    embedders: Vec<embedding::RemoteEmbedder>,
}

impl ShardHost {
    /// The host of core `core` of `cores`, sharing `registry` with the other cores' hosts.
    pub fn new(
        data_directory: PathBuf,
        memory: ShardMemory,
        registry: Arc<ShardRegistry>,
        core: usize,
        cores: usize,
    ) -> ShardHost {
        assert!(core < cores, "core {core} of a server of {cores} cores");
        ShardHost {
            data_directory,
            memory,
            core,
            cores,
            registry,
            prepared: RefCell::new(HashMap::new()),
        }
    }

    /// Whether this core may read the shard at `address` without asking its owner: its
    /// owner opened it.
    pub fn can_read(&self, address: &ShardAddress) -> bool {
        self.owns(address) || self.registry.is_open(address)
    }

    /// Whether this core owns the shard at `address`.
    fn owns(&self, address: &ShardAddress) -> bool {
        owner_core(address.shard, self.cores) == self.core
    }

    /// The bound of a batch's pending changes, as the shard takes it.
    fn pending_changes_bytes(&self) -> usize {
        usize::try_from(self.memory.pending_changes_bytes).unwrap_or(usize::MAX)
    }

    /// A snapshot of the last commit of the shard at `address`.
    pub fn snapshot(&self, address: &ShardAddress) -> Result<ShardSnapshot, ResponseError> {
        self.shard(address)?.read().map_err(shard_error)
    }

    /// The open shard at `address`, opened (created) on first use by its owner; another
    /// core only reads a shard its owner opened (see [`registry`]).
    fn shard(&self, address: &ShardAddress) -> Result<Arc<Shard>, ResponseError> {
        if let Some(shard) = self.registry.get(address) {
            return Ok(shard);
        }
        if !self.owns(address) {
            return Err(ResponseError::internal(
                "the shard was closed while another core read it",
            ));
        }
        let path = address.path(&self.data_directory);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| crate::errors::io_error(&error))?;
        }
        let options = Options {
            write_memory_bytes_max: Some(self.memory.write_pages_bytes),
            ..Options::default()
        };
        let shard = Shard::open_within(&path, options, self.registry.cache_meter().clone())
            .map_err(shard_error)?;
        shard.bound_pending_changes(self.pending_changes_bytes());
        shard
            .prefetch_vectors(self.memory.prefetch_vectors)
            .map_err(shard_error)?;
        let shard = Arc::new(shard);
        self.registry.insert(address.clone(), shard.clone());
        self.registry
            .close_over_budget(|open| self.may_close(open) && open != address);
        Ok(shard)
    }

    /// The shard at `address` as a statistic needs it: the figures kept when it was closed,
    /// or the open shard read without counting as a use (a scrape of `/metrics` or a read
    /// of `/stats` neither opens closed shards again nor keeps open ones from being idle);
    /// a shard never opened in this process is opened.
    fn shard_for_statistics(
        &self,
        address: &ShardAddress,
    ) -> Result<ShardForStatistics, ResponseError> {
        if let Some(closed) = self.registry.closed_figures(address) {
            return Ok(ShardForStatistics::Closed(closed));
        }
        let shard = match self.registry.peek(address) {
            Some(shard) => shard,
            None => self.shard(address)?,
        };
        Ok(ShardForStatistics::Open(shard))
    }

    /// Whether this core may close the open shard at `address` to keep the budget: it owns
    /// it and holds no prepared batch on it (the registry also checks that nobody reads it).
    fn may_close(&self, address: &ShardAddress) -> bool {
        self.owns(address) && !self.prepared.borrow().contains_key(address)
    }

    /// Closes this core's shards that nobody used for the budget's idle time (see
    /// [`registry`]); answers how many.
    pub fn close_idle_shards(&self) -> usize {
        self.registry.close_idle(|address| self.may_close(address))
    }

    /// Closes this core's least recently used shards holding caches while the caches are over
    /// their budget (see [`registry`]); answers how many.
    pub fn close_shards_over_cache_budget(&self) -> usize {
        self.registry
            .close_over_cache_budget(|address| self.may_close(address))
    }

    /// The registry of open shards every core shares.
    pub fn registry(&self) -> &ShardRegistry {
        &self.registry
    }

    /// Asserts that this core owns the shard at `address`, which it `does` something to that
    /// only the owner may (open, write, close or remove it: ARCHITECTURE.md §3).
    fn assert_owner(&self, address: &ShardAddress, does: &str) {
        assert!(
            self.owns(address),
            "core {} {does} shard {} of `{}`, owned by core {}",
            self.core,
            address.shard,
            address.storage,
            owner_core(address.shard, self.cores)
        );
    }

    /// Takes the batch prepared on `address`; `what` names the command that needs it.
    fn take_prepared(
        &self,
        address: &ShardAddress,
        what: &str,
    ) -> Result<Preparing, ResponseError> {
        self.prepared.borrow_mut().remove(address).ok_or_else(|| {
            ResponseError::internal(format!("{what} arrived for a shard with no prepared batch"))
        })
    }

    /// Holds `preparing` as the batch prepared on `address` (at most one per shard).
    fn hold_prepared(&self, address: ShardAddress, preparing: Preparing) {
        self.assert_owner(&address, "prepares a batch on");
        let previous = self.prepared.borrow_mut().insert(address, preparing);
        debug_assert!(previous.is_none(), "two batches prepared on one shard");
    }
}

/// The core that owns shard `shard` of any index, on a server of `cores` cores.
pub fn owner_core(shard: u32, cores: usize) -> usize {
    debug_assert!(cores > 0, "a server has at least one core");
    shard as usize % cores.max(1)
}

/// The internal ids `filter` selects in `snapshot`; an evaluation error (such as a bad geo
/// radius) carries `code`, except a refused `_shard` condition, which is always
/// `invalid_search_filter` (Meilisearch gives its own code to syntax errors only).
pub fn filter_ids(
    snapshot: &ShardSnapshot,
    filter: &Filter,
    code: Code,
) -> Result<roaring::RoaringBitmap, ResponseError> {
    let rules = FilterableRules::from_setting(snapshot.settings().filterable_setting())
        .map_err(ResponseError::internal)?;
    let source = snapshot.facet_source();
    let selected = evaluate(filter, &rules, &source).map_err(|error| {
        let code = match error.kind {
            FilterErrorKind::Shard => Code::InvalidSearchFilter,
            _ => code,
        };
        ResponseError::new(code, error.message)
    })?;
    if let Some(error) = source.take_error() {
        return Err(shard_error(error));
    }
    Ok(selected)
}

/// A shard as [`ShardHost::shard_for_statistics`] gives it.
enum ShardForStatistics {
    /// Closed: what was kept when it closed.
    Closed(registry::ClosedShardFigures),
    Open(Arc<Shard>),
}
