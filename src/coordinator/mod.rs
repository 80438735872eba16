//! The coordinator of one core: transport and fan-out only. It holds the core's replica of
//! the index catalog and the shards the core owns ([`crate::host::ShardHost`]), and carries
//! typed requests to other cores: one shard ([`Coordinator::ask_shard`]), every shard of an
//! index ([`Coordinator::ask_every_shard`]), or any core ([`Coordinator::ask`], a typed
//! [`CoreRequest`] of `crate::runtime::invoke`). It knows no use case: search, tasks and routes define their requests, and
//! the shard side of each lives in `crate::host`.
//!
//! Invariants:
//! - only the control core changes the catalog; it replicates every new version to every
//!   core and waits until each applied it, before the batch that changed it is finished;
//! - shard `s` of an index is served by core `s mod cores`: a request for it is a local call
//!   on that core and a mesh request from any other — except a read of a snapshot
//!   ([`ShardRequest::READS_SNAPSHOT`]) of an index of one shard, which runs on the core it
//!   arrives at once the owner opened the shard (see [`Coordinator::ask_shard`]);
//! - a request for this core never crosses the mesh; run inline for an indexing task, it
//!   ends at a yield point, so a loop of such requests gives the core back between two of
//!   them once the task's slice is spent;
//! - [`Coordinator::writes_in_flight`] counts the write requests this core's shards have
//!   received and not answered yet, whichever core sent them;
//! - [`Coordinator::network`] reads the core's replica of the network each time (the control
//!   plane replaces it on a change), so a request sees the network of the moment it asks;
//! - every shard command runs in a span of its own on the core that runs it (a child of the
//!   requester's span, whose context the mesh invocation carries), when tracing is on.

pub mod catalog;

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use shards::network_shards::NetworkShards;

use crate::errors::{Code, ResponseError};
use crate::host::protocol::ShardRequest;
use crate::host::{ShardAddress, ShardHost, owner_core};
use crate::network::Network;
pub use crate::runtime::CoreRequest;
use crate::runtime::latency::LatencyClass;
use crate::runtime::{CoreMesh, Invocation as RuntimeInvocation, MeshHandler, invoke_on};
use catalog::{Catalog, IndexRecord, ShardSet};

/// A request to a core's coordinator, erased for the mesh.
pub type Invocation = RuntimeInvocation<Coordinator>;

/// The core that owns the task queue and the catalog.
pub const CONTROL_CORE: usize = crate::control::CONTROL_CORE;

/// The mesh carrying coordinator requests: each an [`Invocation`] acknowledged with `()`
/// once it ran (its answer travels on its own typed channel); no broadcasts.
pub type DataMesh = CoreMesh<Invocation, (), ()>;

/// Reads this core's replica of the network (the control plane owns it).
pub type NetworkSource = Box<dyn Fn() -> Arc<Network>>;

/// Where a core reads the dynamic search rules as they are now (its control plane's replica).
pub type RulesSource =
    Box<dyn Fn() -> Arc<crate::control::dynamic_search_rules::DynamicSearchRules>>;

/// One core's coordinator.
pub struct Coordinator {
    mesh: Rc<DataMesh>,
    data_directory: PathBuf,
    catalog: RefCell<Arc<Catalog>>,
    shards: ShardHost,
    /// Write requests for this core's shards being run (the core's write queue depth).
    writes_in_flight: Cell<u64>,
    network: NetworkSource,
    rules: RulesSource,
}

impl Coordinator {
    pub fn new(
        mesh: Rc<DataMesh>,
        shards: ShardHost,
        data_directory: PathBuf,
        catalog: Arc<Catalog>,
        network: NetworkSource,
        rules: RulesSource,
    ) -> Coordinator {
        Coordinator {
            mesh,
            shards,
            data_directory,
            catalog: RefCell::new(catalog),
            writes_in_flight: Cell::new(0),
            network,
            rules,
        }
    }

