//! Assembling the server: the data directory, the cores, and on each core its control-plane
//! replica, its router and its listeners; and what SIGHUP reloads while they run
//! ([`reload`]).

mod reload;

use std::cell::RefCell;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use crate::auth::rate_limit::RateLimiter;
use crate::auth::{JsonFileKeyPersistence, KeySet, KeyStore};
use crate::config::Config;
use crate::coordinator::catalog::Catalog;
use crate::coordinator::{Coordinator, Invocation};
use crate::host::{ShardHost, ShardMemory, ShardRegistry, StoreBudget};
use crate::tasks::Task;
use crate::tasks::autobatch::AutobatchLimits;
use crate::tasks::control_side::ControlSide;
use crate::tasks::queue::TaskQueue;
use crate::tasks::scheduler::{Scheduler, SchedulerOptions};
use crate::tasks::update_files::UpdateFiles;

/// The task queue's page-store file in the data directory.
pub const TASK_QUEUE_FILE_NAME: &str = crate::tasks::queue::QUEUE_FILE_NAME;
/// Finished tasks kept before the oldest are deleted automatically (Meilisearch's 1M).
pub const MAX_NUMBER_OF_TASKS: u64 = 1_000_000;
use crate::control::features::ForcedFeatures;
use crate::control::webhooks::{Webhooks, command_line_webhook, load_registered};
use crate::control::{
    CONTROL_CORE, ControlBroadcast, ControlInvocation, ControlPlane, ControlState,
};
use std::sync::Arc;

use crate::config::Environment;
use crate::http::HttpLimits;
use crate::http::tls::TlsOptions;
use crate::http::tls_reload::{CoreTlsAcceptor, SharedTlsConfig};
use crate::request_log::RequestLog;
use crate::routes::{Router, Services};
use crate::runtime::lifecycle::Lifecycle;
use crate::runtime::listener::ServingEnd;
use crate::runtime::mesh::{self, MeshSetup};
use crate::runtime::service_manager;
use crate::runtime::shutdown::ShutdownFlag;
use crate::runtime::startup_gate::StartupGate;
use crate::runtime::{CoreContext, CoreMesh, RuntimeOptions, RuntimeTimer};
use crate::search::queue::{SearchQueue, SearchQueueLimits};

/// What every core is started with; cloned into each executor.
#[derive(Clone)]
struct CoreSettings {
    data_directory: PathBuf,
    /// What one shard's batch may hold in memory: its changed pages and its pending changes.
    shard_memory: ShardMemory,
    /// The open shards, shared by every core's host (see `crate::host::registry`).
    shard_registry: Arc<ShardRegistry>,
    master_key: Option<String>,
    /// The key set as it was at start, which every core begins with.
    keys: Arc<KeySet>,
    production: bool,
    /// `--experimental-replication-parameters`: the `TaskId` and `DryRun` headers.
    replication_parameters: bool,
    forced_features: ForcedFeatures,
    /// The webhooks as they were at start (the command line's and the persisted ones).
    webhooks: Arc<Webhooks>,
    /// The network as persisted, which every core starts with (read once).
    network: Arc<crate::network::Network>,
    /// Which remotes answer lately, one map for the process.
    remote_availability: Arc<crate::network::availability::RemoteAvailability>,
    limits: HttpLimits,
    /// The TLS configuration every core handshakes with, which SIGHUP may replace.
    tls: Option<Arc<SharedTlsConfig>>,
    mesh: MeshSetup<ControlInvocation, (), ControlBroadcast>,
    data_mesh: MeshSetup<Invocation, (), ()>,
    /// The task queue, opened before the cores start; used by the control core only.
    queue: Arc<TaskQueue>,
    /// The catalog as stored, which every core starts with.
    catalog: Arc<Catalog>,
    /// The tasks of the batch a crash interrupted, run again first.
    interrupted: Vec<Task>,
    scheduler: SchedulerOptions,
    /// `--write-visibility-target-seconds` (`None`: no target).
    write_visibility_target: Option<Duration>,
    search_queue: SearchQueueLimits,
    /// `--experimental-logs-mode`, for each core's request log.
    log_mode: crate::config::LogMode,
    /// Whether the control core stops every core once no task is enqueued or processing.
    stop_when_idle: bool,
    /// The time between two scheduled snapshot tasks (`--schedule-snapshot`), if any.
    snapshot_schedule: Option<Duration>,
    /// The run-time switches of the process's logs (the `/logs/*` routes).
    logs: crate::logs::LogControl,
    /// The rerank service of personalized searches.
    personalization: crate::personalization::Personalization,
    /// Starting, ready or draining, as `GET /health` and the service manager see it.
    lifecycle: Lifecycle,
    /// How often each core beats for the service manager's watchdog (`None`: no watchdog).
    heartbeat: Option<Duration>,
    /// `--shutdown-drain-delay-seconds`: how long cores keep serving once shutdown began.
    drain_delay: Duration,
    /// The rate limits of API keys and tenant tokens (`--rate-limit-*`).
    rate_limits: crate::auth::rate_limit::RateLimits,
    /// The cores the rate limits are shared out between.
    cores: usize,
}

