//! One server under one configuration: start it on a fresh data directory, create the index
//! with the embedder, ingest the documents, measure memory and disk, wait until it is
//! quiet, ask every query once for recall, run the load runs, and stop it.
//!
//! Invariants: the server is stopped on every path out of [`run_side`] (the process guard's
//! drop); the recall passes run after indexing and before any load run, one query at a time,
//! so their answers do not depend on load; every load run of every side sends the same
//! bodies, chosen with the same seed; each load run's full report is kept as JSON in the
//! side's work directory.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::data::{SearchKind, VectorData, index_settings, search_body};
use super::truth::{ExactAnswers, mean_recall};
use crate::compare::client::Client;
use crate::compare::disk::{DiskUsage, disk_usage};
use crate::compare::server::{ServerProcess, ServerSpec};
use crate::compare::settle::{Settling, wait_until_quiet};
use crate::compare::setup::{Ingestion, create_index, get_json, ingest};
use crate::compare::side::{LoadSettings, load_run};
use crate::compare::table::LoadFigures;
use crate::load::{Pacing, RequestTemplate, Workload};
use crate::measure::peak_resident_bytes;

/// The longest wait for one setup, ingestion or recall request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The primary key of the index.
pub const PRIMARY_KEY: &str = "id";

/// How each side is driven.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorOptions {
    /// The index searched.
    pub index_uid: String,
    /// Documents per payload.
    pub batch: usize,
    /// Connections of the concurrent load runs.
    pub connections: usize,
    /// Measured time of each load run.
    pub duration: Duration,
    /// Unmeasured warm-up of each load run.
    pub warmup: Duration,
    /// The longest wait for a response during the load runs.
    pub load_timeout: Duration,
    /// Seed of the query choice.
    pub seed: u64,
    /// Keep the data directory after the run.
    pub keep_data: bool,
}

/// What one kind of search measured: recall against the exact answers (when it has them)
/// and its load run(s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchFigures {
    /// Mean recall@10; `None` when not measured or a query failed.
    pub recall: Option<f64>,
    /// Queries of the recall pass not answered 200 with hits.
    pub failures: u64,
    /// The load run on one connection, when measured.
    pub single: Option<LoadFigures>,
    /// The load run on `connections` connections.
    pub concurrent: LoadFigures,
}

/// Everything measured on one server under one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorResults {
    /// Its `GET /version` `pkgVersion`, when it answered one.
    pub version: Option<String>,
    /// The ingestion.
    pub ingestion: Ingestion,
    /// `VmHWM` right after indexing (the peak of start and indexing), in bytes.
    pub peak_rss_indexing: Option<u64>,
    /// The data directory right after the last indexing task succeeded.
    pub disk: DiskUsage,
    /// How the server went quiet after indexing.
    pub settling: Settling,
    /// The data directory once quiet.
    pub disk_settled: DiskUsage,
    /// Semantic-only search.
    pub semantic: SearchFigures,
    /// Hybrid search.
    pub hybrid: SearchFigures,
    /// Semantic search filtered to 1 % of the rows.
    pub filtered_one_percent: SearchFigures,
    /// Semantic search filtered to 10 % of the rows.
    pub filtered_ten_percent: SearchFigures,
    /// `VmHWM` at the end, in bytes.
    pub peak_rss_end: Option<u64>,
}

impl VectorResults {
    /// Documents indexed per second.
    pub fn indexing_rate(&self) -> f64 {
        let seconds = self.ingestion.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.ingestion.documents as f64 / seconds
        } else {
            0.0
        }
    }

    /// What went wrong while measuring: failed recall queries, and load-run answers that
    /// were not 2xx or errors. Empty when every request succeeded.
    pub fn problems(&self) -> Vec<String> {
        let kinds = [
            ("semantic", &self.semantic),
            ("hybrid", &self.hybrid),
            ("filtered 1 %", &self.filtered_one_percent),
            ("filtered 10 %", &self.filtered_ten_percent),
        ];
        let mut problems = Vec::new();
        for (label, figures) in kinds {
            if figures.failures > 0 {
                problems.push(format!(
                    "{label}: {} recall queries failed",
                    figures.failures
                ));
            }
            for (connections, run) in [
                ("1", figures.single.as_ref()),
                ("N", Some(&figures.concurrent)),
            ] {
                if let Some(run) = run {
                    if run.non_2xx + run.errors > 0 {
                        problems.push(format!(
                            "{label} load ({connections} connections): {} non-2xx answers, {} errors",
                            run.non_2xx, run.errors
                        ));
                    }
                }
            }
        }
        problems
    }
}

