//! One phase of the benchmark: a closed-loop search load on the mix, alone or beside a
//! writer, and what it measured.
//!
//! Invariants: the writer runs on its own connection and thread, started just before the
//! search load, so the search load's warm-up and measured window both fall inside the
//! writing; `run_phase` returns only once both the load and the writer ended (the writer's
//! tasks may still be queued: waiting for them is the caller's step, so that the phase right
//! after indexing can start the moment the last one finished).

use std::path::Path;

use super::task_records::TaskFigures;
use super::writer::{WritePlan, WriterOutcome, write};
use crate::compare::client::Client;
use crate::compare::server::ServerProcess;
use crate::compare::side::{LoadSettings, REQUEST_TIMEOUT, load_run};
use crate::compare::table::LoadFigures;
use crate::load::{Pacing, Workload};

/// The phases, in the order each server goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The base documents only, after the server went quiet.
    Idle,
    /// While a writer replaces base documents at a fixed rate: the index keeps its size, so
    /// the idle phase is the reference at the same documents.
    FixedRateUpdates,
    /// While a writer replaces base documents as fast as the server finishes them: the index
    /// keeps its size, so the idle phase is the reference at the same documents.
    UnboundedUpdates,
    /// While a writer adds documents at a fixed rate.
    FixedRate,
    /// While a writer adds documents as fast as the server finishes them.
    Unbounded,
    /// The first seconds after the last write task finished.
    AfterIndexing,
    /// Every document, after the server went quiet again.
    Warm,
    /// The same with one connection.
    WarmOneConnection,
}

/// Every phase in order.
pub const PHASES: [Phase; 8] = [
    Phase::Idle,
    Phase::FixedRateUpdates,
    Phase::UnboundedUpdates,
    Phase::FixedRate,
    Phase::Unbounded,
    Phase::AfterIndexing,
    Phase::Warm,
    Phase::WarmOneConnection,
];

impl Phase {
    /// The phase's name in file names and logs.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::FixedRateUpdates => "fixed-write-rate-updates",
            Phase::UnboundedUpdates => "unbounded-writes-updates",
            Phase::FixedRate => "fixed-write-rate",
            Phase::Unbounded => "unbounded-writes",
            Phase::AfterIndexing => "right-after-indexing",
            Phase::Warm => "warm",
            Phase::WarmOneConnection => "warm-1-connection",
        }
    }

    /// A writer sends as fast as the server finishes its tasks.
    pub fn unbounded(self) -> bool {
        matches!(self, Phase::UnboundedUpdates | Phase::Unbounded)
    }

    /// The phase's title in the report.
    pub fn title(self) -> &'static str {
        match self {
            Phase::Idle => "Idle (base documents, no writes)",
            Phase::FixedRateUpdates => "Fixed write rate, replacing base documents",
            Phase::UnboundedUpdates => "Unbounded writes, replacing base documents",
            Phase::FixedRate => "Fixed write rate, adding documents",
            Phase::Unbounded => "Unbounded writes",
            Phase::AfterIndexing => "Right after indexing",
            Phase::Warm => "Warm (every document, no writes)",
            Phase::WarmOneConnection => "Warm, 1 connection",
        }
    }
}

/// What a phase's writer did and what its tasks say.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteResults {
    /// The writer's own account.
    pub writer: WriterOutcome,
    /// The server's task records of the writer's tasks (none when it enqueued none).
    pub tasks: Option<TaskFigures>,
}

/// What one phase measured on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseResults {
    /// Which phase.
    pub phase: Phase,
    /// The search load's figures.
    pub search: LoadFigures,
    /// The writes, in a write phase.
    pub writes: Option<WriteResults>,
    /// Documents in the index at the end of the phase (after its writes finished).
    pub documents: Option<u64>,
    /// Right after indexing: milliseconds from the last task's finish (server clock) to the
    /// start of the search load (harness clock, the same machine).
    pub start_after_last_task_milliseconds: Option<f64>,
}

/// How a phase's search load runs.
#[derive(Debug, Clone, Copy)]
pub struct SearchLoad<'a> {
    /// The mix.
    pub workload: &'a Workload,
    /// Duration, warm-up, timeout and seed.
    pub settings: LoadSettings,
    /// Connections.
    pub connections: usize,
}

/// Runs the search load of a phase on `server`, beside `writer` when given, and writes the
/// load's full report to `report_path`; answers the load's figures and the writer's outcome.
pub fn run_phase(
    server: &ServerProcess,
    load: &SearchLoad,
    writer: Option<&WritePlan>,
    report_path: &Path,
) -> Result<(LoadFigures, Option<WriterOutcome>), String> {
    let search = || {
        load_run(
            server,
            load.workload,
            &load.settings,
            Pacing::ClosedLoop,
            load.connections,
            report_path,
        )
    };
    let Some(plan) = writer else {
        return search().map(|figures| (figures, None));
    };
    std::thread::scope(|scope| {
        let writing = scope.spawn(|| {
            let spec = &server.spec;
            let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
            write(&mut client, plan)
        });
        let figures = search();
        let outcome = writing
            .join()
            .map_err(|_| "the writer thread panicked".to_string())?;
        Ok((figures?, Some(outcome)))
    })
}