/// What outgoing requests may reach (`--experimental-allowed-ip-networks`).
fn outgoing_policy(config: &Config) -> crate::outgoing::IpPolicy {
    crate::outgoing::shared::policy_of(&config.experimental_allowed_ip_networks)
}

/// What a shard's batch may hold in memory, and whether its graphs load at open.
fn shard_memory(config: &Config) -> ShardMemory {
    ShardMemory {
        prefetch_vectors: config.vectorstore_reader_prefetch_memory,
        ..ShardMemory::for_indexing_memory(config.max_indexing_memory, config.cores)
    }
}

/// Runs the server until SIGINT or SIGTERM; returns once every core has stopped. `logs`
/// controls the process's log subscriber (see [`crate::logs::init`]).
pub fn run(
    config: &Config,
    data_directory: PathBuf,
    logs: crate::logs::LogControl,
) -> Result<(), String> {
    let outcome = run_cores(config, data_directory, Mode::Serve, logs);
    // The spans of the last requests are still waiting for their batch.
    crate::traces::flush();
    outcome
}

/// Runs the cores on `data_directory` without listening and without webhooks, until no task
/// is enqueued or processing (or SIGINT or SIGTERM): how a dump import indexes what it
/// registered through the normal write path before the server starts.
pub fn run_until_idle(
    config: &Config,
    data_directory: PathBuf,
    logs: crate::logs::LogControl,
) -> Result<(), String> {
    run_cores(config, data_directory, Mode::UntilIdle, logs)
}

/// How long the cores of [`run_until_idle`] wait between two looks at the queue.
pub const IDLE_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Whether the cores serve requests, or only process the queue until it is idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Serve,
    UntilIdle,
}

/// What every core reads from the configuration once, before the cores start: the
/// outgoing IP policy, the query-embedding cache's size, the dynamic search rules' fuel and
/// the trace exporter (whose failure to start leaves tracing off, logged, never fatal).
fn set_process_wide_options(config: &Config) {
    crate::outgoing::shared::set_policy(outgoing_policy(config));
    crate::embedders::query_cache::set_entries_per_embedder(
        config.experimental_embedding_cache_entries,
    );
    crate::search::rule_fuel::install(config.experimental_dsr_fuel);
    if let Some(settings) = &config.otlp_traces
        && let Err(error) = crate::traces::install(settings.clone())
    {
        tracing::error!(%error, "traces are not exported");
    }
}

/// The experimental features the command line turns on for good.
fn forced_features(config: &Config) -> ForcedFeatures {
    ForcedFeatures {
        metrics: config.experimental_enable_metrics,
        logs_route: config.experimental_enable_logs_route,
        contains_filter: config.experimental_contains_filter,
    }
}

