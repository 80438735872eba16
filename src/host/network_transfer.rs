//! The shard side of a network change's export: [`CountForNetworkChange`] counts the
//! documents of the shard each instance must be sent ([`crate::network::transfer_plan`]),
//! then [`SendForNetworkChange`] sends them as Meilisearch's import payloads — gzip NDJSON
//! `POST /indexes/{uid}/documents` carrying the change's origin and import headers (the
//! sender's name, the index, the documents of the payload, the sender's index count, the
//! total the sender sends of the index, a key unique to the payload).
//!
//! Why on the shard's core, in the indexing latency class: as for `/export`, reading and
//! compressing the documents is the work, and searches on the core come first; the shard
//! yields every [`DOCUMENTS_PER_STEP`] documents.
//!
//! Invariants: both requests read one snapshot each, and the change runs as a batch, so
//! the counts are those the payloads then carry; a payload's key is its number among the
//! shard's payloads to that instance times the index's shard count plus the shard's
//! position, so keys never repeat across the shards of an index, and sending again after
//! a failure sends the same payloads under the same keys (the receiver answers
//! `import_task_already_received` to a key it has, which counts as sent); the shard
//! answers only once every target accepted every payload; a raised stop flag (a
//! cancelation, another shard's failure) stops it and it says so.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use shards::shard::ShardSnapshot;

use super::export::payload::Payload;
use super::export::remote::{ExportTarget, RemoteError};
use super::export::{DOCUMENTS_PER_STEP, document_line};
use super::protocol::ShardRequest;
use super::{ShardAddress, ShardHost};
use crate::errors::{Code, ResponseError, shard_error};
use crate::network::headers::{ImportMetadata, import_headers};
use crate::network::task_network::{ImportData, Origin};
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

/// Count, per instance, the documents of this shard the change sends it.
#[derive(Debug)]
pub struct CountForNetworkChange {
    pub plan: Arc<TransferPlan>,
}

impl ShardRequest for CountForNetworkChange {
    type Answer = BTreeMap<String, u64>;
    /// Background work: it runs in the indexing latency class, behind searches.
    const IS_WRITE: bool = true;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<BTreeMap<String, u64>, ResponseError> {
        let snapshot = host.snapshot(&address)?;
        let documents = snapshot.external_ids_with_internal().map_err(shard_error)?;
        let mut counts = BTreeMap::new();
        for (position, (external_id, _)) in documents.iter().enumerate() {
            if position % DOCUMENTS_PER_STEP == 0 {
                crate::runtime::yield_if_needed().await;
            }
            for target in self.plan.targets(external_id) {
                *counts.entry(target.to_owned()).or_insert(0) += 1;
            }
        }
        Ok(counts)
    }
}

/// What every payload of one index says about its sender.
#[derive(Debug, Clone)]
pub struct ImportContext {
    /// The change: its leader, the leader's task, the new network version.
    pub origin: Origin,
    /// The sender's name (its name before the change, or its new one).
    pub export_name: String,
    pub index_uid: String,
    /// How many indexes the sender sends, the dynamic search rules left out.
    pub index_count: u64,
    /// The instances the sender sent its dynamic search rules to, as one more index.
    pub rules_sent_to: BTreeSet<String>,
    /// Per instance, how many documents of the index the sender sends it in all.
    pub totals: BTreeMap<String, u64>,
    /// The index's shard count (the keys' stride).
    pub shard_count: u32,
}

impl ImportContext {
    /// How many indexes the sender announces to `target`: its own, and the rules when
    /// `target` took them.
    pub fn index_count_for(&self, target: &str) -> u64 {
        self.index_count + u64::from(self.rules_sent_to.contains(target))
    }

    /// The headers of a payload of `documents` documents to `target`, under `key`.
    fn headers(&self, target: &str, documents: u64, key: u64) -> Vec<(String, String)> {
        let import = ImportData {
            remote_name: self.export_name.clone(),
            index_name: Some(self.index_uid.clone()),
            document_count: documents,
        };
        let metadata = ImportMetadata {
            index_count: self.index_count_for(target),
            task_key: Some(key),
            total_index_documents: self.totals.get(target).copied().unwrap_or(0),
        };
        import_headers(&self.origin, &import, &metadata)
    }
}

