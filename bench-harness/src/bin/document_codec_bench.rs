//! `document_codec_bench`: what each stored form of a document costs, per document, through the
//! shard's own codec (`shards::shard::codec`): stored bytes, compress and decompress time.
//!
//! Reads the dataset's documents (default: all of PyPI) as the shard stores them (parsed, then
//! serialized with their key order), then prints one row per form: raw, lz4 (`codec::compress`,
//! the form without a dictionary), zstd-3 without a dictionary (for reference, a whole frame per
//! document), and zstd with a dictionary for every dictionary size × level asked for. The
//! dictionaries are trained as a shard trains its first one: from the first `--training`
//! documents, up to `--sample-bytes` of JSON, spread over them; `--spread` adds a dictionary
//! trained from a sample spread over the whole dataset (what a later, retrained dictionary
//! sees). Each dictionary also gets a row of standard zstd-3 frames (magic number, dictionary
//! id; decompressed with a checked copy, so slower than the others). Also prints the training time, and the time `serde_json` takes to parse a
//! document (the rest of a read) for scale.
//!
//! Times are single-threaded wall time over all documents divided by their count; run it on
//! one quiet core (`taskset -c 1`).

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use serde_json::{Map, Value};
use shards::shard::ShardResult;
use shards::shard::codec::{
    self, DICTIONARY_SAMPLE_BYTES, DICTIONARY_TRAINING_DOCUMENTS, DecoderCache, Dictionaries,
    DictionaryDecoder, DocumentEncoder, NoDictionaries,
};

#[derive(Debug, Parser)]
struct Options {
    /// The zstd-compressed NDJSON dataset.
    #[arg(long, default_value = "/work/shared/datasets/pypi-packages.ndjson.zst")]
    dataset: String,
    /// Documents read from the dataset.
    #[arg(long, default_value_t = usize::MAX)]
    documents: usize,
    /// Dictionary sizes, KiB.
    #[arg(long, value_delimiter = ',', default_value = "16,32,64,112")]
    sizes: Vec<usize>,
    /// zstd levels.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    levels: Vec<i32>,
    /// The first documents a dictionary is trained from.
    #[arg(long, default_value_t = DICTIONARY_TRAINING_DOCUMENTS as usize)]
    training: usize,
    /// The JSON bytes of the training sample.
    #[arg(long, default_value_t = DICTIONARY_SAMPLE_BYTES)]
    sample_bytes: usize,
    /// Also train from a sample spread over every document read.
    #[arg(long)]
    spread: bool,
}

/// The dictionary behind the shard's shared cache of prepared dictionaries, as a snapshot
/// reads it (a lock and a lookup per document; the bytes are prepared on first use).
struct Cached<'a> {
    cache: DecoderCache,
    dictionary: &'a [u8],
}

impl Dictionaries for Cached<'_> {
    fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>> {
        self.cache
            .decoder(id, || Ok((id == 0).then(|| self.dictionary.to_vec())))
    }
}

/// One form's totals.
struct Row {
    name: String,
    stored_bytes: usize,
    compress_ns: f64,
    decompress_ns: f64,
}

fn main() {
    let options = Options::parse();
    let jsons: Vec<Vec<u8>> =
        bench_harness::measure::read_lines(&options.dataset, options.documents)
            .expect("dataset reads")
            .iter()
            .map(|line| {
                let document: Map<String, Value> =
                    serde_json::from_str(line).expect("dataset lines are objects");
                codec::document_json(&document)
            })
            .collect();
    let count = jsons.len();
    let json_bytes: usize = jsons.iter().map(Vec::len).sum();
    println!(
        "{count} documents, {json_bytes} JSON bytes ({:.1} per document)",
        json_bytes as f64 / count as f64
    );
    let started = Instant::now();
    for json in &jsons {
        let document: Map<String, Value> = serde_json::from_slice(json).expect("parses");
        std::hint::black_box(document);
    }
    println!(
        "serde_json parse of a document (the rest of a read): {:.0} ns",
        per_document(started, count)
    );

    let mut rows = vec![
        measure(
            "raw",
            &jsons,
            |json| {
                let mut stored = Vec::with_capacity(1 + json.len());
                stored.push(codec::TAG_RAW);
                stored.extend_from_slice(json);
                stored
            },
            &NoDictionaries,
        ),
        measure("lz4 (or raw)", &jsons, codec::compress, &NoDictionaries),
    ];
    rows.push(plain_zstd(&jsons));

    let mut trainings: Vec<(String, Vec<&[u8]>)> = vec![(
        format!("first {}", options.training),
        spread_sample(&jsons[..options.training.min(count)], options.sample_bytes),
    )];
    if options.spread {
        trainings.push((
            "all, spread".to_owned(),
            spread_sample(&jsons, options.sample_bytes),
        ));
    }
    for (training, samples) in &trainings {
        let sample_bytes: usize = samples.iter().map(|sample| sample.len()).sum();
        for &size in &options.sizes {
            let started = Instant::now();
            let Some(dictionary) = codec::train_dictionary(samples.iter().copied(), size * 1024)
            else {
                println!("{size} KiB from {training}: training failed");
                continue;
            };
            println!(
                "{size} KiB dictionary from {training} ({} samples, {sample_bytes} bytes): trained in {:.0} ms, {} bytes",
                samples.len(),
                started.elapsed().as_secs_f64() * 1e3,
                dictionary.len()
            );
            let decoders = Cached {
                cache: DecoderCache::default(),
                dictionary: &dictionary,
            };
            for &level in &options.levels {
                let started = Instant::now();
                let mut encoder =
                    DocumentEncoder::new(0, &dictionary, level).expect("encoder made");
                let setup_us = started.elapsed().as_secs_f64() * 1e6;
                let name = format!(
                    "zstd-{level}, {size} KiB dict. ({training}; encoder {setup_us:.0} µs)"
                );
                rows.push(measure(
                    &name,
                    &jsons,
                    |json| encoder.compress(json),
                    &decoders,
                ));
            }
            rows.push(standard_frames(
                &jsons,
                &dictionary,
                &format!("{size} KiB dict. ({training})"),
            ));
        }
    }

    println!();
    println!("| form | bytes/document | ratio | compress ns/document | decompress ns/document |");
    println!("|---|---:|---:|---:|---:|");
    for row in rows {
        println!(
            "| {} | {:.1} | {:.3} | {:.0} | {:.0} |",
            row.name,
            row.stored_bytes as f64 / count as f64,
            row.stored_bytes as f64 / json_bytes as f64,
            row.compress_ns,
            row.decompress_ns
        );
    }
}