fn run_cores(
    config: &Config,
    data_directory: PathBuf,
    mode: Mode,
    logs: crate::logs::LogControl,
) -> Result<(), String> {
    set_process_wide_options(config);
    let addresses = match mode {
        Mode::Serve => resolve(&config.http_addr)?,
        Mode::UntilIdle => Vec::new(),
    };
    let shutdown = ShutdownFlag::from_signals()
        .map_err(|error| format!("could not install the signal handlers: {error}"))?;
    let tls = match mode {
        Mode::Serve => serving_tls_and_reloads(config, &logs)?,
        Mode::UntilIdle => None,
    };
    let keys = open_key_store(&data_directory, config.master_key.clone())?.snapshot();
    let (queue, interrupted) = open_task_queue(&data_directory)?;
    let catalog = open_catalog(&queue, &data_directory)?;
    let webhooks = match mode {
        Mode::Serve => startup_webhooks(config, &data_directory)?,
        Mode::UntilIdle => Arc::new(Webhooks::new(None, Default::default())),
    };
    let network = Arc::new(crate::network::model::load_network(&data_directory)?);
    let lifecycle = Lifecycle::new(config.cores, mode == Mode::Serve);
    let heartbeat = match mode {
        Mode::Serve => start_watchdog(&lifecycle)?,
        Mode::UntilIdle => None,
    };
    let settings = CoreSettings {
        data_directory: data_directory.clone(),
        webhooks,
        network,
        remote_availability: Arc::default(),
        shard_memory: shard_memory(config),
        shard_registry: Arc::new(ShardRegistry::with_budget(store_budget(config))),
        master_key: config.master_key.clone(),
        keys,
        production: config.env == Environment::Production,
        replication_parameters: config.experimental_replication_parameters,
        forced_features: forced_features(config),
        limits: HttpLimits {
            payload_bytes_max: config.http_payload_size_limit,
            ..HttpLimits::default()
        },
        tls,
        mesh: mesh::setup(config.cores),
        data_mesh: mesh::setup(config.cores),
        queue: Arc::new(queue),
        catalog: Arc::new(catalog),
        interrupted,
        scheduler: scheduler_options(config, &data_directory)?,
        write_visibility_target: config.indexing_scheduling.write_visibility_target,
        search_queue: search_queue_limits(config),
        log_mode: config.experimental_logs_mode,
        stop_when_idle: mode == Mode::UntilIdle,
        snapshot_schedule: snapshot_schedule(config, mode),
        logs,
        personalization: personalization(config, mode),
        lifecycle,
        heartbeat,
        drain_delay: config.shutdown_drain_delay,
        rate_limits: config.rate_limits,
        cores: config.cores,
    };
    let options = runtime_options(config, addresses);
    if mode == Mode::Serve {
        log_start(&options);
    }
    crate::runtime::run(&options, shutdown, move |context| {
        core_main(context, settings.clone())
    })
    .map_err(|error| error.to_string())
}

/// The runtime's options from the configuration: cores, listening addresses, idle polling
/// and indexing's share of a busy CPU.
fn runtime_options(config: &Config, addresses: Vec<SocketAddr>) -> RuntimeOptions {
    RuntimeOptions {
        cores: config.cores,
        addresses,
        idle_poll: config.idle_poll,
        indexing_share: crate::runtime::indexing_share::IndexingShare::percent(
            config.indexing_scheduling.cpu_share,
        )
        .with_scheduler_slice(config.indexing_scheduling.scheduler_slice)
        .with_scheduling_policy(config.indexing_scheduling.scheduler_policy.policy()),
    }
}

/// Starts the watchdog thread when the service manager asks for one (`WATCHDOG_USEC`), and
/// answers how often each core must then beat.
fn start_watchdog(lifecycle: &Lifecycle) -> Result<Option<Duration>, String> {
    let Some(interval) = service_manager::watchdog_interval() else {
        return Ok(None);
    };
    service_manager::start_watchdog(lifecycle.clone(), interval)
        .map_err(|error| format!("could not start the watchdog thread: {error}"))?;
    tracing::info!(?interval, "the service manager's watchdog is on");
    Ok(Some(service_manager::heartbeat_period(interval)))
}

/// The rerank service of `--experimental-personalization-api-key` and
/// `--experimental-personalization-url`, announced once when it is on.
fn personalization(config: &Config, mode: Mode) -> crate::personalization::Personalization {
    let personalization = crate::personalization::Personalization::from_options(
        config.experimental_personalization_api_key.as_deref(),
        &config.experimental_personalization_url,
    );
    if mode == Mode::Serve
        && let crate::personalization::Personalization::Enabled { url, .. } = &personalization
    {
        tracing::info!(url = %url, "personalized search reranks hits through this service");
    }
    personalization
}

/// The time between two scheduled snapshot tasks: none in the run that indexes a dump.
fn snapshot_schedule(config: &Config, mode: Mode) -> Option<Duration> {
    match mode {
        Mode::Serve => config
            .schedule_snapshot
            .map(crate::tasks::snapshot::schedule::schedule_interval),
        Mode::UntilIdle => None,
    }
}

