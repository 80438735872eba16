//! The shard side of a network change ([`SendForNetworkChange`]): the shard sends each of
//! its documents to the instances the change gives it to
//! ([`crate::network::transfer_plan`]), as gzip NDJSON payloads of the instance's
//! `POST /indexes/{uid}/documents` carrying the change's origin headers, and names the
//! documents it no longer keeps.
//!
//! Why on the shard's core, in the indexing latency class: as for `/export`, reading and
//! compressing the documents is the work, and searches on the core come first; the shard
//! yields every [`DOCUMENTS_PER_STEP`] documents.
//!
//! Invariants: the shard reads one snapshot (the change runs as a batch); a payload is
//! complete before it is sent, and the shard answers only once every target accepted (202:
//! registered, durable there) every payload — so a document is never given up before its
//! new owners hold it; a raised stop flag (a cancelation, another shard's failure) stops it
//! and it says so.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use shards::shard::ShardSnapshot;

use super::export::payload::Payload;
use super::export::remote::{ExportTarget, RemoteError};
use super::export::{DOCUMENTS_PER_STEP, document_line};
use super::protocol::ShardRequest;
use super::{ShardAddress, ShardHost};
use crate::errors::{ResponseError, shard_error};
use crate::network::transfer_plan::TransferPlan;
use crate::outgoing::Method;

/// The media type of the payloads.
const NDJSON_MEDIA_TYPE: &str = "application/x-ndjson";

/// What the control core and the shards of one change share.
#[derive(Debug, Default)]
pub struct TransferProgress {
    /// Documents in payloads their targets accepted.
    pub sent: AtomicU64,
    /// Raised by a failing shard or by a cancelation: every shard stops sending.
    pub stop: AtomicBool,
}

/// Send this shard's documents where the change gives them.
#[derive(Debug)]
pub struct SendForNetworkChange {
    pub plan: Arc<TransferPlan>,
    /// Each remote of the new network (but this instance), with the change's headers.
    pub targets: BTreeMap<String, ExportTarget>,
    /// `/indexes/{uid}/documents`.
    pub documents_path: String,
    /// The most uncompressed bytes of a payload (one document may pass it alone).
    pub payload_bytes_max: u64,
    pub progress: Arc<TransferProgress>,
}

/// What a shard did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardTransferred {
    /// The external ids of the documents this instance no longer keeps.
    pub dropped: Vec<String>,
    /// Whether the shard stopped because [`TransferProgress::stop`] was raised.
    pub stopped: bool,
}

impl ShardRequest for SendForNetworkChange {
    type Answer = ShardTransferred;
    /// Background work: it runs in the indexing latency class, behind searches.
    const IS_WRITE: bool = true;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<ShardTransferred, ResponseError> {
        let outcome = match host.snapshot(&address) {
            Ok(snapshot) => self.stream(&snapshot).await,
            Err(error) => Err(error),
        };
        if outcome.is_err() {
            self.progress.stop.store(true, Ordering::Relaxed);
        }
        outcome
    }
}

impl SendForNetworkChange {
    async fn stream(&self, snapshot: &ShardSnapshot) -> Result<ShardTransferred, ResponseError> {
        let documents = snapshot.external_ids_with_internal().map_err(shard_error)?;
        let with_vectors = !snapshot.vector_settings().is_empty();
        let mut payloads: BTreeMap<&str, Payload> = BTreeMap::new();
        let mut dropped = Vec::new();
        let mut line = Vec::new();
        for (position, (external_id, id)) in documents.iter().enumerate() {
            if position % DOCUMENTS_PER_STEP == 0 {
                if self.progress.stop.load(Ordering::Relaxed) {
                    return Ok(ShardTransferred {
                        dropped,
                        stopped: true,
                    });
                }
                crate::runtime::yield_if_needed().await;
            }
            if !self.plan.keeps(external_id) {
                dropped.push(external_id.clone());
            }
            let targets = self.plan.targets(external_id);
            if targets.is_empty() {
                continue;
            }
            line.clear();
            document_line(snapshot, *id, with_vectors, &mut line)?;
            for target in targets {
                let payload = payloads.entry(target).or_default();
                if !payload.admits(line.len(), self.payload_bytes_max) {
                    let full = std::mem::take(payload);
                    self.send(target, full).await?;
                }
                payloads.entry(target).or_default().push(&line)?;
            }
        }
        for (target, payload) in payloads {
            if !payload.is_empty() {
                self.send(target, payload).await?;
            }
        }
        Ok(ShardTransferred {
            dropped,
            stopped: false,
        })
    }

    /// Sends `payload` to `target_name` and waits until it is accepted.
    async fn send(&self, target_name: &str, payload: Payload) -> Result<(), ResponseError> {
        let target = self.targets.get(target_name).ok_or_else(|| {
            ResponseError::internal(format!("remote `{target_name}` has no address"))
        })?;
        let documents = payload.documents();
        let request = target
            .request(Method::Post, &self.documents_path)
            .map_err(RemoteError::into_task_error)?
            .header("Content-Type", NDJSON_MEDIA_TYPE)
            .header("Content-Encoding", "gzip")
            .body(payload.finish()?);
        target
            .send(request)
            .await
            .map_err(|error| remote_failed(target_name, error))?;
        self.progress.sent.fetch_add(documents, Ordering::Relaxed);
        Ok(())
    }
}

fn remote_failed(name: &str, error: RemoteError) -> ResponseError {
    ResponseError::internal(format!("sending documents to remote `{name}`: {error}"))
}
