//! Sending a planned batch's documents to the shards, in two parts.
//!
//! First, every id whose planned document is one whole document of a JSON or NDJSON update
//! file (most ids of most batches) goes to its shard as its span ([`ReadDocument`]): the
//! shard's core reads the text itself. Each shard gets its list in the order the batch first
//! met the ids (the order internal ids were assigned in), [`SHARD_SEND_DOCUMENTS`] at a time,
//! with one chunk in flight per shard and no shard waiting on another.
//!
//! Then the rest (ids written by several documents, CSV records, deletions): the batch's
//! update files are read again, one document's text at a time (not parsed: the shard builds
//! it), each planned document is made (its documents merged in order) as soon as its last
//! document has been read, then queued for its shard; a shard's queue goes out as one
//! [`Apply`] every [`SHARD_SEND_DOCUMENTS`] documents, with at most one chunk in
//! flight per shard, so reading and applying overlap.
//!
//! Invariants: memory holds the plan (ids and positions), the span lists, the chunks in flight
//! and the documents of ids still waiting for a later document of theirs — never a whole
//! payload; every id of the plan is sent exactly once; an error stops the sending (the caller
//! aborts the shards), and no chunk is in flight when sending returns.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use shards::documents::operation::{DocumentRef, DocumentRefs, Outcome, PlanMap, PlannedDocument};
use shards::documents::payload::{DocumentSpan, documents_from};
use shards::documents::payload_document::PayloadDocument;
use shards::documents::simd_document::SimdParser;

use super::update_files::UpdateFiles;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::{IndexRecord, ShardSet};
use crate::errors::ResponseError;
use crate::errors::{document_value_error, documents_error};
use crate::host::batch::{APPLY_CHUNK_DOCUMENTS, Apply, ApplyRead};
use crate::host::read_documents::ReadDocument;
use crate::runtime::Detached;

/// Planned documents per [`Apply`] and [`ApplyRead`].
pub const SHARD_SEND_DOCUMENTS: usize = 1_000;

/// The plan of a batch's documents, by position.
pub type RefPlan = PlanMap<DocumentRefs>;

/// One update file of a batch, with the ids its documents have, in payload order, and where
/// each lies (read when the batch was planned, so that sending needs only each document's
/// text).
pub struct PlannedPayload {
    pub content_file: String,
    pub ids: Vec<String>,
    /// `None` for a CSV file (its records are not JSON objects a shard could read).
    pub spans: Option<Vec<DocumentSpan>>,
}

/// Sends every planned document of `plan` to its shard: the ones shards read themselves
/// first, by `order` (every id the batch writes, in the order it first met them, with its
/// owning shard at the same position of `owners`), then the rest, reading the batch's
/// `payloads` (in batch order) again.
pub async fn send_documents(
    coordinator: &Rc<Coordinator>,
    update_files: &UpdateFiles,
    record: &IndexRecord,
    payloads: Vec<PlannedPayload>,
    mut plan: RefPlan,
    order: Vec<String>,
    owners: Vec<Option<u32>>,
) -> Result<(), ResponseError> {
    let files: Arc<[PathBuf]> = payloads
        .iter()
        .map(|payload| update_files.path(&payload.content_file))
        .collect();
    let reads = shard_reads(record.shards, &payloads, &mut plan, order, owners).await;
    send_reads(coordinator, &record.shard_set(), &files, reads).await?;
    if plan.is_empty() {
        return Ok(());
    }
    let mut outbox = Outbox::new(coordinator.clone(), record);
    let outcome = fill(update_files, payloads, plan, &mut outbox).await;
    let finished = outbox.finish(outcome.is_ok()).await;
    outcome.and(finished)
}

/// Takes out of `plan` every id, in `order`, whose planned document is one whole document of
/// a payload with spans; answers them by shard (`owners` holds each id's shard, out of
/// `shards`).
async fn shard_reads(
    shards: u32,
    payloads: &[PlannedPayload],
    plan: &mut RefPlan,
    order: Vec<String>,
    owners: Vec<Option<u32>>,
) -> Vec<Vec<ReadDocument>> {
    let shards = shards as usize;
    let mut reads: Vec<Vec<ReadDocument>> = (0..shards)
        .map(|_| Vec::with_capacity(order.len() / shards.max(1)))
        .collect();
    for (position, (id, owner)) in order.into_iter().zip(owners).enumerate() {
        if position % APPLY_CHUNK_DOCUMENTS == 0 {
            crate::runtime::yield_if_needed().await;
        }
        // No shard: the general path reports it.
        let Some(shard) = owner
            .map(|shard| shard as usize)
            .filter(|&shard| shard < shards)
        else {
            continue;
        };
        let Some((index, (payload, span, onto_stored))) =
            plan.get_full(&id).and_then(|(index, _, planned)| {
                one_whole_document(planned, payloads).map(|read| (index, read))
            })
        else {
            continue;
        };
        // Nothing depends on the order of what stays planned.
        plan.swap_remove_index(index);
        reads[shard].push(ReadDocument {
            external_id: id,
            payload,
            span,
            onto_stored,
        });
    }
    reads
}