/// The search queue's limits from the configuration.
fn search_queue_limits(config: &Config) -> SearchQueueLimits {
    SearchQueueLimits {
        queue_size: config.experimental_search_queue_size,
        cores: config.cores,
        searches_per_core: config.experimental_nb_searches_per_core.get(),
        drop_after: Duration::from_secs(
            u64::try_from(config.experimental_drop_search_after.get()).unwrap_or(u64::MAX),
        ),
    }
}

/// The margin an export's default payload keeps below the payload limit.
const EXPORT_PAYLOAD_MARGIN_BYTES: u64 = 1 << 20;
/// The smallest default payload of an export.
const EXPORT_PAYLOAD_BYTES_MIN: u64 = 20 << 20;

/// The largest default payload of an export (and of a network change's transfers): a target
/// indexes one payload while the next arrives, so payloads much smaller than the payload
/// limit keep both ends busy. Measured coresearch → coresearch, 886k PyPI documents on
/// this 2-CPU machine: the target held every document 22–25 s after the request with
/// Meilisearch's default (two payloads), 18.2 s with 8 MiB payloads (twice each).
const EXPORT_PAYLOAD_BYTES_PIPELINED: u64 = 8 << 20;

/// The payload size of an export that gives none: Meilisearch's (the payload limit less
/// 1 MiB, at least 20 MiB), capped at [`EXPORT_PAYLOAD_BYTES_PIPELINED`]. Only the speed
/// differs: the task's details show the size only when the request gave one.
fn export_payload_bytes_default(http_payload_size_limit: u64) -> u64 {
    http_payload_size_limit
        .saturating_sub(EXPORT_PAYLOAD_MARGIN_BYTES)
        .max(EXPORT_PAYLOAD_BYTES_MIN)
        .min(EXPORT_PAYLOAD_BYTES_PIPELINED)
}

/// The scheduler's settings from the configuration.
fn scheduler_options(config: &Config, data_directory: &Path) -> Result<SchedulerOptions, String> {
    Ok(SchedulerOptions {
        limits: AutobatchLimits {
            autobatching_enabled: true,
            max_tasks_per_batch: config.experimental_max_number_of_batched_tasks,
            max_payload_bytes: config
                .experimental_limit_batched_tasks_total_size
                .unwrap_or(u64::MAX),
        },
        // Replication parameters leave old tasks to whoever replicates them (Meilisearch).
        max_number_of_tasks: if config.experimental_replication_parameters {
            u64::MAX
        } else {
            MAX_NUMBER_OF_TASKS
        },
        export_payload_bytes_default: export_payload_bytes_default(config.http_payload_size_limit),
        dump_directory: config.dump_dir.clone(),
        snapshot_directory: config.snapshot_dir.clone(),
        snapshot_compaction: !config.experimental_no_snapshot_compaction,
        data_directory: data_directory.to_path_buf(),
        shard_growth: crate::tasks::shard_growth::ShardGrowth {
            shards_max: u32::try_from(config.shards_per_index.max(1))
                .map_err(|_| "--shards-per-index is too large".to_owned())?,
            documents_per_shard: config.documents_per_shard,
        },
    })
}

/// The webhooks every core starts with: the command line's and the persisted ones.
fn startup_webhooks(config: &Config, data_directory: &Path) -> Result<Arc<Webhooks>, String> {
    Ok(Arc::new(Webhooks::new(
        command_line_webhook(
            config.task_webhook_url.as_ref(),
            config.task_webhook_authorization_header.as_deref(),
        ),
        load_registered(data_directory)?,
    )))
}

/// One core's life: joins the meshes, starts the scheduler on the control core and the
/// request log, serves until shutdown, then flushes the log and closes the meshes.
/// `--schedule-snapshot`: the control core registers a snapshot every `interval`.
fn schedule_snapshots(
    core: usize,
    interval: Option<std::time::Duration>,
    coordinator: &Rc<Coordinator>,
) {
    if let (Some(interval), true) = (interval, core == CONTROL_CORE) {
        crate::runtime::spawn_detached(crate::tasks::snapshot::schedule::register_every(
            coordinator.clone(),
            interval,
        ));
    }
}

/// Says where the server listens, on how many cores, and the share of a busy CPU indexing
/// keeps (its threads are paced to it while their CPU's executor serves).
fn log_start(options: &RuntimeOptions) {
    tracing::info!(
        addresses = ?options.addresses,
        cores = options.cores,
        indexing_cpu_share = options.indexing_share.as_percent(),
        "coresearch {} (Meilisearch API {}) starting",
        env!("CARGO_PKG_VERSION"),
        crate::routes::root::API_VERSION
    );
}

