//! One-shard full-text search benchmark: indexes the first documents of the PyPI dataset
//! (searchable `name` then `summary`, words positions and all) in batches, then runs a fixed
//! list of queries a number of rounds and prints indexing throughput, file size and, per query,
//! the hit total and median / worst latency.
//!
//! Usage: `search_bench [DATASET] [DOCUMENTS] [BATCH] [ROUNDS]`, defaults:
//! `/work/shared/datasets/pypi-packages.ndjson.zst 50000 10000 5`.

use std::time::{Duration, Instant};

use serde_json::Value;
use shards::analysis::TextSettings;
use shards::search::SearchQuery;
use shards::shard::{Operation, Shard};
use storage_engine::{Options, SyncMode};

const DATASET_DEFAULT: &str = "/work/shared/datasets/pypi-packages.ndjson.zst";
const DOCUMENTS_DEFAULT: usize = 50_000;
const BATCH_DOCUMENTS_DEFAULT: usize = 10_000;
const ROUNDS_DEFAULT: usize = 5;
const HITS_LIMIT: usize = 20;
const QUERIES: [&str; 8] = [
    "python",
    "django rest",
    "machine learning library",
    "pyhton",
    "async http cli",
    "\"command line\" tool",
    "data",
    "openai api client for",
];

fn argument<T: std::str::FromStr>(position: usize, default: T) -> T {
    std::env::args()
        .nth(position)
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let dataset: String = argument(1, DATASET_DEFAULT.to_owned());
    let count: usize = argument(2, DOCUMENTS_DEFAULT);
    let batch: usize = argument(3, BATCH_DOCUMENTS_DEFAULT).max(1);
    let rounds: usize = argument(4, ROUNDS_DEFAULT).max(1);
    let directory = std::env::temp_dir().join(format!("search_bench_{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("bench directory");
    let options = Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    };
    let shard = Shard::open(&directory.join("shard.pages"), options).expect("shard opens");
    let settings = TextSettings {
        searchable_attributes: Some(vec!["name".to_owned(), "summary".to_owned()]),
        ..TextSettings::default()
    };
    shard.set_text_settings(settings).expect("settings apply");
    let documents = bench_harness::measure::read_documents(&dataset, count);
    let started = Instant::now();
    for (index, chunk) in documents.chunks(batch).enumerate() {
        let operations = chunk
            .iter()
            .map(|document| Operation::Replace {
                external_id: document.get("id").map(Value::to_string).unwrap_or_default(),
                document: document.clone(),
            })
            .collect();
        shard
            .apply(index as u64 + 1, operations)
            .expect("batch applies");
    }
    let elapsed = started.elapsed();
    println!(
        "indexed {} documents in {:.2} s: {:.0} documents/s, file {} bytes",
        documents.len(),
        elapsed.as_secs_f64(),
        documents.len() as f64 / elapsed.as_secs_f64(),
        shard.stats().expect("stats").file_bytes
    );
    let snapshot = shard.read().expect("snapshot");
    for q in QUERIES {
        let query = SearchQuery {
            q: Some(q.to_owned()),
            limit: HITS_LIMIT,
            ..SearchQuery::default()
        };
        let mut latencies: Vec<Duration> = Vec::with_capacity(rounds);
        let mut total = 0;
        for _ in 0..rounds {
            let started = Instant::now();
            total = snapshot.search(&query).expect("search runs").total;
            latencies.push(started.elapsed());
        }
        latencies.sort();
        println!(
            "{q:>28}: {total:>6} hits, median {:>8.2} ms, worst {:>8.2} ms",
            latencies[latencies.len() / 2].as_secs_f64() * 1000.0,
            latencies[latencies.len() - 1].as_secs_f64() * 1000.0
        );
    }
    drop(snapshot);
    drop(shard);
    let _ = std::fs::remove_dir_all(&directory);
}
