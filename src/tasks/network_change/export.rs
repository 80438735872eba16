//! The export phase of a network change, in Meilisearch Enterprise 1.41's import protocol:
//! for each index, then each instance of the new network but this one, the index is
//! created there when it is missing (`POST /indexes`, then its settings), and the shards
//! send the documents the instance must now hold ([`crate::host::network_transfer`]); an
//! instance owed no document of the index still gets one empty payload (`" "`), so it
//! counts the index as sent. An instance without any index tells each of them so
//! (`exportNoIndexForRemote`).
//!
//! The leader sends its dynamic search rules first, as one more index
//! ([`super::rules_export`]).
//!
//! Every call carries the change's origin and import headers (the sender, its index count,
//! what it sends of the index), so the receiver counts what it imported; a receiver that
//! does not answer is tried again until it does or the change is canceled: giving up
//! would leave an owner without its documents, and every payload is keyed, so a repeat is
//! never counted twice.
//!
//! Invariant: the documents of an index are counted per instance before anything of it is
//! sent, so every payload announces the same total.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;

use super::{NetworkChangeWork, Stop};
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::host::export::remote::{ExportTarget, RemoteError, export_send_options};
use crate::host::network_transfer::{
    CountForNetworkChange, ImportContext, SendForNetworkChange, TransferProgress, send_import,
};
use crate::network::control_message::{ControlMessage, NETWORK_CONTROL_PATH, NetworkControl};
use crate::network::headers::{ImportMetadata, import_headers};
use crate::network::task_network::{ImportData, Origin};
use crate::network::topology_change::TopologyChange;
use crate::network::transfer_plan::TransferPlan;
use crate::outgoing::Method;
use crate::outgoing::request::SendOptions;

/// How long to wait before sending an index again to an instance that did not take it.
pub(super) const SEND_RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// How often a cancelation is looked for while the shards send documents.
const CANCELATION_WATCH_INTERVAL: Duration = Duration::from_millis(50);
/// The body of a payload of no document (Meilisearch sends one space).
const EMPTY_PAYLOAD_BODY: &[u8] = b" ";
/// The longest pause a receiver's `Retry-After` imposes before the next attempt: its 503
/// means it has not registered the change yet, which takes milliseconds (Meilisearch's
/// exporter ignores `Retry-After` and tries again after 500 ms).
const RETRY_AFTER_CAP: Duration = Duration::from_millis(500);

/// One index's export to every target.
struct IndexExport<'work> {
    record: &'work IndexRecord,
    context: Arc<ImportContext>,
}

impl NetworkChangeWork {
    /// Sends every instance of the new network what it must now hold.
    pub(super) async fn export(
        &self,
        change: &TopologyChange,
        origin: &Origin,
    ) -> Result<(), Stop> {
        let targets: BTreeMap<String, ExportTarget> = change
            .export_targets()
            .map(|(name, remote)| {
                let options = SendOptions {
                    retry_after_cap: RETRY_AFTER_CAP,
                    ..export_send_options()
                };
                let target = ExportTarget::new(&remote.url, remote.write_api_key.as_deref())
                    .with_options(options);
                (name.to_owned(), target)
            })
            .collect();
        let Some(export_name) = change.export_name() else {
            return Ok(());
        };
        if targets.is_empty() {
            return Ok(());
        }
        let catalog = self.coordinator.catalog();
        let records: Vec<Arc<IndexRecord>> = catalog.iter().cloned().collect();
        let rules_sent_to = self
            .export_rules(
                change,
                &targets,
                (export_name, origin),
                records.len() as u64,
            )
            .await?;
        if records.is_empty() {
            let without_rules: BTreeMap<String, ExportTarget> = targets
                .into_iter()
                .filter(|(name, _)| !rules_sent_to.contains(name))
                .collect();
            return self
                .tell_no_index(&without_rules, export_name, origin)
                .await;
        }
        let plan = Arc::new(TransferPlan::new(change.old.clone(), change.new.clone()));
        for (position, record) in records.iter().enumerate() {
            let step = format!("Exporting documents from index `{}`", record.uid);
            self.progress(
                change.phase,
                Some((&step, position as u32, records.len() as u32)),
            );
            loop {
                if self.interrupted() {
                    return Err(Stop::Interrupted);
                }
                let context = ImportContext {
                    origin: origin.clone(),
                    export_name: export_name.to_owned(),
                    index_uid: record.uid.clone(),
                    index_count: records.len() as u64,
                    rules_sent_to: rules_sent_to.clone(),
                    totals: BTreeMap::new(),
                    shard_count: record.shards,
                };
                match self.export_index(&plan, record, context, &targets).await {
                    Ok(()) => break,
                    Err(Stop::Failed(error)) => {
                        tracing::warn!(index = %record.uid, error = %error.message, "a network change sends an index again");
                        crate::runtime::sleep(SEND_RETRY_INTERVAL).await;
                    }
                    Err(stop) => return Err(stop),
                }
            }
        }
        Ok(())
    }