/// How many shards may stay open and for how long one may stay idle: the configuration's,
/// or what this machine's limits allow.
fn store_budget(config: &Config) -> StoreBudget {
    StoreBudget {
        open_stores_max: config
            .max_open_stores
            .unwrap_or_else(crate::host::registry::open_stores_max_for_this_machine),
        idle: config.store_idle,
        cache_bytes_max: usize::try_from(config.max_cache_memory).unwrap_or(usize::MAX),
    }
}

/// The longest pause between two looks for idle shards (a quarter of the idle time when
/// that is shorter).
const IDLE_SHARDS_CHECK_INTERVAL_MAX: std::time::Duration = std::time::Duration::from_secs(60);

/// Every core closes its own shards that stayed idle for the store budget's idle time.
fn close_idle_shards_periodically(coordinator: &Rc<Coordinator>) {
    let idle = coordinator.store_budget().idle;
    let interval = (idle / 4).min(IDLE_SHARDS_CHECK_INTERVAL_MAX);
    let coordinator = Rc::downgrade(coordinator);
    crate::runtime::spawn_detached(async move {
        loop {
            crate::runtime::sleep(interval).await;
            let Some(coordinator) = coordinator.upgrade() else {
                break;
            };
            let closed = coordinator.close_idle_shards();
            if closed > 0 {
                tracing::debug!(closed, "idle shards closed");
            }
        }
    });
}

/// How often every core looks whether the caches passed their budget's reclaim point.
const CACHE_BUDGET_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Every core closes its own least recently used shards holding caches while the caches are
/// over their budget (a look at one counter when they are not).
fn keep_cache_budget_periodically(coordinator: &Rc<Coordinator>) {
    let coordinator = Rc::downgrade(coordinator);
    crate::runtime::spawn_detached(async move {
        loop {
            crate::runtime::sleep(CACHE_BUDGET_CHECK_INTERVAL).await;
            let Some(coordinator) = coordinator.upgrade() else {
                break;
            };
            let closed = coordinator.close_shards_over_cache_budget();
            if closed > 0 {
                tracing::debug!(closed, "shards closed to keep the cache budget");
            }
        }
    });
}

/// Joins the control mesh as `core`, with this core's control plane.
async fn join_control_mesh(
    core: usize,
    settings: &CoreSettings,
) -> Result<(Rc<crate::control::ControlMesh>, Rc<ControlPlane>), String> {
    let state = control_state(core, settings)?;
    let (mesh, control) = CoreMesh::join(settings.mesh.clone(), move |mesh| {
        Rc::new(ControlPlane::new(mesh, state))
    })
    .await
    .map_err(|error| format!("could not join the core mesh: {error:?}"))?;
    if mesh.core() != core {
        return Err(format!(
            "core {core} joined the core mesh as peer {} (the runtime makes cores in order)",
            mesh.core()
        ));
    }
    Ok((mesh, control))
}