    /// This core's replica of the dynamic search rules, as it is now.
    pub fn dynamic_search_rules(
        &self,
    ) -> Arc<crate::control::dynamic_search_rules::DynamicSearchRules> {
        (self.rules)()
    }

    /// This core's replica of the network, as it is now.
    pub fn network(&self) -> Arc<Network> {
        (self.network)()
    }

    /// The network shards a filter entering now evaluates `_shard` against (none without a
    /// leader).
    pub fn filter_shards(&self) -> Option<NetworkShards> {
        crate::network::sharding::filter_shards(&self.network())
    }

    /// Write requests for this core's shards received and not answered yet.
    pub fn writes_in_flight(&self) -> u64 {
        self.writes_in_flight.get()
    }

    /// Closes this core's shards that nobody used for the store budget's idle time.
    pub fn close_idle_shards(&self) -> usize {
        self.shards.close_idle_shards()
    }

    /// Closes this core's least recently used shards holding caches while the caches are over
    /// their budget; answers how many.
    pub fn close_shards_over_cache_budget(&self) -> usize {
        self.shards.close_shards_over_cache_budget()
    }

    /// The budget of open shards the server keeps.
    pub fn store_budget(&self) -> crate::host::StoreBudget {
        self.shards.registry().budget()
    }

    /// The open shards of the server and how many were opened and closed, for `/metrics`.
    pub fn store_figures(&self) -> crate::host::registry::RegistryFigures {
        self.shards.registry().figures()
    }

    /// Whether this core owns shard `shard` of any index.
    pub fn owns_shard(&self, shard: u32) -> bool {
        self.owner_of(shard) == self.core()
    }

    /// Runs `request` on shard `address` on this core (its owner, or a reader of its
    /// snapshot), counted while it runs when it writes.
    async fn run_on_own_shard<Request: ShardRequest>(
        &self,
        address: ShardAddress,
        request: Request,
    ) -> Result<Request::Answer, ResponseError> {
        // Only the owner writes a shard (ARCHITECTURE.md §3); another core may only read
        // the snapshot of a shard its owner opened.
        assert!(
            self.owns_shard(address.shard) || (Request::READS_SNAPSHOT && !Request::IS_WRITE),
            "core {} runs a request for shard {} of `{}`, owned by core {}",
            self.core(),
            address.shard,
            address.storage,
            self.owner_of(address.shard)
        );
        let _counted = Request::IS_WRITE.then(|| InFlight::count(&self.writes_in_flight));
        if !crate::traces::enabled() {
            return request.run(&self.shards, address).await;
        }
        let mut span = crate::traces::Span::child(
            short_type_name(std::any::type_name::<Request>()),
            crate::traces::SpanKind::Internal,
        );
        if span.is_recording() {
            span.set_attribute("coresearch.core", self.core() as i64);
            span.set_attribute("coresearch.shard", i64::from(address.shard));
            span.set_attribute("coresearch.storage", address.storage.to_string());
        }
        span.run(Box::pin(request.run(&self.shards, address))).await
    }

    pub fn core(&self) -> usize {
        self.mesh.core()
    }

    pub fn cores(&self) -> usize {
        self.mesh.cores()
    }

    pub fn data_directory(&self) -> &std::path::Path {
        &self.data_directory
    }

