//! One side of the comparison: start a server, fill it, ask it every query once for its top
//! hits, load it at fixed concurrency and at a fixed rate, measure its memory and disk, and
//! stop it. A side may skip the load runs and the compaction (`skip_load`: only the answers
//! are compared) and may reuse the data directory an earlier run kept (`reuse_data`).
//!
//! Invariants: the server is stopped on every path out of `run_side` (the process guard's
//! drop); the top-hits pass runs after indexing and before the load runs, one query at a
//! time, so its answers do not depend on load; both load runs send the same mix, each query
//! with equal probability, from the same seed; the detailed load reports are kept as JSON in
//! the side's work directory.

use std::path::Path;
use std::time::{Duration, Instant};

use super::agreement::{TopHits, top_ids};
use super::client::Client;
use super::disk::disk_usage;
use super::query_mix::{Query, TOP_HITS_COUNT};
use super::server::{ServerProcess, ServerSpec};
use super::settle::wait_until_quiet;
use super::setup::{Ingestion, comparison_settings, create_index, get_json, ingest};
use super::table::{LoadFigures, SideResults};
use crate::load::{Limit, Pacing, Report, RequestTemplate, RunOptions, Target, Workload, run};
use crate::measure::peak_resident_bytes;

/// The longest wait for one setup, ingestion or top-hits request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The primary key of the comparison's index.
pub const PRIMARY_KEY: &str = "id";

/// How each side is driven.
#[derive(Debug, Clone, PartialEq)]
pub struct SideOptions {
    /// The index searched.
    pub index_uid: String,
    /// Documents per payload.
    pub batch: usize,
    /// Connections of the closed-loop run.
    pub concurrency: usize,
    /// Rate of the open-loop run, none to skip it.
    pub rate: Option<f64>,
    /// Connections available to the open-loop run.
    pub rate_connections: usize,
    /// Measured time of each run.
    pub duration: Duration,
    /// Unmeasured warm-up of each run.
    pub warmup: Duration,
    /// The longest wait for a response during the load runs.
    pub load_timeout: Duration,
    /// Seed of the query choice.
    pub seed: u64,
    /// Keep the data directory after the run.
    pub keep_data: bool,
    /// Skip the load runs and the compaction.
    pub skip_load: bool,
    /// Start on the data directory an earlier run kept, when its index is complete.
    pub reuse_data: bool,
}

/// What one side produced.
#[derive(Debug, Clone)]
pub struct SideOutcome {
    /// Its measurements.
    pub results: SideResults,
    /// Its top hits for each query, in mix order.
    pub top_hits: Vec<TopHits>,
}