async fn core_main(context: CoreContext, settings: CoreSettings) -> Result<(), String> {
    let CoreContext {
        core,
        listeners,
        balance,
        shutdown,
        ..
    } = context;
    beat_for_watchdog(core, &settings);
    let gate = Rc::new(StartupGate::new(settings.lifecycle.clone()));
    let serving = start_serving(core, listeners, balance, &gate, &settings, &shutdown);
    let (mesh, control) = join_control_mesh(core, &settings).await?;
    let update_files = UpdateFiles::open(&settings.data_directory)
        .map_err(|error| format!("could not open the update files: {error}"))?;
    let (wake_sender, wake_receiver) = futures_channel::mpsc::channel(1);
    let control_side = (core == CONTROL_CORE)
        .then(|| install_control_side(&settings, wake_sender, &update_files))
        .transpose()?;
    let (data_mesh, coordinator) = join_data_mesh(
        settings.data_mesh,
        &settings.data_directory,
        &settings.catalog,
        settings.shard_memory,
        settings.shard_registry.clone(),
        &control,
    )
    .await?;
    let stops_when_idle = settings.stop_when_idle && core == CONTROL_CORE;
    stop_when_idle(stops_when_idle, &settings.queue, &shutdown);
    schedule_snapshots(core, settings.snapshot_schedule, &coordinator);
    close_idle_shards_periodically(&coordinator);
    keep_cache_budget_periodically(&coordinator);
    if let Some(control_side) = control_side {
        let scheduler = Scheduler::new(
            coordinator.clone(),
            control_side,
            control.clone(),
            wake_receiver,
            settings.scheduler,
        );
        start_scheduler(scheduler, settings.interrupted.clone());
    }
    let request_log = start_request_log(settings.log_mode, &settings.logs);
    let search_queue = SearchQueue::new(settings.search_queue);
    crate::metrics::core_figures::install(search_queue.clone());
    let router = Rc::new(Router::new(Services {
        core,
        control,
        coordinator,
        production: settings.production,
        replication_parameters: settings.replication_parameters,
        search_queue,
        request_log: request_log.clone(),
        logs: settings.logs.clone(),
        update_files,
        personalization: settings.personalization.clone(),
        remote_availability: settings.remote_availability.clone(),
        lifecycle: settings.lifecycle.clone(),
        rate_limiter: RateLimiter::for_core(&settings.rate_limits, settings.cores),
    }));
    tracing::debug!(core, "serving");
    gate.open(router);
    settings.lifecycle.core_serving(core);
    serving.await;
    // Every connection has drained: no request line can follow these.
    request_log.flush();
    mesh.close();
    data_mesh.close();
    Ok(())
}

/// Runs the control core's scheduler in the indexing latency class, beginning with the
/// tasks of the batch a crash interrupted.
fn start_scheduler(scheduler: Scheduler, interrupted: Vec<Task>) {
    crate::runtime::latency::spawn_detached(
        crate::runtime::latency::LatencyClass::Indexing,
        scheduler.run(interrupted),
    );
}

/// Starts serving this core's listeners through `gate`, before the core's router exists (see
/// `runtime::startup_gate`); the task ends once the core stopped serving after shutdown.
fn start_serving(
    core: usize,
    listeners: Vec<crate::runtime::socket::Listener>,
    balance: crate::runtime::connection_balance::CoreBalance,
    gate: &Rc<StartupGate<Router>>,
    settings: &CoreSettings,
    shutdown: &ShutdownFlag,
) -> crate::runtime::Task<()> {
    let tls = settings
        .tls
        .clone()
        .map(|shared| Rc::new(CoreTlsAcceptor::new(shared)));
    let limits = Rc::new(settings.limits.clone());
    let end = ServingEnd {
        shutdown: shutdown.clone(),
        lifecycle: settings.lifecycle.clone(),
        drain_delay: settings.drain_delay,
    };
    tracing::trace!(core, "accepting before the router is built");
    crate::runtime::spawn(crate::runtime::listener::serve(
        listeners,
        balance,
        gate.clone(),
        limits,
        tls,
        end,
    ))
}

/// Beats this core's heartbeat for the service manager's watchdog, when it is on: a timer
/// task of the core, so the beats stop when the core stops making progress.
fn beat_for_watchdog(core: usize, settings: &CoreSettings) {
    let Some(period) = settings.heartbeat else {
        return;
    };
    let lifecycle = settings.lifecycle.clone();
    crate::runtime::spawn_detached(async move {
        loop {
            lifecycle.beat(core);
            crate::runtime::sleep(period).await;
        }
    });
}

/// When `enabled`, raises `shutdown` once no task of `queue` is enqueued or processing (or
/// the queue cannot be read, which is logged).
fn stop_when_idle(enabled: bool, queue: &Arc<TaskQueue>, shutdown: &ShutdownFlag) {
    if !enabled {
        return;
    }
    let (queue, shutdown) = (queue.clone(), shutdown.clone());
    crate::runtime::spawn_detached(async move {
        loop {
            crate::runtime::sleep(IDLE_POLL_INTERVAL).await;
            let queue = queue.clone();
            match crate::runtime::blocking::run(move || queue.has_unfinished_tasks()).await {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => {
                    tracing::error!(%error, "could not read the task queue");
                    break;
                }
            }
        }
        shutdown.raise();
    });
}