    /// This core's replica of the catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.borrow().clone()
    }

    /// The index `uid`, or `index_not_found`.
    pub fn index(&self, uid: &str) -> Result<Arc<IndexRecord>, ResponseError> {
        self.catalog
            .borrow()
            .get(uid)
            .cloned()
            .ok_or_else(|| ResponseError::index_not_found(uid))
    }

    /// Runs `request` on core `core` (in place when it is this one) and answers its answer.
    pub async fn ask<Request: CoreRequest<Coordinator>>(
        &self,
        core: usize,
        request: Request,
    ) -> Result<Request::Answer, ResponseError> {
        invoke_on(&self.mesh, self, core, request)
            .await
            .map_err(|error| {
                ResponseError::new(
                    Code::Internal,
                    format!("core {core} did not answer: {error:?}"),
                )
            })
    }

    /// Runs `request` on shard `shard` of `set`, on its owner core. Run inline on this core
    /// for an indexing task, it ends by giving the core back if the task's slice is spent
    /// (see [`crate::runtime::latency::yield_if_indexing_needs`]).
    pub async fn ask_shard<Request: ShardRequest>(
        &self,
        set: &ShardSet,
        shard: u32,
        request: Request,
    ) -> Result<Request::Answer, ResponseError> {
        // A shard past the index's count would be created empty by its owner.
        assert!(
            shard < set.shards,
            "shard {shard} of an index of {} shards",
            set.shards
        );
        let address = ShardAddress {
            storage: set.storage.clone(),
            shard,
        };
        if self.runs_here::<Request>(set, &address) {
            let answer = self.run_on_own_shard(address, request).await;
            // Run inline, the request awaited nothing that yields: a batch asking this core's
            // shards in a loop would keep the core for the whole loop (seen as a 69-98 ms
            // stop of searches, `tuning/results/batch-start-stall-2026-11-27.md`).
            crate::runtime::latency::yield_if_indexing_needs().await;
            return answer;
        }
        self.ask(self.owner_of(shard), OnShard { address, request })
            .await?
    }

    /// Whether this core runs a request for the shard at `address` of `set` itself: it owns
    /// the shard, or the request only reads a snapshot of an index of one shard that its
    /// owner opened. With one shard a hop to the owner buys no parallelism: it costs a
    /// message each way and puts every search of the index on one core, where reading here
    /// spreads them over the cores the connections are balanced on. An index of several
    /// shards keeps each search's shards on their owners, searched in parallel.
    fn runs_here<Request: ShardRequest>(&self, set: &ShardSet, address: &ShardAddress) -> bool {
        self.owner_of(address.shard) == self.core()
            || (Request::READS_SNAPSHOT && set.shards == 1 && self.shards.can_read(address))
    }

    /// The core that owns shard `shard` of any index.
    fn owner_of(&self, shard: u32) -> usize {
        owner_core(shard, self.cores())
    }

    /// Runs one request per shard of `set`, all at once; answers in shard order.
    ///
    /// The requests for other cores' shards are started first: a task runs until it awaits,
    /// and this core's own shards do their work without awaiting, so a local shard started
    /// first would hold the core for its whole search before the other cores were even asked.
    /// Seen as a search taking twice as long on the connections core 0 accepted (2.9 against
    /// 5.3 ms for one phrase query, by connection).
    pub async fn ask_every_shard<Request: ShardRequest>(
        self: &Rc<Self>,
        set: &ShardSet,
        mut request: impl FnMut(u32) -> Request,
    ) -> Vec<Result<Request::Answer, ResponseError>> {
        if set.shards == 1 {
            return vec![self.ask_shard(set, 0, request(0)).await];
        }
        let order = dispatch_order(set.shards, self.cores(), self.core());
        let mut running = Vec::with_capacity(order.len());
        for shard in order {
            let coordinator = self.clone();
            let set = set.clone();
            let request = request(shard);
            let task =
                crate::runtime::spawn(
                    async move { coordinator.ask_shard(&set, shard, request).await },
                );
            running.push((shard, task));
        }
        let mut answers = Vec::with_capacity(running.len());
        for (shard, task) in running {
            answers.push((shard, task.await));
        }
        answers.sort_by_key(|(shard, _)| *shard);
        debug_assert!(
            answers
                .iter()
                .enumerate()
                .all(|(position, (shard, _))| *shard as usize == position),
            "one answer per shard, in shard order"
        );
        answers.into_iter().map(|(_, answer)| answer).collect()
    }

    /// Runs one request per shard of `set` and waits for all: the first failure, if any.
    pub async fn on_every_shard<Request: ShardRequest>(
        self: &Rc<Self>,
        set: &ShardSet,
        request: impl FnMut(u32) -> Request,
    ) -> Result<(), ResponseError> {
        let answers = self.ask_every_shard(set, request).await;
        answers
            .into_iter()
            .try_for_each(|answer| answer.map(|_| ()))
    }

    /// Replaces the catalog on every core (this one included), waiting for each.
    pub async fn publish_catalog(&self, catalog: Arc<Catalog>) -> Result<(), ResponseError> {
        assert_eq!(
            self.core(),
            CONTROL_CORE,
            "only the control core changes the catalog"
        );
        *self.catalog.borrow_mut() = catalog.clone();
        for core in (0..self.cores()).filter(|core| *core != self.core()) {
            self.ask(core, ReplicateCatalog(catalog.clone())).await?;
        }
        Ok(())
    }
}