/// Where the one document `planned` writes lies, with whether it is merged onto the stored
/// one: `None` unless `planned` writes exactly one document of a payload with spans, whatever
/// is stored.
fn one_whole_document(
    planned: &PlannedDocument<DocumentRefs>,
    payloads: &[PlannedPayload],
) -> Option<(u32, DocumentSpan, bool)> {
    let PlannedDocument::Unconditional(Outcome::Written {
        onto_stored,
        document: references,
    }) = planned
    else {
        return None;
    };
    let [only] = references.0.as_slice() else {
        return None;
    };
    let spans = payloads.get(only.payload as usize)?.spans.as_ref()?;
    let span = *spans.get(only.position as usize)?;
    Some((only.payload, span, *onto_stored))
}

/// Sends each shard its list, [`SHARD_SEND_DOCUMENTS`] at a time, one chunk in flight per
/// shard, the shards side by side; after a failure no shard gets another chunk. Returns once
/// every chunk sent is answered: the first error, if any.
async fn send_reads(
    coordinator: &Rc<Coordinator>,
    set: &ShardSet,
    files: &Arc<[PathBuf]>,
    reads: Vec<Vec<ReadDocument>>,
) -> Result<(), ResponseError> {
    let failed = Rc::new(Cell::new(false));
    let mut running = Vec::with_capacity(reads.len());
    for (shard, documents) in reads.into_iter().enumerate() {
        if documents.is_empty() {
            continue;
        }
        let (coordinator, set, files, failed) = (
            coordinator.clone(),
            set.clone(),
            files.clone(),
            failed.clone(),
        );
        running.push(crate::runtime::spawn(async move {
            let mut documents = documents.into_iter();
            while !failed.get() {
                let chunk: Vec<ReadDocument> =
                    documents.by_ref().take(SHARD_SEND_DOCUMENTS).collect();
                if chunk.is_empty() {
                    break;
                }
                let command = ApplyRead {
                    files: files.clone(),
                    documents: chunk,
                };
                if let Err(error) = coordinator.ask_shard(&set, shard as u32, command).await {
                    failed.set(true);
                    return Err(error);
                }
            }
            Ok(())
        }));
    }
    let mut outcome = Ok(());
    for task in running {
        if let Err(error) = task.await {
            outcome = outcome.and(Err(error));
        }
    }
    outcome
}

/// Builds every planned document and queues it in `outbox`.
async fn fill(
    update_files: &UpdateFiles,
    payloads: Vec<PlannedPayload>,
    mut plan: RefPlan,
    outbox: &mut Outbox,
) -> Result<(), ResponseError> {
    let without_documents: Vec<String> = plan
        .iter()
        .filter(|(_, planned)| !reads_documents(planned))
        .map(|(id, _)| id.clone())
        .collect();
    for id in without_documents {
        if let Some(planned) = plan.swap_remove(&id) {
            let built = build(planned, &mut BTreeMap::new())?;
            outbox.push(id, built).await?;
        }
    }
    let mut waiting: HashMap<String, BTreeMap<DocumentRef, PayloadDocument>> = HashMap::new();
    for (payload, planned_payload) in payloads.into_iter().enumerate() {
        if plan.is_empty() {
            break;
        }
        let content_file = &planned_payload.content_file;
        let format = super::update_files::format_of(content_file).ok_or_else(|| {
            ResponseError::internal(format!("unknown update file format: {content_file}"))
        })?;
        let path = update_files.path(content_file);
        let file = std::fs::File::open(&path).map_err(|error| crate::errors::io_error(&error))?;
        let mut documents = documents_from(file, format).map_err(documents_error)?;
        for (position, id) in planned_payload.ids.into_iter().enumerate() {
            let document = documents
                .next_unparsed()
                .ok_or_else(|| {
                    ResponseError::internal(format!(
                        "the update file {content_file} holds fewer documents than planned"
                    ))
                })?
                .map_err(documents_error)?;
            let reference = DocumentRef {
                payload: payload as u32,
                position: position as u32,
            };
            if let Some(ready) = gather(&mut plan, &mut waiting, id, reference, document)? {
                outbox.push(ready.0, ready.1).await?;
            }
            if position % APPLY_CHUNK_DOCUMENTS == 0 {
                crate::runtime::yield_if_needed().await;
            }
        }
    }
    match plan.keys().next() {
        Some(id) => Err(ResponseError::internal(format!(
            "the document `{id}` of the batch was not found again in its update files"
        ))),
        None => Ok(()),
    }
}