/// The control state this core's replica starts with; the control core also opens the key
/// store it persists keys to.
fn control_state(core: usize, settings: &CoreSettings) -> Result<ControlState, String> {
    let key_store = if core == CONTROL_CORE {
        Some(open_key_store(
            &settings.data_directory,
            settings.master_key.clone(),
        )?)
    } else {
        None
    };
    Ok(ControlState {
        data_directory: settings.data_directory.clone(),
        features: crate::control::load_features(&settings.data_directory)?,
        forced: settings.forced_features,
        keys: settings.keys.clone(),
        key_store,
        webhooks: settings.webhooks.clone(),
        dynamic_search_rules: Arc::new(crate::control::dynamic_search_rules::load_rules(
            &settings.data_directory,
        )?),
        chat_workspaces: Arc::new(crate::control::chat_workspaces::load_workspaces(
            &settings.data_directory,
        )?),
        network: settings.network.clone(),
    })
}

/// The control core's side of the task queue, installed for the routes of this core; the
/// scheduler is woken through `wake`.
fn install_control_side(
    settings: &CoreSettings,
    wake: futures_channel::mpsc::Sender<()>,
    update_files: &UpdateFiles,
) -> Result<Rc<ControlSide>, String> {
    let control_side = Rc::new(ControlSide {
        queue: settings.queue.clone(),
        wake,
        processing: RefCell::new(None),
        processing_index: RefCell::new(None),
        progress: RefCell::new(None),
        trace: RefCell::new(Vec::new()),
        queue_writes: crate::runtime::Semaphore::new(1),
        update_files: update_files.clone(),
        write_visibility: RefCell::new(crate::histogram::Histogram::new(
            &crate::tasks::control_side::WRITE_VISIBILITY_BOUNDS,
        )),
        write_visibility_target: settings.write_visibility_target,
    });
    ControlSide::install(control_side.clone())?;
    Ok(control_side)
}

/// Joins the data mesh with this core's coordinator, which hosts the core's shards and reads
/// the network from this core's `control` plane.
async fn join_data_mesh(
    setup: MeshSetup<Invocation, (), ()>,
    data_directory: &std::path::Path,
    catalog: &Arc<Catalog>,
    shard_memory: ShardMemory,
    shard_registry: Arc<ShardRegistry>,
    control: &Rc<ControlPlane>,
) -> Result<(Rc<CoreMesh<Invocation, (), ()>>, Rc<Coordinator>), String> {
    let data_directory = data_directory.to_path_buf();
    let catalog = catalog.clone();
    let control = control.clone();
    let rules_control = control.clone();
    let network: crate::coordinator::NetworkSource = Box::new(move || control.network());
    let rules: crate::coordinator::RulesSource =
        Box::new(move || rules_control.dynamic_search_rules());
    CoreMesh::join(setup, move |mesh| {
        let host = ShardHost::new(
            data_directory.clone(),
            shard_memory,
            shard_registry,
            mesh.core(),
            mesh.cores(),
        );
        Rc::new(Coordinator::new(
            mesh,
            host,
            data_directory,
            catalog,
            network,
            rules,
        ))
    })
    .await
    .map_err(|error| format!("could not join the data mesh: {error:?}"))
}

/// This core's request log, flushed periodically in the background (its flusher sleeps
/// without a timer while no line is pending, and `POST /logs/stderr` may enable the log at
/// any time).
fn start_request_log(
    log_mode: crate::config::LogMode,
    logs: &crate::logs::LogControl,
) -> Rc<RequestLog> {
    let request_log = Rc::new(RequestLog::stderr(log_mode, logs.switches()));
    let flushed = request_log.clone();
    crate::runtime::spawn_detached(async move {
        flushed.flush_periodically(&RuntimeTimer).await;
    });
    request_log
}

/// The index catalog as the queue stores it; the storages it does not name (a crash left
/// them) are removed first.
fn open_catalog(queue: &TaskQueue, data_directory: &Path) -> Result<Catalog, String> {
    let catalog = crate::tasks::catalog_store::load_catalog(&queue.database().begin_read())
        .map_err(|error| format!("could not read the index catalog: {error}"))?;
    let removed = crate::tasks::storage_sweep::remove_unnamed_storages(data_directory, &catalog)
        .map_err(|error| format!("could not remove the storages of no index: {error}"))?;
    if !removed.is_empty() {
        tracing::info!(
            ?removed,
            "removed the storages no index names (left by a crash)"
        );
    }
    Ok(catalog)
}