    /// Counts, prepares and sends one index to every target.
    async fn export_index(
        &self,
        plan: &Arc<TransferPlan>,
        record: &IndexRecord,
        mut context: ImportContext,
        targets: &BTreeMap<String, ExportTarget>,
    ) -> Result<(), Stop> {
        let shard_set = record.shard_set();
        let counts = self
            .coordinator
            .ask_every_shard(&shard_set, |_| CountForNetworkChange { plan: plan.clone() })
            .await;
        for answer in counts {
            for (target, count) in answer? {
                *context.totals.entry(target).or_insert(0) += count;
            }
        }
        let export = IndexExport {
            record,
            context: Arc::new(context),
        };
        for (name, target) in targets {
            self.prepare_for_import(&export, name, target).await?;
        }
        self.send_documents(plan, &export, targets).await?;
        for (name, target) in targets {
            if export.context.totals.get(name).copied().unwrap_or(0) == 0 {
                send_empty_payload(&export, name, target).await?;
            }
        }
        Ok(())
    }

    /// Creates the index on `target` when it lacks it, with its primary key and settings.
    async fn prepare_for_import(
        &self,
        export: &IndexExport<'_>,
        name: &str,
        target: &ExportTarget,
    ) -> Result<(), ResponseError> {
        let index_path = format!("/indexes/{}", export.record.uid);
        let lookup = target
            .request(Method::Get, &index_path)
            .map_err(RemoteError::into_task_error)?;
        match target.send(lookup).await {
            Ok(_) => return Ok(()),
            Err(error) if error.remote_code() == Some(Code::IndexNotFound.name()) => {}
            Err(error) => return Err(error.into_task_error()),
        }
        let headers = import_call_headers(export, name, 0, None);
        let creation = json!({"uid": export.record.uid, "primaryKey": export.record.primary_key});
        let mut request = target
            .request(Method::Post, "/indexes")
            .map_err(RemoteError::into_task_error)?;
        for (header, value) in &headers {
            request = request.header(header, value);
        }
        send_import(
            target,
            request.json(creation.to_string().into_bytes()),
            name,
        )
        .await?;
        let features = self.control_plane.features();
        let settings = export
            .record
            .settings
            .export_view(features.chat_completions, features.foreign_keys);
        let mut request = target
            .request(Method::Patch, &format!("{index_path}/settings"))
            .map_err(RemoteError::into_task_error)?;
        for (header, value) in &headers {
            request = request.header(header, value);
        }
        send_import(
            target,
            request.json(settings.to_string().into_bytes()),
            name,
        )
        .await
    }