/// Records `document` (read at `reference`) for its id when the plan needs it; answers the id's
/// planned document once its last needed document was read.
fn gather(
    plan: &mut RefPlan,
    waiting: &mut HashMap<String, BTreeMap<DocumentRef, PayloadDocument>>,
    id: String,
    reference: DocumentRef,
    document: PayloadDocument,
) -> Result<Option<(String, PlannedDocument<PayloadDocument>)>, ResponseError> {
    let Some((index, _, planned)) = plan.get_full(&id) else {
        return Ok(None);
    };
    // Most ids are written once, from one document: handed on as read, nothing gathered.
    if let PlannedDocument::Unconditional(Outcome::Written {
        onto_stored,
        document: references,
    }) = planned
        && let [only] = references.0.as_slice()
    {
        if *only != reference {
            return Ok(None);
        }
        let onto_stored = *onto_stored;
        plan.swap_remove_index(index);
        let written = Outcome::Written {
            onto_stored,
            document,
        };
        return Ok(Some((id, PlannedDocument::Unconditional(written))));
    }
    let needed = references(planned);
    if !needed.contains(&reference) {
        return Ok(None);
    }
    let is_last = needed.last() == Some(&reference);
    let mut gathered = waiting.remove(&id).unwrap_or_default();
    gathered.insert(reference, document);
    if !is_last {
        waiting.insert(id, gathered);
        return Ok(None);
    }
    let Some(planned) = plan.swap_remove_index(index).map(|(_, planned)| planned) else {
        return Ok(None);
    };
    let built = build(planned, &mut gathered)?;
    Ok(Some((id, built)))
}

/// Whether `planned` writes a document read from the payloads.
fn reads_documents(planned: &PlannedDocument<DocumentRefs>) -> bool {
    let reads = |outcome: &Outcome<DocumentRefs>| match outcome {
        Outcome::Written { document, .. } => !document.0.is_empty(),
        Outcome::Untouched | Outcome::Deleted => false,
    };
    match planned {
        PlannedDocument::Unconditional(outcome) => reads(outcome),
        PlannedDocument::Conditional {
            if_stored,
            if_missing,
        } => reads(if_stored) || reads(if_missing),
    }
}

