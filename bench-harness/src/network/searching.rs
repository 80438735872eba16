//! Searching a network through its leader: every query of the mix once (its top hits, to
//! compare with a single instance holding everything), then closed-loop load runs at given
//! connection counts, with the leader's default `useNetwork` (on, since the network has a
//! leader), so each search asks every shard once.
//!
//! The top-hits pass asks each query with `showRankingScore`, to compare the ranking keys
//! ([`super::ranking`]) besides the ids.
//!
//! Invariants: a search answered 200 whose `remoteErrors` is not empty counts as failed in
//! the top-hits pass (a network search hides a remote's failure in a 200, which the load
//! runs, reading statuses only, cannot see); the load runs send the same mix, each query
//! with equal probability, from the same seed, and measure the CPU of every instance; the
//! detailed report of each run is kept as JSON.

use std::path::Path;
use std::time::Duration;

use super::cluster::Cluster;
use super::ranking::{RankingKeys, ranking_keys};
use super::resources::{InstanceUsage, UsageMeter};
use crate::compare::agreement::{TopHits, top_ids};
use crate::compare::query_mix::{Query, TOP_HITS_COUNT};
use crate::compare::table::LoadFigures;
use crate::load::{Limit, Pacing, RequestTemplate, RunOptions, Target, Workload, run};

/// How the load runs go.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSettings {
    /// Measured time of each run.
    pub duration: Duration,
    /// Unmeasured warm-up before it.
    pub warmup: Duration,
    /// The longest wait for one response.
    pub timeout: Duration,
    /// Seed of the query choice.
    pub seed: u64,
}

/// One load run's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchLoad {
    /// Keep-alive connections.
    pub connections: usize,
    /// Throughput, latency, errors and the cores of all instances together.
    pub figures: LoadFigures,
    /// Server CPU per successful search, all instances together, in microseconds.
    pub cpu_microseconds_per_search: Option<f64>,
    /// Each instance's CPU over the run (warm-up included).
    pub usage: Vec<InstanceUsage>,
}

/// What the top-hits pass answered, query by query in mix order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassAnswers {
    /// The top hit ids, or why there are none.
    pub hits: Vec<TopHits>,
    /// The ranking keys of the same hits.
    pub keys: Vec<RankingKeys>,
}

impl PassAnswers {
    /// Queries that failed.
    pub fn failures(&self) -> u64 {
        self.hits.iter().filter(|hits| hits.is_err()).count() as u64
    }
}

/// One query through `instance`: the answer, or why there is none.
fn ask(cluster: &mut Cluster, path: &str, query: &Query) -> Result<serde_json::Value, String> {
    let leader = cluster.leader()?;
    let mut body = query.body.clone();
    body["showRankingScore"] = serde_json::Value::Bool(true);
    let response = leader
        .client
        .send_json("POST", path, &body)
        .map_err(|error| error.to_string())?;
    if response.status != 200 {
        return Err(format!(
            "status {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        ));
    }
    let answer = response.json()?;
    match answer.get("remoteErrors") {
        Some(errors) if errors.as_object().is_some_and(|errors| !errors.is_empty()) => {
            Err(format!("remoteErrors: {errors}"))
        }
        _ => Ok(answer),
    }
}

/// Every query once through the leader, in order.
pub fn top_hits_pass(cluster: &mut Cluster, uid: &str, queries: &[Query]) -> PassAnswers {
    let path = format!("/indexes/{uid}/search");
    let mut answers = PassAnswers::default();
    for query in queries {
        match ask(cluster, &path, query) {
            Ok(answer) => {
                answers.hits.push(top_ids(&answer, TOP_HITS_COUNT));
                answers.keys.push(ranking_keys(query, &answer));
            }
            Err(error) => {
                answers.hits.push(Err(error.clone()));
                answers.keys.push(Err(error));
            }
        }
    }
    answers
}

/// The mix as a load workload: one template per query, all of weight 1.
pub fn search_workload(uid: &str, queries: &[Query]) -> Result<Workload, String> {
    let path = format!("/indexes/{uid}/search");
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
    Workload::new("network-search-mix", templates).map_err(|error| error.to_string())
}

/// One closed-loop run of `workload` against the leader with `connections` connections; the
/// full report goes to `report_path`.
pub fn load_leader(
    cluster: &mut Cluster,
    workload: &Workload,
    settings: &LoadSettings,
    connections: usize,
    report_path: &Path,
) -> Result<SearchLoad, String> {
    let leader = cluster.leader()?;
    let target = Target::parse(&leader.url()).map_err(|error| error.to_string())?;
    let server_pids = cluster
        .processes()
        .iter()
        .map(|(name, pid)| i32::try_from(*pid).map_err(|_| format!("{name}: pid out of range")))
        .collect::<Result<Vec<i32>, String>>()?;
    let options = RunOptions {
        target,
        api_key: Some(cluster.spec.master_key.clone()),
        workload: workload.clone(),
        connections,
        pipeline_depth: 1,
        pacing: Pacing::ClosedLoop,
        limit: Limit::Duration(settings.duration),
        warmup: settings.warmup,
        timeout: settings.timeout,
        server_pids,
        seed: settings.seed,
    };
    let meter = UsageMeter::start(&cluster.processes())?;
    let report = run(&options).map_err(|error| error.to_string())?;
    let usage = meter.finish();
    std::fs::write(report_path, report.to_json() + "\n")
        .map_err(|error| format!("cannot write {}: {error}", report_path.display()))?;
    Ok(SearchLoad {
        connections,
        figures: LoadFigures::from_report(&report),
        cpu_microseconds_per_search: report
            .server_cpu
            .as_ref()
            .map(|cpu| cpu.cpu_microseconds_per_request),
        usage,
    })
}