/// Runs one side; progress goes to standard error.
pub fn run_side(
    spec: &ServerSpec,
    binary_quantized: bool,
    data: &VectorData,
    lines: &[String],
    exact: &ExactAnswers,
    options: &VectorOptions,
) -> Result<VectorResults, String> {
    let name = format!("{} bq={binary_quantized}", spec.kind.name());
    eprintln!("[{name}] starting {}", spec.binary.display());
    let mut server = ServerProcess::start(spec)?;
    let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
    let version = get_json(&mut client, "/version")
        .ok()
        .and_then(|answer| answer["pkgVersion"].as_str().map(str::to_string));
    create_index(
        &mut client,
        &options.index_uid,
        PRIMARY_KEY,
        &index_settings(binary_quantized, data.dimensions),
    )?;
    eprintln!("[{name}] ingesting {} documents", lines.len());
    let ingestion = ingest(&mut client, &options.index_uid, lines, options.batch)?;
    let indexed_at = Instant::now();
    eprintln!(
        "[{name}] indexed {} documents ({} stored) in {:.2} s",
        ingestion.documents,
        ingestion.stored,
        ingestion.elapsed.as_secs_f64()
    );
    if ingestion.stored != lines.len() as u64 {
        return Err(format!(
            "{} documents sent, {} stored",
            lines.len(),
            ingestion.stored
        ));
    }
    let peak_rss_indexing = peak_resident_bytes(Some(server.pid));
    let disk = disk_usage(&spec.data_dir());
    let pid =
        i32::try_from(server.pid).map_err(|_| format!("process id {} out of range", server.pid))?;
    let settling = wait_until_quiet(pid, indexed_at)?;
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

    let mut measure = |kind: SearchKind, single: bool| -> Result<SearchFigures, String> {
        let (recall, failures) = match exact.for_kind(kind) {
            Some(truth) => {
                eprintln!("[{name}] {} recall pass", kind.label());
                let found = recall_pass(&mut client, &options.index_uid, data, kind);
                let failures = found.iter().filter(|hits| hits.is_err()).count() as u64;
                if let Some(Err(first)) = found.iter().find(|hits| hits.is_err()) {
                    eprintln!("[{name}] {failures} queries failed, the first: {first}");
                }
                let found: Vec<Option<Vec<u32>>> = found.into_iter().map(Result::ok).collect();
                let recall = mean_recall(&found, truth);
                eprintln!(
                    "[{name}] {} recall@10 {}",
                    kind.label(),
                    recall.map_or("—".to_string(), |recall| format!("{recall:.4}"))
                );
                (recall, failures)
            }
            None => (None, 0),
        };
        let workload = workload(&options.index_uid, data, kind)?;
        let file = kind.label().replace([' ', '%'], "");
        let single = if single {
            eprintln!("[{name}] {} load, 1 connection", kind.label());
            Some(load_run(
                &server,
                &workload,
                &load_settings(options),
                Pacing::ClosedLoop,
                1,
                &spec.work_dir.join(format!("{file}-1.json")),
            )?)
        } else {
            None
        };
        eprintln!(
            "[{name}] {} load, {} connections",
            kind.label(),
            options.connections
        );
        let concurrent = load_run(
            &server,
            &workload,
            &load_settings(options),
            Pacing::ClosedLoop,
            options.connections,
            &spec
                .work_dir
                .join(format!("{file}-{}.json", options.connections)),
        )?;
        Ok(SearchFigures {
            recall,
            failures,
            single,
            concurrent,
        })
    };
    let semantic = measure(SearchKind::Semantic, true)?;
    let hybrid = measure(SearchKind::Hybrid, false)?;
    let filtered_one_percent = measure(SearchKind::FilteredOnePercent, false)?;
    let filtered_ten_percent = measure(SearchKind::FilteredTenPercent, false)?;
    let peak_rss_end = peak_resident_bytes(Some(server.pid));
    server.stop();
    if !options.keep_data {
        let _ = std::fs::remove_dir_all(spec.data_dir());
    }
    Ok(VectorResults {
        version,
        ingestion,
        peak_rss_indexing,
        disk,
        settling,
        disk_settled,
        semantic,
        hybrid,
        filtered_one_percent,
        filtered_ten_percent,
        peak_rss_end,
    })
}

/// The row ids of a search answer's hits, in order.
pub fn hit_rows(answer: &Value) -> Result<Vec<u32>, String> {
    let hits = answer["hits"]
        .as_array()
        .ok_or_else(|| format!("no `hits` array: {answer}"))?;
    hits.iter()
        .map(|hit| {
            let id = &hit["id"];
            id.as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .or_else(|| id.as_str().and_then(|id| id.parse().ok()))
                .ok_or_else(|| format!("hit without a row id: {hit}"))
        })
        .collect()
}

/// Every query once, in order, for `kind`: its hit rows, or why there are none.
fn recall_pass(
    client: &mut Client,
    index_uid: &str,
    data: &VectorData,
    kind: SearchKind,
) -> Vec<Result<Vec<u32>, String>> {
    let path = format!("/indexes/{index_uid}/search");
    (0..data.query_count())
        .map(|row| {
            let response = client
                .send_json("POST", &path, &search_body(data, row, kind))
                .map_err(|error| error.to_string())?;
            if response.status != 200 {
                return Err(format!(
                    "status {}: {}",
                    response.status,
                    String::from_utf8_lossy(&response.body[..response.body.len().min(300)])
                ));
            }
            hit_rows(&response.json()?)
        })
        .collect()
}

/// The queries as a load workload for `kind`: one template per query, all of weight 1.
/// The load settings of `options` (closed loop runs only).
fn load_settings(options: &VectorOptions) -> LoadSettings {
    LoadSettings {
        duration: options.duration,
        warmup: options.warmup,
        timeout: options.load_timeout,
        seed: options.seed,
    }
}

fn workload(index_uid: &str, data: &VectorData, kind: SearchKind) -> Result<Workload, String> {
    let path = format!("/indexes/{index_uid}/search");
    let templates = (0..data.query_count())
        .map(|row| {
            let mut template = RequestTemplate::new("POST", &path);
            template.name = Some(format!("{row} {}", kind.label()));
            template.json = Some(search_body(data, row, kind));
            template
        })
        .collect();
    Workload::new(kind.label(), templates).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hit_rows_read_numeric_and_string_ids() {
        let answer = json!({"hits": [{"id": 3}, {"id": "12"}]});
        assert_eq!(hit_rows(&answer), Ok(vec![3, 12]));
        assert!(hit_rows(&json!({"hits": [{"name": "x"}]})).is_err());
        assert!(hit_rows(&json!({"message": "bad"})).is_err());
    }
}
