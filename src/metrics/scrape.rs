//! A scrape: the instance's figures (statistics of the data directory and the indexes, the
//! task queue's figures from the control core) and every core's own, asked through the core
//! mesh, written out as Prometheus text.
//!
//! The reload counters are the process's atomics (`crate::runtime::reload_signal`), read
//! where the scrape is answered.
//!
//! Invariant: the scrape is answered from copies: no core's counters are held while the
//! text is written, and no core waits for another's answer.

use std::rc::Rc;

use time::OffsetDateTime;

use super::core_figures::{CoreFigures, TakeCoreFigures};
use super::exposition::Exposition;
use crate::coordinator::Coordinator;
use crate::errors::ResponseError;
use crate::host::documents::DocumentCount;
use crate::network::Network;
use crate::network::availability::{RemoteAvailability, RemoteStatus};
use crate::tasks::queue_figures::{TaskFigures, task_figures};

/// What the instance as a whole tells a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceFigures {
    /// Every byte of the data directory (`databaseSize` of `/stats`).
    pub database_bytes: u64,
    /// Those that hold live data (`usedDatabaseSize`).
    pub used_database_bytes: u64,
    /// Every index and its documents, in catalog order.
    pub index_documents: Vec<(String, u64)>,
    /// The last change of any index (`lastUpdate`).
    pub last_update: Option<OffsetDateTime>,
    pub tasks: TaskFigures,
}

/// The text of `GET /metrics`.
pub async fn scrape(
    coordinator: &Rc<Coordinator>,
    remotes: &RemoteAvailability,
) -> Result<String, ResponseError> {
    let instance = instance_figures(coordinator).await?;
    let cores = every_core_figures(coordinator).await?;
    let mut exposition = Exposition::default();
    super::meilisearch_families::add(
        &mut exposition,
        &instance,
        &cores,
        OffsetDateTime::now_utc(),
    );
    super::core_families::add(&mut exposition, &cores);
    super::store_families::add(&mut exposition, &coordinator.store_figures());
    add_write_visibility(&mut exposition, &instance.tasks);
    add_remote_availability(&mut exposition, &coordinator.network(), remotes);
    if crate::traces::enabled() {
        exposition.counters(
            "coresearch_trace_spans_dropped_total",
            "Finished spans dropped since start because the trace exporter's queue was full",
            vec![(Vec::new(), crate::traces::exporter::dropped_spans() as f64)],
        );
    }
    add_reloads(&mut exposition);
    Ok(exposition.into_text())
}

/// `coresearch_network_remote_available`: 1 for each remote of the network (this instance
/// left out) that answers lately, 0 for one marked unavailable after failed calls; no series
/// without a network.
fn add_remote_availability(
    exposition: &mut Exposition,
    network: &Network,
    remotes: &RemoteAvailability,
) {
    let series = network
        .remotes
        .keys()
        .filter(|remote| network.local.as_deref() != Some(remote.as_str()))
        .map(|remote| {
            let available = remotes.status(remote) == RemoteStatus::Available;
            (
                vec![("remote", remote.clone())],
                f64::from(u8::from(available)),
            )
        })
        .collect();
    exposition.gauges(
        "coresearch_network_remote_available",
        "1 for each remote of the network that answers lately, 0 for one unavailable",
        series,
    );
}

/// `coresearch_configuration_reloads_total`: the SIGHUP reloads since start, by outcome
/// (`failed`: something read was refused and kept as it was; see `crate::server`'s
/// `reload`). Both series are there from the start, at 0.
fn add_reloads(exposition: &mut Exposition) {
    let requests = crate::runtime::reload_signal::reload_requests();
    exposition.counters(
        "coresearch_configuration_reloads_total",
        "Configuration reloads (SIGHUP) since start, by outcome",
        vec![
            (
                vec![("outcome", "succeeded".to_owned())],
                requests.succeeded() as f64,
            ),
            (
                vec![("outcome", "failed".to_owned())],
                requests.failed() as f64,
            ),
        ],
    );
}

/// `coresearch_write_visibility_seconds`: how long succeeded document writes took from their
/// registration until searches saw them (the end of their batch); the target they are held to
/// (`coresearch_write_visibility_target_seconds`, 0 for none) and whether the batch being
/// processed passed it (`coresearch_writes_overdue`).
fn add_write_visibility(exposition: &mut Exposition, tasks: &TaskFigures) {
    exposition.histograms(
        "coresearch_write_visibility_seconds",
        "Time from the registration of each succeeded document write to the end of its batch, \
         when searches see it",
        vec![(Vec::new(), tasks.write_visibility.clone())],
    );
    exposition.gauge(
        "coresearch_write_visibility_target_seconds",
        "How long a write may wait before indexing stops giving way to searches (0: no target)",
        tasks
            .write_visibility_target
            .map_or(0.0, |target| target.as_secs_f64()),
    );
    exposition.gauge(
        "coresearch_writes_overdue",
        "1 while the batch being processed holds a write that waited past the target",
        if tasks.writes_overdue { 1.0 } else { 0.0 },
    );
}

/// The statistics `GET /stats` gives, and the task queue's figures.
async fn instance_figures(coordinator: &Rc<Coordinator>) -> Result<InstanceFigures, ResponseError> {
    let bytes = crate::indexes::stats::database_bytes(coordinator).await?;
    let mut index_documents = Vec::new();
    let mut last_update = None;
    for record in coordinator.catalog().iter() {
        let mut documents = 0;
        for answer in coordinator
            .ask_every_shard(&record.shard_set(), |_| DocumentCount)
            .await
        {
            documents += answer?;
        }
        index_documents.push((record.uid.clone(), documents));
        last_update = last_update.max(Some(record.updated_at));
    }
    Ok(InstanceFigures {
        database_bytes: bytes.total,
        used_database_bytes: bytes.total.saturating_sub(bytes.unused),
        index_documents,
        last_update,
        tasks: task_figures(coordinator).await?,
    })
}

/// Every core's figures, all cores asked at once; in core order.
async fn every_core_figures(
    coordinator: &Rc<Coordinator>,
) -> Result<Vec<CoreFigures>, ResponseError> {
    let asked: Vec<_> = (0..coordinator.cores())
        .map(|core| {
            let coordinator = coordinator.clone();
            crate::runtime::spawn(async move { coordinator.ask(core, TakeCoreFigures).await })
        })
        .collect();
    let mut figures = Vec::with_capacity(asked.len());
    for answer in asked {
        figures.push(answer.await?);
    }
    Ok(figures)
}
