//! Shard indexing benchmark: applies the first documents of the PyPI dataset to one shard in
//! batches with the PyPI settings of the side-by-side run (`name` and `summary` searchable,
//! `year` and `rank` filterable and sortable), then prints documents per second, file size, stored
//! bytes (with the shard's document dictionary past its first 10 000 documents), peak RSS, and
//! the per-document compression ratio and speed of lz4 and plain zstd without a dictionary
//! (`document_codec_bench` compares every stored form, dictionaries included).
//!
//! Usage: `shard_bench [DATASET] [DOCUMENTS] [BATCH] [DIRECTORY] [WRITE_MEMORY_MIB]`, defaults:
//! `/work/shared/datasets/pypi-packages.ndjson.zst 200000 10000 <temporary directory> 32` (the
//! server's bound on a shard's write transaction; 0 for none). Batches go through the shard's
//! own chunked path (`prepare` with internal ids assigned, `apply_chunk` of 1,000 documents,
//! `commit`) as the server's do.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use shards::analysis::TextSettings;
use shards::shard::{Operation, Shard};
use storage_engine::{Options, SyncMode};

const DATASET_DEFAULT: &str = "/work/shared/datasets/pypi-packages.ndjson.zst";
const DOCUMENTS_DEFAULT: usize = 200_000;
const BATCH_DOCUMENTS_DEFAULT: usize = 10_000;
const ZSTD_LEVEL: i32 = 3;
/// The server's default bound on one shard's write transaction, in MiB: the server crate's
/// `SHARD_WRITE_MEMORY_BYTES_DEFAULT` (kept equal by hand: the harness does not link the server).
const WRITE_MEMORY_MIB_DEFAULT: u64 = 32;
/// Documents per `apply_chunk`, as the server hands them to a shard: the server crate's
/// `APPLY_CHUNK_DOCUMENTS` (kept equal by hand).
const CHUNK_DOCUMENTS: usize = 1_000;

fn argument<T: std::str::FromStr>(position: usize, default: T) -> T {
    std::env::args()
        .nth(position)
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn external_id(document: &Map<String, Value>) -> String {
    match document.get("id") {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => panic!("dataset documents have an id"),
    }
}

fn compression_report(documents: &[Map<String, Value>]) {
    let jsons: Vec<Vec<u8>> = documents
        .iter()
        .map(|document| serde_json::to_vec(document).expect("serializes"))
        .collect();
    let raw: usize = jsons.iter().map(Vec::len).sum();
    let started = Instant::now();
    let lz4: usize = jsons
        .iter()
        .map(|json| lz4_flex::compress_prepend_size(json).len())
        .sum();
    let lz4_time = started.elapsed();
    let started = Instant::now();
    let zstd: usize = jsons
        .iter()
        .map(|json| {
            zstd::bulk::compress(json, ZSTD_LEVEL)
                .expect("compresses")
                .len()
        })
        .sum();
    let zstd_time = started.elapsed();
    let rate = |time: Duration| raw as f64 / time.as_secs_f64() / 1e6;
    println!(
        "raw JSON bytes: {raw} ({} per document)",
        raw / jsons.len().max(1)
    );
    println!(
        "lz4 per document: {lz4} bytes, ratio {:.3}, {:.0} MB/s",
        lz4 as f64 / raw as f64,
        rate(lz4_time)
    );
    println!(
        "zstd-{ZSTD_LEVEL} per document: {zstd} bytes, ratio {:.3}, {:.0} MB/s",
        zstd as f64 / raw as f64,
        rate(zstd_time)
    );
}

fn main() {
    let dataset: String = argument(1, DATASET_DEFAULT.to_owned());
    let count: usize = argument(2, DOCUMENTS_DEFAULT);
    let batch: usize = argument(3, BATCH_DOCUMENTS_DEFAULT).max(1);
    let temporary = std::env::temp_dir().join(format!("shard_bench_{}", std::process::id()));
    let directory: PathBuf = argument(4, temporary);
    std::fs::create_dir_all(&directory).expect("bench directory");
    let path = directory.join("shard.pages");
    let _ = std::fs::remove_file(&path);

    let documents = bench_harness::measure::read_documents(&dataset, count);
    println!("documents read: {}", documents.len());
    let write_memory_mebibytes: u64 = argument(5, WRITE_MEMORY_MIB_DEFAULT);
    let options = Options {
        sync_mode: SyncMode::Full,
        write_memory_bytes_max: (write_memory_mebibytes > 0)
            .then_some(write_memory_mebibytes << 20),
        ..Options::default()
    };
    let shard = Shard::open(&path, options).expect("shard opens");
    let sortable = ["year".to_owned(), "rank".to_owned()];
    shard
        .set_facet_settings(&json!(["year", "rank"]), &sortable)
        .expect("facet settings apply");
    let text_settings = TextSettings {
        searchable_attributes: Some(vec!["name".to_owned(), "summary".to_owned()]),
        ..TextSettings::default()
    };
    shard
        .set_text_settings(text_settings)
        .expect("text settings apply");

    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for (index, chunk) in documents.chunks(batch).enumerate() {
        let batch_started = Instant::now();
        let mut prepared = shard.prepare(index as u64 + 1).expect("batch prepares");
        // As the server's coordinator does: every new document gets the index's next internal
        // id (the dataset's ids are distinct, so every document of a batch is new).
        let first_id =
            u32::try_from(index * batch).expect("the benchmark holds under 2^32 documents");
        prepared.assign_ids(
            chunk
                .iter()
                .zip(first_id..)
                .map(|(document, id)| (external_id(document), id)),
        );
        for documents in chunk.chunks(CHUNK_DOCUMENTS) {
            let operations = documents
                .iter()
                .map(|document| Operation::Replace {
                    external_id: external_id(document),
                    document: document.clone(),
                })
                .collect();
            prepared.apply_chunk(operations).expect("chunk applies");
        }
        prepared.commit().expect("batch commits");
        slowest = slowest.max(batch_started.elapsed());
    }
    let elapsed = started.elapsed();
    let stats = shard.stats().expect("stats read");
    println!(
        "indexed {} documents in {:.2} s: {:.0} documents/s (slowest batch {:.2} s)",
        documents.len(),
        elapsed.as_secs_f64(),
        documents.len() as f64 / elapsed.as_secs_f64(),
        slowest.as_secs_f64()
    );
    println!(
        "file: {} bytes; stored documents: {} bytes (average {}); documents: {}",
        stats.file_bytes,
        stats.raw_document_bytes,
        stats.average_document_bytes,
        stats.number_of_documents
    );
    println!(
        "peak RSS after indexing: {} MiB",
        bench_harness::measure::peak_resident_bytes(None).unwrap_or(0) / (1 << 20)
    );
    compression_report(&documents);
    drop(shard);
    let _ = std::fs::remove_file(&path);
}