/// Compacts index `uid` (`POST /indexes/{uid}/compact`) and waits until its task succeeded.
fn compact(client: &mut Client, uid: &str) -> Result<(), String> {
    let response = client
        .request(
            "POST",
            &format!("/indexes/{uid}/compact"),
            "application/json",
            b"",
        )
        .map_err(|error| format!("compact: {error}"))?;
    if response.status != 202 {
        return Err(format!(
            "compact answered {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        ));
    }
    super::setup::wait_for_tasks(client)
}

/// A server just started, with its client and the index of the comparison created.
#[derive(Debug)]
pub struct StartedSide {
    /// The server.
    pub server: ServerProcess,
    /// A client of it (setup requests).
    pub client: Client,
    /// Its `GET /version` `pkgVersion`, when it answered one.
    pub version: Option<String>,
}

/// Starts the server of `spec` fresh and creates index `index_uid` with the comparison's
/// primary key and settings.
pub fn start_with_index(spec: &ServerSpec, index_uid: &str) -> Result<StartedSide, String> {
    eprintln!("[{}] starting {}", spec.kind.name(), spec.binary.display());
    let server = ServerProcess::start(spec)?;
    let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
    let version = get_json(&mut client, "/version")
        .ok()
        .and_then(|answer| answer["pkgVersion"].as_str().map(str::to_string));
    create_index(&mut client, index_uid, PRIMARY_KEY, &comparison_settings())?;
    Ok(StartedSide {
        server,
        client,
        version,
    })
}

/// Runs one side; progress goes to standard error.
pub fn run_side(
    spec: &ServerSpec,
    lines: &[String],
    queries: &[Query],
    options: &SideOptions,
) -> Result<SideOutcome, String> {
    let name = spec.kind.name();
    let (
        StartedSide {
            mut server,
            mut client,
            version,
        },
        ingestion,
    ) = start_filled(spec, lines, options)?;
    let indexed_at = Instant::now();
    eprintln!(
        "[{name}] indexed {} documents ({} stored) in {:.2} s",
        ingestion.documents,
        ingestion.stored,
        ingestion.elapsed.as_secs_f64()
    );
    let peak_rss_after_indexing = peak_resident_bytes(Some(server.pid));
    let disk = disk_usage(&spec.data_dir());
    eprintln!("[{name}] waiting for the server to go quiet");
    let settling = wait_until_quiet(server_pid(&server)?, indexed_at)?;
    eprintln!(
        "[{name}] {} after {:.1} s",
        if settling.quiet {
            "quiet"
        } else {
            "still busy"
        },
        settling.elapsed.as_secs_f64()
    );
    let disk_settled = disk_usage(&spec.data_dir());

    eprintln!("[{name}] top-hits pass over {} queries", queries.len());
    let top_hits = top_hits_pass(&mut client, &options.index_uid, queries);
    let top_hits_failures = top_hits.iter().filter(|hits| hits.is_err()).count() as u64;
    if let Some(Err(first)) = top_hits.iter().find(|hits| hits.is_err()) {
        eprintln!("[{name}] {top_hits_failures} queries failed, the first: {first}");
    }

    let (closed_loop, open_loop) = if options.skip_load {
        (None, None)
    } else {
        load_runs(&server, spec, queries, options)?
    };
    let peak_rss_end = peak_resident_bytes(Some(server.pid));
    let disk_at_end = disk_usage(&spec.data_dir());
    let disk_after_compaction = if options.skip_load {
        None
    } else {
        eprintln!("[{name}] compaction");
        let compaction = compact(&mut client, &options.index_uid);
        if let Err(error) = &compaction {
            eprintln!("[{name}] compaction failed: {error}");
        }
        compaction.ok().map(|()| disk_usage(&spec.data_dir()))
    };
    server.stop();
    if !options.keep_data && !options.reuse_data {
        let _ = std::fs::remove_dir_all(spec.data_dir());
    }
    Ok(SideOutcome {
        results: SideResults {
            name,
            version,
            ingestion,
            peak_rss_after_indexing,
            peak_rss_end,
            disk,
            settling,
            disk_settled,
            disk_at_end,
            disk_after_compaction,
            top_hits_failures,
            closed_loop,
            open_loop,
        },
        top_hits,
    })
}

/// The closed-loop run and, when a rate is given, the open-loop run.
fn load_runs(
    server: &ServerProcess,
    spec: &ServerSpec,
    queries: &[Query],
    options: &SideOptions,
) -> Result<(Option<LoadFigures>, Option<LoadFigures>), String> {
    let name = spec.kind.name();
    let workload = search_workload(&options.index_uid, queries)?;
    eprintln!("[{name}] closed loop, {} connections", options.concurrency);
    let settings = LoadSettings {
        duration: options.duration,
        warmup: options.warmup,
        timeout: options.load_timeout,
        seed: options.seed,
    };
    let closed_loop = load_run(
        server,
        &workload,
        &settings,
        Pacing::ClosedLoop,
        options.concurrency,
        &spec.work_dir.join("closed-loop.json"),
    )?;
    let open_loop = match options.rate {
        Some(rate_per_second) => {
            eprintln!("[{name}] open loop, {rate_per_second} requests/s");
            Some(load_run(
                server,
                &workload,
                &settings,
                Pacing::OpenLoop { rate_per_second },
                options.rate_connections,
                &spec.work_dir.join("open-loop.json"),
            )?)
        }
        None => None,
    };
    Ok((Some(closed_loop), open_loop))
}

/// Starts the server on a filled index: the data directory an earlier run kept when
/// `reuse_data` and its index holds every document (settings applied again), otherwise a
/// fresh one with the index created and the dataset ingested.
fn start_filled(
    spec: &ServerSpec,
    lines: &[String],
    options: &SideOptions,
) -> Result<(StartedSide, Ingestion), String> {
    let name = spec.kind.name();
    if options.reuse_data && spec.data_dir().is_dir() {
        eprintln!("[{name}] starting {} in place", spec.binary.display());
        let server = ServerProcess::start_in_place(spec)?;
        let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
        let stats = get_json(
            &mut client,
            &format!("/indexes/{}/stats", options.index_uid),
        );
        let stored = stats
            .ok()
            .and_then(|stats| stats["numberOfDocuments"].as_u64())
            .unwrap_or(0);
        if stored == lines.len() as u64 {
            eprintln!("[{name}] reusing its data directory ({stored} documents)");
            apply_settings(&mut client, &options.index_uid)?;
            let version = get_json(&mut client, "/version")
                .ok()
                .and_then(|answer| answer["pkgVersion"].as_str().map(str::to_string));
            let ingestion = Ingestion {
                documents: lines.len(),
                payloads: 0,
                elapsed: Duration::ZERO,
                stored,
            };
            let started = StartedSide {
                server,
                client,
                version,
            };
            return Ok((started, ingestion));
        }
        eprintln!("[{name}] its data directory holds {stored} documents: starting afresh");
        drop(server);
    }
    let mut started = start_with_index(spec, &options.index_uid)?;
    eprintln!("[{name}] ingesting {} documents", lines.len());
    let ingestion = ingest(
        &mut started.client,
        &options.index_uid,
        lines,
        options.batch,
    )?;
    Ok((started, ingestion))
}

/// Applies the comparison's settings to index `uid` again and waits for the task.
fn apply_settings(client: &mut Client, uid: &str) -> Result<(), String> {
    let response = client
        .send_json(
            "PATCH",
            &format!("/indexes/{uid}/settings"),
            &comparison_settings(),
        )
        .map_err(|error| format!("update settings: {error}"))?;
    super::setup::expect_status("update settings", &response, 202)?;
    super::setup::wait_for_tasks(client)
}

/// The server's process id as `/proc` numbers it.
fn server_pid(server: &ServerProcess) -> Result<i32, String> {
    i32::try_from(server.pid).map_err(|_| format!("process id {} out of range", server.pid))
}

/// Every query once, in order: its top hit ids, or why there are none.
fn top_hits_pass(client: &mut Client, index_uid: &str, queries: &[Query]) -> Vec<TopHits> {
    let path = format!("/indexes/{index_uid}/search");
    queries
        .iter()
        .map(|query| {
            let response = client
                .send_json("POST", &path, &query.body)
                .map_err(|error| error.to_string())?;
            if response.status != 200 {
                return Err(format!(
                    "status {}: {}",
                    response.status,
                    String::from_utf8_lossy(&response.body)
                ));
            }
            top_ids(&response.json()?, TOP_HITS_COUNT)
        })
        .collect()
}

/// The mix as a load workload: one template per query, all of weight 1.
pub fn search_workload(index_uid: &str, queries: &[Query]) -> Result<Workload, String> {
    let path = format!("/indexes/{index_uid}/search");
    let templates = queries
        .iter()
        .enumerate()
        .map(|(index, query)| {
            let mut template = RequestTemplate::new("POST", &path);
            template.name = Some(format!("{index} {}", query.kind.label()));
            template.json = Some(query.body.clone());
            template
        })
        .collect();
    Workload::new("search-mix", templates).map_err(|error| error.to_string())
}

/// How long and how a load run goes (the same for both comparisons).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSettings {
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    pub seed: u64,
}

/// One load run against `server`; its full report is written to `report_path`.
pub fn load_run(
    server: &ServerProcess,
    workload: &Workload,
    settings: &LoadSettings,
    pacing: Pacing,
    connections: usize,
    report_path: &Path,
) -> Result<LoadFigures, String> {
    let report = load_run_report(server, workload, settings, pacing, connections, report_path)?;
    Ok(LoadFigures::from_report(&report))
}

/// [`load_run`], answering the whole report (its histograms included, to pool runs).
pub fn load_run_report(
    server: &ServerProcess,
    workload: &Workload,
    settings: &LoadSettings,
    pacing: Pacing,
    connections: usize,
    report_path: &Path,
) -> Result<Report, String> {
    let target = Target::parse(&format!("http://{}", server.spec.address()))
        .map_err(|error| error.to_string())?;
    let run_options = RunOptions {
        target,
        api_key: server.spec.master_key.clone(),
        workload: workload.clone(),
        connections,
        pipeline_depth: 1,
        pacing,
        limit: Limit::Duration(settings.duration),
        warmup: settings.warmup,
        timeout: settings.timeout,
        server_pids: i32::try_from(server.pid).into_iter().collect(),
        seed: settings.seed,
    };
    let report = run(&run_options).map_err(|error| error.to_string())?;
    for line in report.to_text().lines() {
        if !line.starts_with("template") {
            eprintln!("{line}");
        }
    }
    std::fs::write(report_path, report.to_json() + "\n")
        .map_err(|error| format!("cannot write {}: {error}", report_path.display()))?;
    Ok(report)
}
