//! One server's run of the benchmark: start it fresh, create the index, ingest the base
//! documents, then go through every phase in order (idle, fixed write rate replacing base
//! documents, unbounded writes replacing base documents, fixed write rate adding documents,
//! unbounded writes,
//! right after indexing, warm, warm with one connection), and stop it.
//!
//! Invariants: the server is stopped on every path out of `run_side` (the process guard's
//! drop); the writers send the documents after the base, in dataset order, each once (the
//! fixed-rate writer the first `write_documents` of them, the unbounded writer the rest, as
//! far as it gets; the replacing phases send the same documents under base ids, so the index
//! keeps the idle phase's size); before the idle, the warm and every write phase on the
//! base's documents the server goes quiet (as
//! `search_compare` waits); the phase right after indexing starts as soon as the harness sees
//! no task enqueued or processing, and its records are read only after its load; a failed
//! write, a failed task or a failed load fails the side.

use std::time::{Duration, Instant};

use time::OffsetDateTime;

use super::phase::{Phase, PhaseResults, SearchLoad, WriteResults, run_phase};
use super::task_records::{TaskTimes, read_tasks, task_figures};
use super::writer::{WritePacing, WritePlan, WriterOutcome};
use crate::compare::client::Client;
use crate::compare::server::{ServerProcess, ServerSpec};
use crate::compare::settle::{Settling, wait_until_quiet};
use crate::compare::setup::{
    Ingestion, get_json, ingest, wait_for_tasks, wait_until_no_task_pending,
};
use crate::compare::side::{LoadSettings, PRIMARY_KEY, StartedSide, start_with_index};
use crate::load::Workload;

/// Milliseconds per second.
pub const MILLISECONDS_PER_SECOND: f64 = 1000.0;
/// The most replacements a replacing phase prepares per base document.
pub const REPLACEMENTS_PER_BASE_DOCUMENT: usize = 2;

/// Every number of a run, the same for both servers.
#[derive(Debug, Clone, PartialEq)]
pub struct WritesOptions {
    /// The index created and searched.
    pub index_uid: String,
    /// Documents ingested before the first phase.
    pub base_documents: usize,
    /// Documents per payload of the base ingestion.
    pub base_batch: usize,
    /// Connections of the search load (but in the one-connection phase).
    pub connections: usize,
    /// Measured time of the idle, both unbounded-writes and the warm phases.
    pub duration: Duration,
    /// Unmeasured warm-up of every phase but the one right after indexing.
    pub warmup: Duration,
    /// The longest wait for a search response.
    pub timeout: Duration,
    /// Seed of the query choice.
    pub seed: u64,
    /// Documents the fixed-rate writer adds.
    pub write_documents: usize,
    /// Over how long it adds them (warm-up included; the search is measured for the rest).
    pub write_duration: Duration,
    /// Documents per payload of the fixed-rate writer.
    pub write_batch: usize,
    /// Documents per payload of the unbounded writer.
    pub unbounded_batch: usize,
    /// Tasks the unbounded writer keeps unfinished.
    pub unbounded_pending_tasks: usize,
    /// Measured time of the phase right after indexing (no warm-up).
    pub after_indexing_duration: Duration,
    /// Keep the data directory after the run.
    pub keep_data: bool,
}

impl WritesOptions {
    /// The fixed write rate in documents per second.
    pub fn write_rate(&self) -> f64 {
        self.write_documents as f64 / self.write_duration.as_secs_f64()
    }
}

/// Everything measured on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct SideWrites {
    /// The server's name.
    pub name: &'static str,
    /// Its `GET /version` `pkgVersion`, when it answered one.
    pub version: Option<String>,
    /// The base ingestion (no search running).
    pub base: Ingestion,
    /// How long the server stayed busy after the base ingestion.
    pub base_settling: Settling,
    /// Each phase, in order.
    pub phases: Vec<PhaseResults>,
}

/// A running side: what every phase needs.
struct Run<'a> {
    server: ServerProcess,
    client: Client,
    workload: &'a Workload,
    options: &'a WritesOptions,
}

