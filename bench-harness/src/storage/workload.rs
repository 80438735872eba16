//! The workloads, run inside one engine's child process: batched inserts (random and
//! sequential keys; 1, 100 and 10,000 per durable commit), point reads from a hot and a
//! cold file, range scans, a mixed read/write load, file size and peak memory.
//!
//! Invariant: keys and values depend only on the record number, so every engine sees the
//! same data in the same order.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

use super::engines::{self, Engine};
use super::report::Measurement;

/// Bytes of every value.
pub const VALUE_BYTES: usize = 100;
/// Records per commit in the bulk load.
pub const BULK_BATCH: u64 = 10_000;
/// Keys looked up per read transaction in the read tests.
const READS_PER_TRANSACTION: usize = 10_000;
/// Range scans per read transaction.
const SCANS_PER_TRANSACTION: usize = 1_000;

/// Sizes of a run.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Records in the bulk load.
    pub records: u64,
    /// Commits of one record each.
    pub single_commits: u64,
    /// Commits of one hundred records each.
    pub hundred_commits: u64,
    /// Random point reads on the hot file.
    pub hot_reads: u64,
    /// Random point reads on the cold file.
    pub cold_reads: u64,
    /// Range scans.
    pub scans: u64,
    /// Entries per range scan.
    pub scan_length: usize,
    /// Rounds of the mixed load (10 writes in one commit + 90 reads).
    pub mixed_rounds: u64,
}

fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// The key of record `number`, in random (hashed) or sequential order.
pub fn key(number: u64, random: bool) -> Vec<u8> {
    let mut key = Vec::with_capacity(16);
    key.extend_from_slice(&(if random { mix(number) } else { number }).to_be_bytes());
    key.extend_from_slice(&number.to_be_bytes());
    key
}

/// The value of record `number`.
pub fn value(number: u64) -> Vec<u8> {
    (0..VALUE_BYTES)
        .map(|index| (number as usize).wrapping_add(index) as u8)
        .collect()
}

fn entries(range: std::ops::Range<u64>, random: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    range
        .map(|number| (key(number, random), value(number)))
        .collect()
}

fn throughput(
    order: u32,
    label: String,
    operations: u64,
    started: Instant,
    unit: &str,
) -> Measurement {
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    Measurement {
        order,
        label,
        value: operations as f64 / seconds,
        unit: unit.into(),
        larger_is_better: true,
    }
}

fn size(order: u32, label: String, bytes: u64) -> Measurement {
    Measurement {
        order,
        label,
        value: bytes as f64 / (1 << 20) as f64,
        unit: "MiB".into(),
        larger_is_better: false,
    }
}

/// Inserts records `range` in commits of `batch`; returns the measurement.
fn insert(
    engine: &mut dyn Engine,
    range: std::ops::Range<u64>,
    batch: u64,
    random: bool,
    order: u32,
) -> Measurement {
    let count = range.end - range.start;
    let batches: Vec<Vec<(Vec<u8>, Vec<u8>)>> = (range.start..range.end)
        .step_by(batch as usize)
        .map(|start| entries(start..(start + batch).min(range.end), random))
        .collect();
    let started = Instant::now();
    for entries in &batches {
        engine.insert_batch(entries);
    }
    let order_label = if random { "random" } else { "sequential" };
    throughput(
        order,
        format!("insert {order_label}, {batch} per commit"),
        count,
        started,
        "records/s",
    )
}

fn random_keys(count: u64, records: u64, seed: u64) -> Vec<Vec<u8>> {
    (0..count)
        .map(|index| key(mix(seed ^ index) % records, true))
        .collect()
}

fn file_bytes(engine: &dyn Engine) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    engine
        .files()
        .iter()
        .fold((0, 0), |(length, blocks), path| {
            let metadata = std::fs::metadata(path).expect("engine file exists");
            (length + metadata.len(), blocks + metadata.blocks() * 512)
        })
}