fn per_document(started: Instant, count: usize) -> f64 {
    started.elapsed().as_secs_f64() * 1e9 / count as f64
}

/// Compresses every document with `compress`, then reads every stored value back through
/// `codec::decompress` (checking it gives the JSON back).
fn measure(
    name: &str,
    jsons: &[Vec<u8>],
    mut compress: impl FnMut(&[u8]) -> Vec<u8>,
    dictionaries: &dyn Dictionaries,
) -> Row {
    let started = Instant::now();
    let stored: Vec<Vec<u8>> = jsons.iter().map(|json| compress(json)).collect();
    let compress_ns = per_document(started, jsons.len());
    let started = Instant::now();
    for value in &stored {
        std::hint::black_box(codec::decompress(value, dictionaries).expect("decompresses"));
    }
    let decompress_ns = per_document(started, jsons.len());
    for (value, json) in stored.iter().zip(jsons) {
        assert_eq!(
            &codec::decompress(value, dictionaries).expect("decompresses"),
            json
        );
    }
    Row {
        name: name.to_owned(),
        stored_bytes: stored.iter().map(Vec::len).sum(),
        compress_ns,
        decompress_ns,
    }
}

/// zstd-3 frames without a dictionary, as the zstd crate makes them by default.
fn plain_zstd(jsons: &[Vec<u8>]) -> Row {
    let (stored, compress_ns, decompress_ns) = zstd_frames(
        jsons,
        zstd::bulk::Compressor::new(3).expect("compressor"),
        zstd::bulk::Decompressor::new().expect("decompressor"),
        ReadBack::Timed,
    );
    Row {
        name: "zstd-3, no dictionary (whole frames)".to_owned(),
        stored_bytes: stored.iter().map(|value| 1 + value.len()).sum(),
        compress_ns,
        decompress_ns,
    }
}

/// zstd-3 frames with the dictionary as the zstd crate makes them by default (magic number,
/// dictionary id, content size), behind the two bytes of tag and id the shard adds: what the
/// frame options the shard turns off save.
fn standard_frames(jsons: &[Vec<u8>], dictionary: &[u8], name: &str) -> Row {
    let (stored, compress_ns, decompress_ns) = zstd_frames(
        jsons,
        zstd::bulk::Compressor::with_dictionary(3, dictionary).expect("compressor"),
        zstd::bulk::Decompressor::with_dictionary(dictionary).expect("decompressor"),
        ReadBack::Checked,
    );
    Row {
        name: format!("zstd-3, {name}, standard frames"),
        stored_bytes: stored.iter().map(|value| 2 + value.len()).sum(),
        compress_ns,
        decompress_ns,
    }
}

/// What [`zstd_frames`] does with each document it decompresses.
#[derive(Clone, Copy)]
enum ReadBack {
    /// Only keeps the result alive (nothing but the decompression is timed).
    Timed,
    /// Checks it equals the JSON sent (the check is timed with it).
    Checked,
}

/// Compresses every document into a frame of its own, then decompresses every frame: the
/// frames, and the nanoseconds per document of each direction.
fn zstd_frames(
    jsons: &[Vec<u8>],
    mut compressor: zstd::bulk::Compressor<'_>,
    mut decompressor: zstd::bulk::Decompressor<'_>,
    read_back: ReadBack,
) -> (Vec<Vec<u8>>, f64, f64) {
    let started = Instant::now();
    let stored: Vec<Vec<u8>> = jsons
        .iter()
        .map(|json| compressor.compress(json).expect("compresses"))
        .collect();
    let compress_ns = per_document(started, jsons.len());
    let started = Instant::now();
    for (value, json) in stored.iter().zip(jsons) {
        let decompressed = decompressor
            .decompress(value, json.len())
            .expect("decompresses");
        match read_back {
            ReadBack::Timed => {
                std::hint::black_box(decompressed);
            }
            ReadBack::Checked => assert_eq!(&decompressed, json),
        }
    }
    (stored, compress_ns, per_document(started, jsons.len()))
}

/// Up to `budget` bytes of `jsons`, spread over them as a shard samples (bit-reversed ranks).
fn spread_sample(jsons: &[Vec<u8>], budget: usize) -> Vec<&[u8]> {
    let count = jsons.len() as u64;
    let bits = u64::BITS - count.saturating_sub(1).leading_zeros();
    let mut sample = Vec::new();
    let mut bytes = 0;
    for index in 0..1u64 << bits {
        let rank = index
            .reverse_bits()
            .checked_shr(u64::BITS - bits)
            .unwrap_or(0);
        let Some(json) = jsons.get(rank as usize) else {
            continue;
        };
        sample.push(json.as_slice());
        bytes += json.len();
        if bytes >= budget {
            break;
        }
    }
    sample
}