impl<'a> Run<'a> {
    fn name(&self) -> &'static str {
        self.server.spec.kind.name()
    }

    fn load(&self, connections: usize, duration: Duration, warmup: Duration) -> SearchLoad<'a> {
        SearchLoad {
            workload: self.workload,
            settings: LoadSettings {
                duration,
                warmup,
                timeout: self.options.timeout,
                seed: self.options.seed,
            },
            connections,
        }
    }

    fn report_path(&self, phase: Phase) -> std::path::PathBuf {
        self.server
            .spec
            .work_dir
            .join(format!("{}.json", phase.name()))
    }

    fn document_count(&mut self) -> Option<u64> {
        let path = format!("/indexes/{}/stats", self.options.index_uid);
        get_json(&mut self.client, &path).ok()?["numberOfDocuments"].as_u64()
    }

    fn settle(&self) -> Result<Settling, String> {
        let pid = i32::try_from(self.server.pid)
            .map_err(|_| format!("process id {} out of range", self.server.pid))?;
        eprintln!("[{}] waiting for the server to go quiet", self.name());
        wait_until_quiet(pid, Instant::now())
    }

    /// A phase without writes.
    fn search_phase(
        &mut self,
        phase: Phase,
        load: &SearchLoad,
    ) -> Result<(PhaseResults, OffsetDateTime), String> {
        eprintln!("[{}] phase {}", self.name(), phase.name());
        let started = OffsetDateTime::now_utc();
        let (search, _) = run_phase(&self.server, load, None, &self.report_path(phase))?;
        let results = PhaseResults {
            phase,
            search,
            writes: None,
            documents: self.document_count(),
            start_after_last_task_milliseconds: None,
        };
        Ok((results, started))
    }

    /// A phase with a writer; returns once no task is enqueued or processing (the records
    /// are read by `finish_writes`).
    fn write_phase(
        &mut self,
        phase: Phase,
        load: &SearchLoad,
        plan: &WritePlan,
    ) -> Result<(PhaseResults, WriterOutcome), String> {
        eprintln!(
            "[{}] phase {}: writing up to {} documents",
            self.name(),
            phase.name(),
            plan.documents.len()
        );
        let (search, outcome) =
            run_phase(&self.server, load, Some(plan), &self.report_path(phase))?;
        let outcome = outcome.ok_or("the writer did not report")?;
        if let Some(error) = &outcome.error {
            return Err(format!("{} writer: {error}", phase.name()));
        }
        eprintln!(
            "[{}] sent {} documents in {} payloads over {:.1} s; waiting for the tasks",
            self.name(),
            outcome.documents_sent,
            outcome.payloads_sent,
            outcome.sending.as_secs_f64()
        );
        wait_until_no_task_pending(&mut self.client)?;
        let results = PhaseResults {
            phase,
            search,
            writes: None,
            documents: None,
            start_after_last_task_milliseconds: None,
        };
        Ok((results, outcome))
    }

    /// A phase with a writer, once its tasks finished and their records are read.
    fn finished_write_phase(
        &mut self,
        phase: Phase,
        load: &SearchLoad,
        plan: &WritePlan,
    ) -> Result<PhaseResults, String> {
        let (mut results, outcome) = self.write_phase(phase, load, plan)?;
        self.finish_writes(&mut results, outcome)?;
        Ok(results)
    }

    /// Reads the records of `outcome`'s tasks into `results`; answers them.
    fn finish_writes(
        &mut self,
        results: &mut PhaseResults,
        outcome: WriterOutcome,
    ) -> Result<Vec<TaskTimes>, String> {
        wait_for_tasks(&mut self.client)?;
        let tasks = read_tasks(&mut self.client, &outcome.task_uids)?;
        results.writes = Some(WriteResults {
            writer: outcome,
            tasks: task_figures(&tasks),
        });
        results.documents = self.document_count();
        Ok(tasks)
    }
}

/// The documents after the base: the fixed-rate writer's, then the unbounded writer's.
fn write_documents<'a>(
    lines: &'a [String],
    options: &WritesOptions,
) -> (&'a [String], &'a [String]) {
    let after_base = &lines[options.base_documents.min(lines.len())..];
    after_base.split_at(options.write_documents.min(after_base.len()))
}

