//! The shard side of an export ([`ExportDocuments`]): the shard streams the documents a
//! filter selects, in internal id order, to the target's `POST /indexes/{uid}/documents`,
//! as gzip NDJSON payloads of at most `payloadSize` uncompressed bytes ([`payload`]), each
//! document with its `_vectors` when the index has embedders (as `retrieveVectors` shows
//! them). The calls and their errors are [`remote`]'s.
//!
//! Why on the shard's core: reading, serializing and compressing the documents is the
//! export's work, and each shard does its share on its own core, in the indexing latency
//! class (searches on that core come first), yielding every [`DOCUMENTS_PER_STEP`]
//! documents. One payload is on its way while the next is built.
//!
//! Invariants: the shard reads one snapshot (the export runs as a batch, so no batch
//! changes the index meanwhile); a payload is sent only once the previous one was accepted;
//! the shard answers its number of documents only when the target accepted every payload;
//! a failing shard raises [`ExportProgress::stop`], and a shard that sees it stops sending
//! and says so ([`ShardExported::stopped`]) — the control core then fails or interrupts the
//! task, never reports it succeeded.

pub mod payload;
pub mod remote;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::Value;
use shards::filter::Filter;
use shards::shard::ShardSnapshot;

use self::payload::Payload;
use self::remote::{ExportTarget, RemoteError};
use super::protocol::ShardRequest;
use super::{ShardAddress, ShardHost, filter_ids};
use crate::errors::{Code, ResponseError, shard_error};
use crate::outgoing::Method;
use crate::runtime::Task;

/// How many documents a shard adds to its payload between two looks at the stop flag (and
/// two chances for the core's other work to run).
pub const DOCUMENTS_PER_STEP: usize = 64;

/// The media type of export payloads.
const NDJSON_MEDIA_TYPE: &str = "application/x-ndjson";

/// What the control core and the shards of one export share.
#[derive(Debug, Default)]
pub struct ExportProgress {
    /// Documents the shards selected so far (each adds its count once it evaluated the filter).
    pub matched: AtomicU64,
    /// Documents in payloads the target accepted.
    pub sent: AtomicU64,
    /// Raised by a failing shard or by a cancelation: every shard stops sending.
    pub stop: AtomicBool,
}

/// Send the documents `filter` selects (all of them without one) to the target's
/// `documents_path`.
#[derive(Debug)]
pub struct ExportDocuments {
    pub filter: Option<Filter>,
    pub target: ExportTarget,
    /// `/indexes/{uid}/documents`.
    pub documents_path: String,
    /// The most uncompressed bytes of a payload (one document may pass it alone).
    pub payload_bytes_max: u64,
    pub progress: Arc<ExportProgress>,
}

/// What a shard did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardExported {
    /// Documents the filter selected (all sent, unless `stopped`).
    pub documents: u64,
    /// Whether the shard stopped because [`ExportProgress::stop`] was raised.
    pub stopped: bool,
}

impl ShardRequest for ExportDocuments {
    type Answer = ShardExported;
    /// Background work: it runs in the indexing latency class, behind searches.
    const IS_WRITE: bool = true;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<ShardExported, ResponseError> {
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

impl ExportDocuments {
    /// Builds and sends the shard's payloads.
    async fn stream(&self, snapshot: &ShardSnapshot) -> Result<ShardExported, ResponseError> {
        let selected = match &self.filter {
            Some(filter) => filter_ids(snapshot, filter, Code::InvalidDocumentFilter)?,
            None => snapshot.document_ids().clone(),
        };
        self.progress
            .matched
            .fetch_add(selected.len(), Ordering::Relaxed);
        let with_vectors = !snapshot.vector_settings().is_empty();
        let mut sender = PayloadSender {
            export: self,
            in_flight: None,
        };
        let mut payload = Payload::new();
        let mut line = Vec::new();
        for (position, id) in selected.iter().enumerate() {
            if position % DOCUMENTS_PER_STEP == 0 {
                if self.progress.stop.load(Ordering::Relaxed) {
                    return Ok(ShardExported {
                        documents: selected.len(),
                        stopped: true,
                    });
                }
                crate::runtime::yield_if_needed().await;
            }
            line.clear();
            document_line(snapshot, id, with_vectors, &mut line)?;
            if !payload.admits(line.len(), self.payload_bytes_max) {
                sender.send(std::mem::take(&mut payload)).await?;
            }
            payload.push(&line)?;
        }
        if !payload.is_empty() {
            sender.send(payload).await?;
        }
        sender.finish().await?;
        Ok(ShardExported {
            documents: selected.len(),
            stopped: false,
        })
    }
}

/// Sends a shard's payloads one after the other, the next one built while one travels.
struct PayloadSender<'export> {
    export: &'export ExportDocuments,
    /// The payload on its way: its documents once accepted.
    in_flight: Option<Task<Result<u64, RemoteError>>>,
}

impl PayloadSender<'_> {
    /// Waits until the payload on its way was accepted, then sends `payload`.
    async fn send(&mut self, payload: Payload) -> Result<(), ResponseError> {
        self.finish().await?;
        let documents = payload.documents();
        let body = payload.finish()?;
        let request = self
            .export
            .target
            .request(Method::Post, &self.export.documents_path)
            .map_err(RemoteError::into_task_error)?
            .header("Content-Type", NDJSON_MEDIA_TYPE)
            .header("Content-Encoding", "gzip")
            .body(body);
        let target = self.export.target.clone();
        self.in_flight = Some(crate::runtime::spawn(async move {
            target.send(request).await.map(|_| documents)
        }));
        Ok(())
    }

    /// Waits until the payload on its way, if any, was accepted.
    async fn finish(&mut self) -> Result<(), ResponseError> {
        if let Some(sending) = self.in_flight.take() {
            let documents = sending.await.map_err(RemoteError::into_task_error)?;
            self.export
                .progress
                .sent
                .fetch_add(documents, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Writes document `id` as one line of JSON into `line`: the stored JSON as is, or, when the
/// index has embedders, the document with its `_vectors`.
pub fn document_line(
    snapshot: &ShardSnapshot,
    id: u32,
    with_vectors: bool,
    line: &mut Vec<u8>,
) -> Result<(), ResponseError> {
    let missing = || ResponseError::internal(format!("document {id} is selected but not stored"));
    if with_vectors {
        let mut document = snapshot
            .document_by_id(id, None)
            .map_err(shard_error)?
            .ok_or_else(missing)?;
        // As Meilisearch writes them: an embedder with fragments gives `regenerate: false`.
        snapshot
            .attach_vectors_for_transfer(id, &mut document)
            .map_err(shard_error)?;
        return serde_json::to_writer(line, &document).map_err(ResponseError::internal);
    }
    let json = snapshot
        .document_json(id)
        .map_err(shard_error)?
        .ok_or_else(missing)?;
    if json.contains(&b'\n') {
        // Stored as sent, over several lines: written again on one.
        let document: Value = serde_json::from_slice(&json).map_err(ResponseError::internal)?;
        return serde_json::to_writer(line, &document).map_err(ResponseError::internal);
    }
    line.extend_from_slice(&json);
    Ok(())
}