/// A shard request carried to the shard's owner core.
struct OnShard<Request> {
    address: ShardAddress,
    request: Request,
}

impl<Request: ShardRequest> CoreRequest<Coordinator> for OnShard<Request> {
    type Answer = Result<Request::Answer, ResponseError>;
    const CLASS: LatencyClass = if Request::IS_WRITE {
        LatencyClass::Indexing
    } else {
        LatencyClass::Serving
    };

    async fn run(self, coordinator: &Coordinator) -> Self::Answer {
        coordinator
            .run_on_own_shard(self.address, self.request)
            .await
    }
}

/// One request counted in a core's in-flight figure until it is dropped.
struct InFlight<'a>(&'a Cell<u64>);

impl<'a> InFlight<'a> {
    fn count(counter: &'a Cell<u64>) -> InFlight<'a> {
        counter.set(counter.get() + 1);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// A new version of the catalog for a core's replica.
struct ReplicateCatalog(Arc<Catalog>);

impl CoreRequest<Coordinator> for ReplicateCatalog {
    type Answer = ();

    async fn run(self, coordinator: &Coordinator) {
        *coordinator.catalog.borrow_mut() = self.0;
    }
}

impl MeshHandler<Invocation, (), ()> for Coordinator {
    async fn on_request(&self, _from: usize, invocation: Invocation) {
        invocation.run(self).await;
    }

    fn on_broadcast(&self, _from: usize, _message: ()) {}

    fn class(&self, invocation: &Invocation) -> LatencyClass {
        invocation.class()
    }
}

/// A type's name without its path or generic arguments (`ShardSearchRequest`), as a shard
/// command's span is named.
fn short_type_name(full: &'static str) -> &'static str {
    let plain = full.split('<').next().unwrap_or(full);
    plain.rsplit("::").next().unwrap_or(plain)
}

/// The order in which core `core` starts the commands of shards `0..shards`: every other
/// core's shard first (in shard order), then its own (see [`Coordinator::ask_every_shard`]).
fn dispatch_order(shards: u32, cores: usize, core: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..shards).collect();
    order.sort_by_key(|shard| owner_core(*shard, cores) == core);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_cores_shards_are_started_before_this_cores_own() {
        assert_eq!(dispatch_order(2, 2, 0), vec![1, 0]);
        assert_eq!(dispatch_order(2, 2, 1), vec![0, 1]);
        assert_eq!(dispatch_order(5, 2, 0), vec![1, 3, 0, 2, 4]);
        assert_eq!(dispatch_order(4, 4, 2), vec![0, 1, 3, 2]);
        assert_eq!(dispatch_order(3, 1, 0), vec![0, 1, 2]);
        assert_eq!(owner_core(5, 2), 1);
    }

    #[test]
    fn a_shard_command_span_is_named_by_its_type() {
        assert_eq!(
            short_type_name("coresearch::host::search::ShardSearchRequest"),
            "ShardSearchRequest"
        );
        assert_eq!(
            short_type_name("coresearch::coordinator::OnShard<coresearch::host::Stats>"),
            "OnShard"
        );
        assert_eq!(short_type_name("Plain"), "Plain");
    }
}