    /// Has every shard of the index send its documents (stopping them on a cancelation).
    async fn send_documents(
        &self,
        plan: &Arc<TransferPlan>,
        export: &IndexExport<'_>,
        targets: &BTreeMap<String, ExportTarget>,
    ) -> Result<(), Stop> {
        let progress = Arc::new(TransferProgress::default());
        let done = Cell::new(false);
        let shards = async {
            let answers = self
                .coordinator
                .ask_every_shard(&export.record.shard_set(), |_| SendForNetworkChange {
                    plan: plan.clone(),
                    targets: targets.clone(),
                    context: export.context.clone(),
                    payload_bytes_max: self.payload_bytes_max,
                    progress: progress.clone(),
                })
                .await;
            done.set(true);
            answers
        };
        let watch = async {
            while !done.get() {
                crate::runtime::sleep(CANCELATION_WATCH_INTERVAL).await;
                if self.interrupted() {
                    progress.stop.store(true, Ordering::Relaxed);
                }
            }
        };
        let (answers, ()) = futures_lite::future::zip(shards, watch).await;
        let mut complete = true;
        for answer in answers {
            complete &= answer?;
        }
        if !complete && self.interrupted() {
            return Err(Stop::Interrupted);
        }
        if !complete {
            return Err(ResponseError::internal("a shard stopped sending").into());
        }
        Ok(())
    }

    /// Tells every target that this instance has no index to send.
    async fn tell_no_index(
        &self,
        targets: &BTreeMap<String, ExportTarget>,
        export_name: &str,
        origin: &Origin,
    ) -> Result<(), Stop> {
        let body = NetworkControl {
            origin: origin.clone(),
            message: ControlMessage::ExportNoIndexForRemote {
                remote: export_name.to_owned(),
            },
        };
        let body = serde_json::to_vec(&body).map_err(ResponseError::internal)?;
        for (name, target) in targets {
            loop {
                if self.interrupted() {
                    return Err(Stop::Interrupted);
                }
                let request = target
                    .request(Method::Post, NETWORK_CONTROL_PATH)
                    .map_err(RemoteError::into_task_error)?
                    .json(body.clone());
                match target.send(request).await {
                    Ok(_) => break,
                    Err(error) => {
                        tracing::warn!(remote = %name, %error, "a network change tells a remote again that it has no index");
                        crate::runtime::sleep(SEND_RETRY_INTERVAL).await;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The import headers of a call about the index to `target` carrying `documents`.
fn import_call_headers(
    export: &IndexExport<'_>,
    target: &str,
    documents: u64,
    key: Option<u64>,
) -> Vec<(String, String)> {
    let context = &export.context;
    let import = ImportData {
        remote_name: context.export_name.clone(),
        index_name: Some(context.index_uid.clone()),
        document_count: documents,
    };
    let metadata = ImportMetadata {
        index_count: context.index_count_for(target),
        task_key: key,
        total_index_documents: context.totals.get(target).copied().unwrap_or(0),
    };
    import_headers(&context.origin, &import, &metadata)
}

/// Sends `target` the payload of no document that says the index is all sent.
async fn send_empty_payload(
    export: &IndexExport<'_>,
    name: &str,
    target: &ExportTarget,
) -> Result<(), ResponseError> {
    let body = gzip(EMPTY_PAYLOAD_BODY)?;
    let path = format!("/indexes/{}/documents", export.record.uid);
    let mut request = target
        .request(Method::Post, &path)
        .map_err(RemoteError::into_task_error)?
        .header("Content-Type", "application/x-ndjson")
        .header("Content-Encoding", "gzip");
    for (header, value) in import_call_headers(export, name, 0, None) {
        request = request.header(&header, &value);
    }
    send_import(target, request.body(body), name).await
}

/// `bytes`, gzip-compressed.
fn gzip(bytes: &[u8]) -> Result<Vec<u8>, ResponseError> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(bytes)
        .and_then(|()| encoder.finish())
        .map_err(|error| ResponseError::internal(format!("could not compress a payload: {error}")))
}