/// The documents of a replacing phase: `documents`, each under the id of a base document
/// (the base taken in order, again from its start when `documents` is longer), so that every
/// write replaces a document and the index keeps its size. Beyond
/// [`REPLACEMENTS_PER_BASE_DOCUMENT`] times the base, `documents` are left out: an unbounded
/// writer replaces fewer in a phase, and the copies would only cost memory.
fn replacement_documents(
    lines: &[String],
    documents: &[String],
    options: &WritesOptions,
) -> Result<Vec<String>, String> {
    let base = &lines[..options.base_documents.min(lines.len())];
    if base.is_empty() {
        return Ok(Vec::new());
    }
    let most = base.len().saturating_mul(REPLACEMENTS_PER_BASE_DOCUMENT);
    documents
        .iter()
        .take(most)
        .zip(base.iter().cycle())
        .map(|(content, replaced)| with_id_of(content, replaced))
        .collect()
}

/// `content` with the primary key of `replaced`.
fn with_id_of(content: &str, replaced: &str) -> Result<String, String> {
    let parse = |line: &str| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(line)
            .map_err(|error| format!("a dataset line is not a JSON object: {error}"))
    };
    let mut document = parse(content)?;
    let id = parse(replaced)?
        .remove(PRIMARY_KEY)
        .ok_or_else(|| format!("a base document has no `{PRIMARY_KEY}`"))?;
    document.insert(PRIMARY_KEY.to_string(), id);
    serde_json::to_string(&document).map_err(|error| error.to_string())
}

/// Runs one side; progress goes to standard error.
pub fn run_side(
    spec: &ServerSpec,
    lines: &[String],
    workload: &Workload,
    options: &WritesOptions,
) -> Result<SideWrites, String> {
    let name = spec.kind.name();
    let StartedSide {
        server,
        mut client,
        version,
    } = start_with_index(spec, &options.index_uid)?;
    let base_lines = &lines[..options.base_documents.min(lines.len())];
    eprintln!("[{name}] ingesting {} base documents", base_lines.len());
    let base = ingest(
        &mut client,
        &options.index_uid,
        base_lines,
        options.base_batch,
    )?;
    eprintln!(
        "[{name}] indexed {} documents ({} stored) in {:.2} s",
        base.documents,
        base.stored,
        base.elapsed.as_secs_f64()
    );
    let mut run = Run {
        server,
        client,
        workload,
        options,
    };
    let base_settling = run.settle()?;
    let phases = run_phases(&mut run, lines)?;
    run.server.stop();
    if !options.keep_data {
        let _ = std::fs::remove_dir_all(spec.data_dir());
    }
    Ok(SideWrites {
        name,
        version,
        base,
        base_settling,
        phases,
    })
}

/// The plan of a fixed-rate writer sending `documents`.
fn fixed_plan<'a>(options: &'a WritesOptions, documents: &'a [String]) -> WritePlan<'a> {
    WritePlan {
        index_uid: &options.index_uid,
        documents,
        batch: options.write_batch,
        pacing: WritePacing::FixedRate {
            documents_per_second: options.write_rate(),
        },
        deadline: None,
    }
}

/// The plan of an unbounded writer sending `documents`, from now until the end of a
/// phase's warm-up and measured load.
fn unbounded_plan<'a>(options: &'a WritesOptions, documents: &'a [String]) -> WritePlan<'a> {
    WritePlan {
        index_uid: &options.index_uid,
        documents,
        batch: options.unbounded_batch,
        pacing: WritePacing::Unbounded {
            pending_tasks: options.unbounded_pending_tasks,
        },
        deadline: Some(Instant::now() + options.warmup + options.duration),
    }
}

