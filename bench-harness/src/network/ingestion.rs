//! Filling a network through its leader: the index is created and set up on the leader (which
//! forwards both to every remote), the dataset is sent to the leader as NDJSON payloads one
//! after the other (the leader forwards each to every remote, each of which keeps only its
//! shard's documents), and the run ends when every instance has finished every task.
//!
//! Invariants: the time runs from just before the first payload to the first moment no
//! instance has a task enqueued or processing (within one task poll per instance); the CPU
//! time and peak memory of each instance cover exactly that window; the documents held by
//! the instances must add up to the documents sent (one shard per instance, no replica), or
//! the ingestion fails.

use std::path::Path;
use std::time::{Duration, Instant};

use super::cluster::Cluster;
use super::resources::{InstanceUsage, UsageMeter};
use crate::compare::disk::{DiskUsage, disk_usage};
use crate::compare::setup::{comparison_settings, create_index, send_documents};

/// The primary key of the benchmark's index.
pub const PRIMARY_KEY: &str = "id";

/// What filling the network took.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkIngestion {
    /// Documents sent to the leader.
    pub documents: usize,
    /// Payloads sent.
    pub payloads: usize,
    /// From the first payload to every instance idle.
    pub elapsed: Duration,
    /// Each instance's CPU time and peak memory over that window.
    pub usage: Vec<InstanceUsage>,
    /// The documents each instance holds afterwards.
    pub held: Vec<u64>,
    /// Each instance's data directory afterwards.
    pub disk: Vec<DiskUsage>,
}

impl NetworkIngestion {
    /// Documents per second over the whole window.
    pub fn documents_per_second(&self) -> f64 {
        self.documents as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// Creates index `uid` through the leader and waits until every instance has it.
pub fn create_network_index(cluster: &mut Cluster, uid: &str) -> Result<(), String> {
    let leader = cluster.leader()?;
    create_index(&mut leader.client, uid, PRIMARY_KEY, &comparison_settings())?;
    cluster.wait_idle()
}

/// Sends `lines` to index `uid` through the leader in payloads of `batch` documents and
/// measures the whole network until it is idle.
pub fn ingest_through_leader(
    cluster: &mut Cluster,
    uid: &str,
    lines: &[String],
    batch: usize,
) -> Result<NetworkIngestion, String> {
    let meter = UsageMeter::start(&cluster.processes())?;
    let started = Instant::now();
    let payloads = send_documents(&mut cluster.leader()?.client, uid, lines, batch)?;
    cluster.wait_idle()?;
    let elapsed = started.elapsed();
    let usage = meter.finish();
    let held = cluster.document_counts(uid)?;
    let total: u64 = held.iter().sum();
    if total != lines.len() as u64 {
        return Err(format!(
            "the instances hold {total} documents ({held:?}), {} were sent",
            lines.len()
        ));
    }
    let disk = cluster
        .instances
        .iter()
        .map(|instance| disk_usage(Path::new(&instance.process.spec.data_dir())))
        .collect();
    Ok(NetworkIngestion {
        documents: lines.len(),
        payloads,
        elapsed,
        usage,
        held,
        disk,
    })
}