/// Opens the task queue and puts back the tasks a crash left processing; answers them so
/// the scheduler runs their batch again first.
fn open_task_queue(data_directory: &std::path::Path) -> Result<(TaskQueue, Vec<Task>), String> {
    let path = data_directory.join(TASK_QUEUE_FILE_NAME);
    let mut queue = TaskQueue::open(&path, storage_engine::Options::default())
        .map_err(|error| format!("could not open the task queue: {error}"))?;
    let uids = queue
        .requeue_interrupted()
        .map_err(|error| format!("could not recover the interrupted tasks: {error}"))?;
    let mut interrupted = Vec::with_capacity(uids.len());
    for uid in uids {
        if let Some(task) = queue
            .get_task(uid)
            .map_err(|error| format!("could not read task {uid}: {error}"))?
        {
            interrupted.push(task);
        }
    }
    remove_orphan_update_files(data_directory, &queue)?;
    Ok((queue, interrupted))
}

/// Removes the update files no waiting task refers to: a crash between writing a payload and
/// registering its task leaves one behind.
fn remove_orphan_update_files(
    data_directory: &std::path::Path,
    queue: &TaskQueue,
) -> Result<(), String> {
    let files = UpdateFiles::open(data_directory)
        .map_err(|error| format!("could not open the update files: {error}"))?;
    let waiting = queue
        .waiting_tasks()
        .map_err(|error| format!("could not read the waiting tasks: {error}"))?;
    let referenced: std::collections::BTreeSet<&str> = waiting
        .iter()
        .filter_map(|task| match &task.kind {
            crate::tasks::KindWithContent::DocumentAdditionOrUpdate { content_file, .. } => {
                Some(content_file.as_str())
            }
            _ => None,
        })
        .collect();
    let names = files
        .names()
        .map_err(|error| format!("could not list the update files: {error}"))?;
    for name in names
        .iter()
        .filter(|name| !referenced.contains(name.as_str()))
    {
        files
            .remove(name)
            .map_err(|error| format!("could not remove the update file {name}: {error}"))?;
    }
    Ok(())
}

/// Opens the durable key store (creating the default keys on first start).
fn open_key_store(
    data_directory: &std::path::Path,
    master_key: Option<String>,
) -> Result<KeyStore, String> {
    let persistence = Box::new(JsonFileKeyPersistence::new(data_directory));
    KeyStore::open(persistence, master_key, time::OffsetDateTime::now_utc())
        .map_err(|error| format!("could not open the API keys: {error}"))
}

/// The TLS options when `--ssl-cert-path` and `--ssl-key-path` are both given.
fn tls_options(config: &Config) -> Option<TlsOptions> {
    let (Some(cert_path), Some(key_path)) = (&config.ssl_cert_path, &config.ssl_key_path) else {
        return None;
    };
    Some(TlsOptions {
        cert_path: cert_path.clone(),
        key_path: key_path.clone(),
        auth_path: config.ssl_auth_path.clone(),
        require_auth: config.ssl_require_auth,
        ocsp_path: config.ssl_ocsp_path.clone(),
        resumption: config.ssl_resumption,
        tickets: config.ssl_tickets,
    })
}

/// The TLS configuration the cores start with, when TLS is asked for; and from now on,
/// SIGHUP reloads the configuration into it and into the logs (see [`reload`]).
fn serving_tls_and_reloads(
    config: &Config,
    logs: &crate::logs::LogControl,
) -> Result<Option<Arc<SharedTlsConfig>>, String> {
    let tls = tls_options(config)
        .map(|options| crate::http::tls::server_config(&options))
        .transpose()
        .map_err(|error| format!("TLS: {error}"))?
        .map(|server_config| Arc::new(SharedTlsConfig::new(server_config)));
    let mut reloader = reload::Reloader::new(config.clone(), logs.clone(), tls.clone());
    crate::runtime::reload_signal::on_reload_signal(move || reloader.reload())
        .map_err(|error| format!("could not install the SIGHUP handler: {error}"))?;
    Ok(tls)
}

/// Every socket address `http_addr` names (`localhost:7700` gives the loopback ones).
fn resolve(http_addr: &str) -> Result<Vec<SocketAddr>, String> {
    let mut addresses: Vec<SocketAddr> = http_addr
        .to_socket_addrs()
        .map_err(|error| format!("`{http_addr}` is not a valid address to listen on: {error}"))?
        .collect();
    addresses.sort();
    addresses.dedup();
    if addresses.is_empty() {
        return Err(format!("`{http_addr}` resolves to no address"));
    }
    Ok(addresses)
}