/// Every phase after the base ingestion, in order.
fn run_phases(run: &mut Run, lines: &[String]) -> Result<Vec<PhaseResults>, String> {
    let options = run.options;
    let (fixed_documents, unbounded_documents) = write_documents(lines, options);
    let mut phases = Vec::new();
    let full = run.load(options.connections, options.duration, options.warmup);
    phases.push(run.search_phase(Phase::Idle, &full)?.0);

    let measured = options.write_duration.saturating_sub(options.warmup);
    let fixed_load = run.load(options.connections, measured, options.warmup);
    // Each replacing phase's documents are made just before it and freed after it, and its
    // plan is made there too, so that an unbounded writer's deadline counts from its start.
    {
        let replacements = replacement_documents(lines, fixed_documents, options)?;
        let plan = fixed_plan(options, &replacements);
        phases.push(run.finished_write_phase(Phase::FixedRateUpdates, &fixed_load, &plan)?);
    }
    // Each write phase on the base's documents starts on a quiet server, as the idle one did.
    run.settle()?;
    {
        let replacements = replacement_documents(lines, unbounded_documents, options)?;
        let plan = unbounded_plan(options, &replacements);
        phases.push(run.finished_write_phase(Phase::UnboundedUpdates, &full, &plan)?);
    }
    run.settle()?;
    phases.push(run.finished_write_phase(
        Phase::FixedRate,
        &fixed_load,
        &fixed_plan(options, fixed_documents),
    )?);

    let (mut unbounded, outcome) = run.write_phase(
        Phase::Unbounded,
        &full,
        &unbounded_plan(options, unbounded_documents),
    )?;
    // No request between the last task's finish and the search right after it.
    let after_load = run.load(
        options.connections,
        options.after_indexing_duration,
        Duration::ZERO,
    );
    let (mut after, started) = run.search_phase(Phase::AfterIndexing, &after_load)?;
    let tasks = run.finish_writes(&mut unbounded, outcome)?;
    let last_finished = tasks.iter().map(|task| task.finished).max();
    after.start_after_last_task_milliseconds = last_finished
        .map(|finished| (started - finished).as_seconds_f64() * MILLISECONDS_PER_SECOND);
    phases.push(unbounded);
    phases.push(after);

    run.settle()?;
    phases.push(run.search_phase(Phase::Warm, &full)?.0);
    let single = run.load(1, options.duration, options.warmup);
    phases.push(run.search_phase(Phase::WarmOneConnection, &single)?.0);
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_options() -> WritesOptions {
        WritesOptions {
            index_uid: "pypi".to_string(),
            base_documents: 4,
            base_batch: 2,
            connections: 16,
            duration: Duration::from_secs(20),
            warmup: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
            seed: 42,
            write_documents: 3,
            write_duration: Duration::from_secs(40),
            write_batch: 1,
            unbounded_batch: 1,
            unbounded_pending_tasks: 2,
            after_indexing_duration: Duration::from_secs(5),
            keep_data: false,
        }
    }

    #[test]
    fn the_writers_get_the_documents_after_the_base_each_once() {
        let lines: Vec<String> = (0..10).map(|index| index.to_string()).collect();
        let options = WritesOptions {
            base_documents: 4,
            write_documents: 3,
            ..test_options()
        };
        let (fixed, unbounded) = write_documents(&lines, &options);
        assert_eq!(fixed, ["4", "5", "6"]);
        assert_eq!(unbounded, ["7", "8", "9"]);
        assert!((options.write_rate() - 0.075).abs() < 1e-12);
    }

    #[test]
    fn replacements_carry_the_fixed_documents_under_base_ids() {
        let lines: Vec<String> = (0..7)
            .map(|index| format!(r#"{{"id":{index},"name":"n{index}"}}"#))
            .collect();
        let options = WritesOptions {
            base_documents: 2,
            write_documents: 3,
            ..test_options()
        };
        let (fixed, _) = write_documents(&lines, &options);
        let replacements = replacement_documents(&lines, fixed, &options).expect("valid lines");
        let parsed: Vec<serde_json::Value> = replacements
            .iter()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect();
        assert_eq!(parsed[0], serde_json::json!({"id": 0, "name": "n2"}));
        assert_eq!(parsed[1], serde_json::json!({"id": 1, "name": "n3"}));
        assert_eq!(parsed[2], serde_json::json!({"id": 0, "name": "n4"}));
        // An unbounded phase's documents: each base document replaced at most twice.
        let many = replacement_documents(&lines, &lines[2..], &options).expect("valid lines");
        assert_eq!(many.len(), 2 * REPLACEMENTS_PER_BASE_DOCUMENT);
    }
}
