//! What one core tells a scrape about itself — the figures only a thread-per-core server has:
//! the requests it answered, its open connections, its search queue, its write queue, its
//! mesh round trips, its major page faults, and the files of the shards it owns — and its
//! chat completions' searches and tokens, and its rate limiter's refusals and buckets.
//!
//! A scrape sends every core a [`TakeCoreFigures`] through the core mesh; each core copies
//! its own counters (its thread-locals and its coordinator's cells: no atomics, no lock),
//! and measures its shards' files on its helper thread, so the scrape blocks no core.
//!
//! Invariant: [`install`] runs once on every core before it serves, so a scrape always finds
//! the core's search queue.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::http_recorder::{self, HttpFigures};
use crate::coordinator::{Coordinator, CoreRequest};
use crate::histogram::Histogram;
use crate::host::ShardAddress;
use crate::search::queue::SearchQueue;

thread_local! {
    /// This core's search queue, once installed.
    static SEARCH_QUEUE: OnceCell<Rc<SearchQueue>> = const { OnceCell::new() };
}

/// Makes `search_queue` the one this core's figures report.
pub fn install(search_queue: Rc<SearchQueue>) {
    SEARCH_QUEUE.with(|cell| {
        // A second install on the same core keeps the first queue: only tests start twice.
        let _ = cell.set(search_queue);
    });
}

/// The files of one shard a core owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardFiles {
    pub index: String,
    pub shard: u32,
    /// Disk bytes of the shard's page store (its released free pages are holes).
    pub page_store_bytes: u64,
    /// Disk bytes of the shard's vector files, every embedder's.
    pub vector_file_bytes: u64,
}

/// A copy of one core's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreFigures {
    pub core: usize,
    pub http: HttpFigures,
    /// `--experimental-search-queue-size`, as configured.
    pub search_queue_size: u64,
    pub searches_running: u64,
    pub searches_waiting: u64,
    /// Write requests for the core's shards received and not answered yet.
    pub writes_in_flight: u64,
    pub mesh_round_trips: Histogram,
    pub major_page_faults: u64,
    /// CPU seconds, user and system, the core's executor thread used since it started.
    pub cpu_seconds: f64,
    /// Client connections placed on the core and still open.
    pub open_connections: u64,
    /// Searches of one index with `personalize` this core received.
    pub personalized_searches: u64,
    pub shards: Vec<ShardFiles>,
    /// The chat completions' searches and tokens.
    pub chat: crate::chats::figures::ChatFigures,
    /// The requests its rate limiter refused and the buckets it holds.
    pub rate_limits: super::rate_limits::RateLimitFigures,
}

/// Asks a core for its [`CoreFigures`].
pub struct TakeCoreFigures;

impl CoreRequest<Coordinator> for TakeCoreFigures {
    type Answer = CoreFigures;

    async fn run(self, coordinator: &Coordinator) -> CoreFigures {
        let (search_queue_size, searches_running, searches_waiting) = SEARCH_QUEUE.with(|cell| {
            cell.get().map_or((0, 0, 0), |queue| {
                (
                    queue.configured_size() as u64,
                    queue.running() as u64,
                    queue.waiting() as u64,
                )
            })
        });
        let figures = CoreFigures {
            core: coordinator.core(),
            http: http_recorder::snapshot(),
            search_queue_size,
            searches_running,
            searches_waiting,
            writes_in_flight: coordinator.writes_in_flight(),
            mesh_round_trips: crate::runtime::mesh_latency::round_trips(),
            major_page_faults: crate::runtime::thread_usage::major_page_faults(),
            cpu_seconds: crate::runtime::thread_usage::cpu_seconds(),
            open_connections: crate::runtime::connection_balance::open_connections_here(),
            personalized_searches: super::personalized_searches::count(),
            shards: Vec::new(),
            chat: crate::chats::figures::snapshot(),
            rate_limits: super::rate_limits::snapshot(),
        };
        let owned = owned_shards(coordinator);
        let shards = crate::runtime::blocking::run(move || measure(&owned)).await;
        CoreFigures { shards, ..figures }
    }
}

/// A shard this core owns: its index and where its file is.
struct OwnedShard {
    index: String,
    shard: u32,
    path: PathBuf,
}

/// Every shard of every index that this core owns, in catalog order.
fn owned_shards(coordinator: &Coordinator) -> Vec<OwnedShard> {
    let mut owned = Vec::new();
    for record in coordinator.catalog().iter() {
        for shard in (0..record.shards).filter(|shard| coordinator.owns_shard(*shard)) {
            let address = ShardAddress {
                storage: record.storage.clone(),
                shard,
            };
            owned.push(OwnedShard {
                index: record.uid.clone(),
                shard,
                path: address.path(coordinator.data_directory()),
            });
        }
    }
    owned
}

/// The disk bytes of each shard's page store and vector files (0 for a file not created yet).
fn measure(owned: &[OwnedShard]) -> Vec<ShardFiles> {
    owned
        .iter()
        .map(|shard| ShardFiles {
            index: shard.index.clone(),
            shard: shard.shard,
            page_store_bytes: disk_bytes(&shard.path),
            vector_file_bytes: directory_disk_bytes(&shards::vectors::graphs::vector_directory(
                &shard.path,
            )),
        })
        .collect()
}

/// The bytes of disk blocks the file at `path` holds (what `du` counts), 0 when absent.
fn disk_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    /// Bytes per unit of `st_blocks`, fixed by POSIX.
    const STAT_BLOCK_BYTES: u64 = 512;
    std::fs::metadata(path).map_or(0, |metadata| metadata.blocks() * STAT_BLOCK_BYTES)
}

/// The disk bytes of the files directly in `directory`, 0 when it is absent.
fn directory_disk_bytes(directory: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| disk_bytes(&entry.path()))
        .sum()
}