/// Drops the page cache of `path` (the data is synced, so the pages are clean).
pub fn drop_page_cache(path: &Path) {
    let file = std::fs::File::open(path).expect("engine file opens");
    file.sync_all().expect("sync before dropping the cache");
    // SAFETY: posix_fadvise on a descriptor we own; it only advises the kernel.
    let outcome = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(outcome, 0, "posix_fadvise failed");
}

/// Runs every workload for engine `name` in `directory`, printing measurements.
pub fn run(name: &str, directory: &Path, sizes: &Sizes) {
    let records = sizes.records;
    let random_directory = directory.join(format!("{name}-random"));
    let mut engine = engines::open(name, &random_directory);
    insert(engine.as_mut(), 0..records, BULK_BATCH, true, 10).emit();
    let (length, blocks) = file_bytes(engine.as_ref());
    size(
        80,
        format!("file size after {records} random records"),
        length,
    )
    .emit();
    size(
        81,
        format!("disk blocks after {records} random records"),
        blocks,
    )
    .emit();
    let mut next = records;
    let hundred = sizes.hundred_commits * 100;
    insert(engine.as_mut(), next..next + hundred, 100, true, 11).emit();
    next += hundred;
    insert(
        engine.as_mut(),
        next..next + sizes.single_commits,
        1,
        true,
        12,
    )
    .emit();
    next += sizes.single_commits;

    let keys = random_keys(sizes.hot_reads, records, 1);
    let started = Instant::now();
    let mut found = 0;
    for chunk in keys.chunks(READS_PER_TRANSACTION) {
        found += engine.read_keys(chunk);
    }
    assert_eq!(
        found,
        sizes.hot_reads * VALUE_BYTES as u64,
        "every read key exists"
    );
    throughput(
        30,
        "random point reads, hot".into(),
        sizes.hot_reads,
        started,
        "reads/s",
    )
    .emit();

    let starts = random_keys(sizes.scans, records, 2);
    let started = Instant::now();
    for chunk in starts.chunks(SCANS_PER_TRANSACTION) {
        engine.scan(chunk, sizes.scan_length);
    }
    let label = format!("range scans of {} entries", sizes.scan_length);
    throughput(40, label, sizes.scans, started, "scans/s").emit();

    let started = Instant::now();
    for round in 0..sizes.mixed_rounds {
        engine.insert_batch(&entries(next..next + 10, true));
        next += 10;
        engine.read_keys(&random_keys(90, records, 100 + round));
    }
    let label = "mixed: commit of 10 writes + 90 reads".to_string();
    throughput(50, label, sizes.mixed_rounds * 100, started, "ops/s").emit();

    let files = engine.files();
    drop(engine);
    for file in &files {
        drop_page_cache(file);
    }
    let engine = engines::open(name, &random_directory);
    let keys = random_keys(sizes.cold_reads, records, 3);
    let started = Instant::now();
    for key in &keys {
        engine.read_keys(std::slice::from_ref(key));
    }
    throughput(
        31,
        "random point reads, cold file".into(),
        sizes.cold_reads,
        started,
        "reads/s",
    )
    .emit();
    drop(engine);

    let mut engine = engines::open(name, &directory.join(format!("{name}-sequential")));
    insert(engine.as_mut(), 0..records, BULK_BATCH, false, 20).emit();
    let (length, _) = file_bytes(engine.as_ref());
    size(
        82,
        format!("file size after {records} sequential records"),
        length,
    )
    .emit();
    let mut next = records;
    insert(engine.as_mut(), next..next + hundred, 100, false, 21).emit();
    next += hundred;
    insert(
        engine.as_mut(),
        next..next + sizes.single_commits,
        1,
        false,
        22,
    )
    .emit();
    drop(engine);
    size(
        90,
        "peak memory (child process)".into(),
        crate::measure::peak_resident_bytes(None).unwrap_or(0),
    )
    .emit();
}