/// Send this shard's documents where the change gives them.
#[derive(Debug)]
pub struct SendForNetworkChange {
    pub plan: Arc<TransferPlan>,
    /// Each instance the change sends to, with its address and write key.
    pub targets: BTreeMap<String, ExportTarget>,
    pub context: Arc<ImportContext>,
    /// The most uncompressed bytes of a payload (one document may pass it alone).
    pub payload_bytes_max: u64,
    pub progress: Arc<TransferProgress>,
}

/// Whether the shard sent everything (`false`: it stopped because
/// [`TransferProgress::stop`] was raised).
pub type ShardSent = bool;

impl ShardRequest for SendForNetworkChange {
    type Answer = ShardSent;
    /// Background work: it runs in the indexing latency class, behind searches.
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<bool, ResponseError> {
        let outcome = match host.snapshot(&address) {
            Ok(snapshot) => self.stream(&snapshot, address.shard).await,
            Err(error) => Err(error),
        };
        if outcome.is_err() {
            self.progress.stop.store(true, Ordering::Relaxed);
        }
        outcome
    }
}

/// The payload being built for one target, and how many were sent before it.
#[derive(Default)]
struct TargetPayloads {
    current: Payload,
    sent: u64,
}

impl SendForNetworkChange {
    async fn stream(&self, snapshot: &ShardSnapshot, shard: u32) -> Result<bool, ResponseError> {
        let documents = snapshot.external_ids_with_internal().map_err(shard_error)?;
        let with_vectors = !snapshot.vector_settings().is_empty();
        let mut payloads: BTreeMap<&str, TargetPayloads> = BTreeMap::new();
        let mut line = Vec::new();
        for (position, (external_id, id)) in documents.iter().enumerate() {
            if position % DOCUMENTS_PER_STEP == 0 {
                if self.progress.stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                crate::runtime::yield_if_needed().await;
            }
            let targets = self.plan.targets(external_id);
            if targets.is_empty() {
                continue;
            }
            line.clear();
            document_line(snapshot, *id, with_vectors, &mut line)?;
            for target in targets {
                let payloads = payloads.entry(target).or_default();
                if !payloads.current.admits(line.len(), self.payload_bytes_max) {
                    let full = std::mem::take(&mut payloads.current);
                    self.send(target, full, key(payloads.sent, shard, &self.context))
                        .await?;
                    payloads.sent += 1;
                }
                payloads.current.push(&line)?;
            }
        }
        for (target, payloads) in payloads {
            if !payloads.current.is_empty() {
                let key = key(payloads.sent, shard, &self.context);
                self.send(target, payloads.current, key).await?;
            }
        }
        Ok(true)
    }

    /// Sends `payload` to `target_name` under `key` and waits until it is accepted.
    async fn send(
        &self,
        target_name: &str,
        payload: Payload,
        key: u64,
    ) -> Result<(), ResponseError> {
        let target = self.targets.get(target_name).ok_or_else(|| {
            ResponseError::internal(format!("remote `{target_name}` has no address"))
        })?;
        let documents = payload.documents();
        let path = format!("/indexes/{}/documents", self.context.index_uid);
        let mut request = target
            .request(Method::Post, &path)
            .map_err(RemoteError::into_task_error)?
            .header("Content-Type", NDJSON_MEDIA_TYPE)
            .header("Content-Encoding", "gzip");
        for (name, value) in self.context.headers(target_name, documents, key) {
            request = request.header(&name, &value);
        }
        send_import(target, request.body(payload.finish()?), target_name).await?;
        self.progress.sent.fetch_add(documents, Ordering::Relaxed);
        Ok(())
    }
}

/// The key of the `sent`-th payload of shard `shard` to one target.
fn key(sent: u64, shard: u32, context: &ImportContext) -> u64 {
    // Two payloads under one key: the target takes the second for a retry of the first.
    assert!(
        shard < context.shard_count.max(1),
        "shard {shard} of an index of {} shards keys its payloads apart",
        context.shard_count
    );
    sent * u64::from(context.shard_count.max(1)) + u64::from(shard)
}

/// Sends one import call to `target`: accepted, or already received (a retry).
pub async fn send_import(
    target: &ExportTarget,
    request: crate::outgoing::OutgoingRequest,
    target_name: &str,
) -> Result<(), ResponseError> {
    match target.send(request).await {
        Ok(_) => Ok(()),
        Err(error) if error.remote_code() == Some(Code::ImportTaskAlreadyReceived.name()) => Ok(()),
        Err(error) => Err(ResponseError::internal(format!(
            "sending documents to remote `{target_name}`: {error}"
        ))),
    }
}