/// Every document position `planned` needs, sorted, without repeats.
fn references(planned: &PlannedDocument<DocumentRefs>) -> Vec<DocumentRef> {
    let mut found = Vec::new();
    let mut add = |outcome: &Outcome<DocumentRefs>| {
        if let Outcome::Written { document, .. } = outcome {
            found.extend(document.0.iter().copied());
        }
    };
    match planned {
        PlannedDocument::Unconditional(outcome) => add(outcome),
        PlannedDocument::Conditional {
            if_stored,
            if_missing,
        } => {
            add(if_stored);
            add(if_missing);
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// `planned` with its positions replaced by the documents read there (merged in order).
fn build(
    planned: PlannedDocument<DocumentRefs>,
    documents: &mut BTreeMap<DocumentRef, PayloadDocument>,
) -> Result<PlannedDocument<PayloadDocument>, ResponseError> {
    let mut uses: BTreeMap<DocumentRef, usize> = BTreeMap::new();
    let mut count = |outcome: &Outcome<DocumentRefs>| {
        if let Outcome::Written { document, .. } = outcome {
            for reference in &document.0 {
                *uses.entry(*reference).or_default() += 1;
            }
        }
    };
    match &planned {
        PlannedDocument::Unconditional(outcome) => count(outcome),
        PlannedDocument::Conditional {
            if_stored,
            if_missing,
        } => {
            count(if_stored);
            count(if_missing);
        }
    }
    let mut outcome = |outcome| build_outcome(outcome, documents, &mut uses);
    Ok(match planned {
        PlannedDocument::Unconditional(planned) => {
            PlannedDocument::Unconditional(outcome(planned)?)
        }
        PlannedDocument::Conditional {
            if_stored,
            if_missing,
        } => PlannedDocument::Conditional {
            if_stored: outcome(if_stored)?,
            if_missing: outcome(if_missing)?,
        },
    })
}

/// The document `outcome` writes: the one document it names as it was read, or the
/// documents it names built and merged in order.
fn build_outcome(
    outcome: Outcome<DocumentRefs>,
    documents: &mut BTreeMap<DocumentRef, PayloadDocument>,
    uses: &mut BTreeMap<DocumentRef, usize>,
) -> Result<Outcome<PayloadDocument>, ResponseError> {
    let (onto_stored, references) = match outcome {
        Outcome::Untouched => return Ok(Outcome::Untouched),
        Outcome::Deleted => return Ok(Outcome::Deleted),
        Outcome::Written {
            onto_stored,
            document,
        } => (onto_stored, document.0),
    };
    let mut read = Vec::with_capacity(references.len());
    for reference in references {
        let remaining = uses.entry(reference).or_default();
        *remaining = remaining.saturating_sub(1);
        let document = if *remaining == 0 {
            documents.remove(&reference)
        } else {
            documents.get(&reference).cloned()
        }
        .ok_or_else(|| ResponseError::internal("a planned document was not read"))?;
        read.push(document);
    }
    let document = match <[PayloadDocument; 1]>::try_from(read) {
        Ok([single]) => single,
        Err(several) => PayloadDocument::Built(merged(several)?),
    };
    Ok(Outcome::Written {
        onto_stored,
        document,
    })
}

/// `documents` built and merged in order: each one's top-level fields over the ones before.
fn merged(documents: Vec<PayloadDocument>) -> Result<shards::documents::Document, ResponseError> {
    // Merges are rare (an id written by several documents of one batch): a parser of their own.
    let mut parser = SimdParser::new();
    let mut built: Option<shards::documents::Document> = None;
    for document in documents {
        let document = document
            .into_document(&mut parser)
            .map_err(|error| document_value_error(&error))?;
        match &mut built {
            None => built = Some(document),
            Some(base) => shards::documents::operation::merge_top_level(base, document),
        }
    }
    built.ok_or_else(|| ResponseError::internal("a written document is empty"))
}

/// The chunks waiting for each shard, and the one in flight per shard.
struct Outbox {
    coordinator: Rc<Coordinator>,
    set: crate::coordinator::catalog::ShardSet,
    names: Vec<String>,
    queued: Vec<Vec<(String, PlannedDocument<PayloadDocument>)>>,
    in_flight: Vec<Option<Detached<Result<(), ResponseError>>>>,
}

impl Outbox {
    fn new(coordinator: Rc<Coordinator>, record: &IndexRecord) -> Outbox {
        let names = record.shard_names();
        Outbox {
            coordinator,
            set: record.shard_set(),
            queued: names.iter().map(|_| Vec::new()).collect(),
            in_flight: names.iter().map(|_| None).collect(),
            names,
        }
    }

    async fn push(
        &mut self,
        id: String,
        planned: PlannedDocument<PayloadDocument>,
    ) -> Result<(), ResponseError> {
        let Some(shard) = shards::rendezvous::rendezvous_winner_position(&self.names, &id) else {
            return Err(ResponseError::internal("an index without shards"));
        };
        self.queued[shard].push((id, planned));
        if self.queued[shard].len() >= SHARD_SEND_DOCUMENTS {
            self.send(shard).await?;
        }
        Ok(())
    }

    /// Waits for the chunk in flight to `shard`, then sends its queue.
    async fn send(&mut self, shard: usize) -> Result<(), ResponseError> {
        self.settle(shard).await?;
        let documents = std::mem::take(&mut self.queued[shard]);
        let coordinator = self.coordinator.clone();
        let set = self.set.clone();
        let task = crate::runtime::spawn_to_completion(async move {
            coordinator
                .ask_shard(&set, shard as u32, Apply { documents })
                .await
        });
        self.in_flight[shard] = Some(task);
        Ok(())
    }

    /// Waits for the chunk in flight to `shard`, if any.
    async fn settle(&mut self, shard: usize) -> Result<(), ResponseError> {
        if let Some(task) = self.in_flight[shard].take() {
            match task.await {
                Some(answer) => answer,
                None => Err(ResponseError::internal("a shard chunk was dropped")),
            }?;
        }
        Ok(())
    }

    /// Sends every queue (when `send_queued`) and waits for every chunk in flight, so that
    /// nothing reaches a shard after the caller commits or aborts.
    async fn finish(mut self, send_queued: bool) -> Result<(), ResponseError> {
        let mut failure = None;
        for shard in 0..self.names.len() {
            if !send_queued || self.queued[shard].is_empty() {
                continue;
            }
            if let Err(error) = self.send(shard).await {
                failure.get_or_insert(error);
            }
        }
        for shard in 0..self.names.len() {
            if let Err(error) = self.settle(shard).await {
                failure.get_or_insert(error);
            }
        }
        failure.map_or(Ok(()), Err)
    }
}
