//! Document additions, updates, deletions (by ids or by filter) and clears. The document
//! work is planned here (payloads parsed, primary key resolved, ids validated, operations
//! folded per document id and split by shard) and applied by the shards in the two phases
//! of [`super`]: every shard prepares its share (with the internal ids of the documents the
//! batch creates), the documents are sent, and only when all are ready does every shard
//! commit. The plan holds where each document is, not the document (see
//! [`crate::tasks::batch_documents`]).
//!
//! Invariants: a task whose payload or ids are invalid fails alone and contributes nothing;
//! if any shard cannot prepare, every shard aborts and the batch's document tasks fail with
//! that error, changing nothing; a deletion counts a document only when it existed at that
//! point of the batch; internal ids are the smallest no shard uses, given in the order the
//! batch first met the documents, as one unsharded index would give them.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;
use shards::documents::document_id::extract_document_id;
use shards::documents::operation::{
    BatchPlan as DocumentPlan, DocumentRef, DocumentRefs, IdHasher, MissingDocumentPolicy,
};
use shards::documents::payload::documents_from;
use shards::documents::primary_key::resolve_primary_key;
use shards::filter::{Filter, FilterableRules, check_filterable};
use shards::network_shards::NetworkShards;

use super::BatchWork;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::documents_error;
use crate::errors::{Code, ResponseError};
use crate::host::batch::{APPLY_CHUNK_DOCUMENTS, Prepare};
use crate::host::documents::{ExistingIds, MatchingIds, UsedIds};
use crate::host::embedding::remote_embedders;
use crate::host::protocol::ShardRequest;
use crate::network::sharding::Sharding;
use crate::tasks::batch_documents::{PlannedPayload, send_documents};
use crate::tasks::model::{Details, DocumentMethod, KindWithContent, Task};
use crate::tasks::owners::{owning_shards, share_out, shares_by_owner};
use crate::tasks::payload_ids::{
    PayloadIds, PrefetchJob, Prefetched, prefetch, read_remaining_ids,
};
use crate::tasks::scheduler::unsupported;
use crate::tasks::update_files::format_of;

/// The most ids a batch's plan makes room for before planning (about 400 MiB of map); a
/// bigger batch grows its map beyond that as it plans.
const PLAN_RESERVED_IDS_MAX: u64 = 4 << 20;

/// Ids one `ExistingIds` request asks a shard about. The lookups run on the shard's core
/// between its searches, with no await among them: glommio's stall detector saw one
/// request of a whole share (tens of thousands of ids) hold a core for 22–25 ms under
/// `search_under_writes`' replacing phase, so a share is asked about in requests of this
/// many ids. A request of 4,096 ids still took about 10 ms at 200k stored documents under
/// a saturating search load (perf, one batch of 170,000 new ids), so twice the core's
/// preemption interval went by between two yields of the batch; 1,024 ids take about 2.5 ms.
const EXISTING_IDS_PER_REQUEST: usize = 1_024;

/// The counters a succeeded task reports.
pub(super) enum TaskEffect {
    None,
    Indexed(u64),
    Deleted(u64),
}

impl TaskEffect {
    pub(super) fn fill(&self, details: &mut Details) {
        match (self, details) {
            (
                TaskEffect::Indexed(count),
                Details::DocumentAdditionOrUpdate {
                    indexed_documents, ..
                },
            ) => *indexed_documents = Some(*count),
            (
                TaskEffect::Deleted(count),
                Details::DocumentDeletion {
                    deleted_documents, ..
                }
                | Details::DocumentDeletionByFilter {
                    deleted_documents, ..
                }
                | Details::ClearAll { deleted_documents },
            ) => *deleted_documents = Some(*count),
            _ => {}
        }
    }
}

/// The documents part of a batch being planned: the plan holds where each document is, not
/// the document (see [`crate::tasks::batch_documents`]).
pub(super) struct DocumentWork {
    plan: DocumentPlan<DocumentRefs>,
    /// The update files of the batch's additions with their documents' ids, in batch order
    /// (a [`DocumentRef`]'s `payload` indexes this).
    payloads: Vec<PlannedPayload>,
    primary_key: Option<String>,
    /// The primary key the batch resolved for an index that had none.
    pub(super) new_primary_key: Option<String>,
    /// Ids written by the batch so far (and not deleted since); kept only when the batch
    /// deletes (only deletions and clears read it).
    written: BTreeSet<String>,
    tracks_written: bool,
    /// Ids deleted by the batch so far.
    gone: BTreeSet<String>,
    /// Whether a clear happened in the batch (nothing stored before it counts any more).
    cleared: bool,
    /// Every id the batch writes, in the order the batch first met it.
    order: Vec<String>,
    /// The ids in `order` (membership only), kept only when the batch deletes: a deletion
    /// plans an id it does not write. Otherwise an id is in `order` exactly when the plan
    /// has it, and the plan says so.
    ordered: HashSet<String, IdHasher>,
    touched: bool,
    /// The network's sharding when it has a leader: the ids of the shards this instance does
    /// not own are left out of the plan (not stored, not deleted by the network's writes, not
    /// counted), as Meilisearch Enterprise skips them.
    sharding: Option<Sharding>,
}

impl DocumentWork {
    pub(super) fn new(
        record: &IndexRecord,
        tracks_written: bool,
        sharding: Option<Sharding>,
    ) -> DocumentWork {
        DocumentWork {
            plan: DocumentPlan::new(),
            payloads: Vec::new(),
            primary_key: record.primary_key.clone(),
            new_primary_key: None,
            written: BTreeSet::new(),
            tracks_written,
            gone: BTreeSet::new(),
            cleared: false,
            order: Vec::new(),
            ordered: HashSet::default(),
            touched: false,
            sharding,
        }
    }

    /// Whether this instance keeps the document `id` (always without a leader).
    fn keeps(&self, id: &str) -> bool {
        self.sharding
            .as_ref()
            .is_none_or(|sharding| sharding.keeps(id))
    }

    fn is_empty(&self) -> bool {
        !self.touched
    }

    /// How many ids the batch writes (some may be stored already).
    pub(super) fn writes(&self) -> usize {
        self.order.len()
    }

    /// Makes room for the ids of every addition of `tasks` at once: grown task by task, the
    /// plan's map would move every id planned so far each time it doubles, while the shards
    /// wait for the plan.
    pub(super) fn reserve_for(&mut self, tasks: &[Task]) {
        let counted: u64 = tasks
            .iter()
            .map(|task| match &task.kind {
                KindWithContent::DocumentAdditionOrUpdate {
                    documents_count, ..
                } => *documents_count,
                _ => 0,
            })
            .sum();
        let ids = usize::try_from(counted.min(PLAN_RESERVED_IDS_MAX)).unwrap_or(0);
        self.plan.reserve(ids);
        self.order.reserve(ids);
        if self.tracks_written {
            self.ordered.reserve(ids);
        }
    }

    /// Marks `id` deleted; answers whether it existed at that point of the batch.
    fn delete(&mut self, id: &str, stored_before: bool) -> bool {
        let existed =
            self.written.remove(id) || (stored_before && !self.cleared && !self.gone.contains(id));
        self.gone.insert(id.to_owned());
        existed
    }

    /// Plans `task`, the batch's task at `position`, whose update file may have been read
    /// ahead (`prefetched`).
    pub(super) async fn plan_task(
        &mut self,
        work: &BatchWork,
        record: &IndexRecord,
        task: &Task,
        position: usize,
        prefetched: &mut Prefetched,
    ) -> Result<TaskEffect, ResponseError> {
        match &task.kind {
            KindWithContent::DocumentAdditionOrUpdate {
                primary_key,
                method,
                content_file,
                skip_creation,
                ..
            } => {
                let read = match prefetched.take(position).await {
                    Some(read) => read?,
                    None => {
                        self.parse_payload(work, content_file, primary_key.as_deref())
                            .await?
                    }
                };
                self.document_addition_or_update(read, content_file, *method, *skip_creation)
            }
            KindWithContent::DocumentDeletion { document_ids, .. } => {
                // A write of the network (the leader's, or its copy) deletes only this
                // instance's documents; a deletion this instance registered for itself (a
                // network change giving documents up) deletes what it names.
                let own_only = task.network.is_some();
                self.document_deletion(work, record, document_ids, own_only)
                    .await
            }
            KindWithContent::DocumentDeletionByFilter { filter, .. } => {
                self.document_deletion_by_filter(work, record, filter).await
            }
            KindWithContent::DocumentClear { .. } => self.document_clear(work, record).await,
            other => Err(unsupported(other)),
        }
    }

    /// Plans a `documentAdditionOrUpdate` task whose update file `content_file` holds the
    /// documents `read`.
    fn document_addition_or_update(
        &mut self,
        read: PayloadIds,
        content_file: &str,
        method: DocumentMethod,
        skip_creation: bool,
    ) -> Result<TaskEffect, ResponseError> {
        let PayloadIds { ids: parsed, spans } = read;
        let policy = if skip_creation {
            MissingDocumentPolicy::Skip
        } else {
            MissingDocumentPolicy::Create
        };
        let payload = u32::try_from(self.payloads.len())
            .map_err(|_| ResponseError::internal("too many payloads in a batch"))?;
        self.payloads.push(PlannedPayload {
            content_file: content_file.to_owned(),
            ids: parsed.clone(),
            spans,
        });
        let mut met_before = false;
        let mut kept = 0u64;
        for (position, id) in parsed.into_iter().enumerate() {
            if !self.keeps(&id) {
                continue;
            }
            kept += 1;
            let document = DocumentRefs::one(DocumentRef {
                payload,
                position: position as u32,
            });
            met_before |= !self.plan_write(id, document, method, policy);
        }
        self.touched = true;
        let ids = &self.payloads[payload as usize].ids;
        let indexed = match &self.sharding {
            Some(sharding) if met_before => {
                let kept_ids = ids.iter().filter(|id| sharding.keeps(id));
                kept_ids.collect::<std::collections::HashSet<_>>().len() as u64
            }
            Some(_) => kept,
            None => indexed_count(ids, met_before),
        };
        Ok(TaskEffect::Indexed(indexed))
    }

    /// Plans writing `document` under `id` by `method`, keeping the order in which the
    /// batch first met each id; answers whether the batch met `id` for the first time.
    fn plan_write(
        &mut self,
        id: String,
        document: DocumentRefs,
        method: DocumentMethod,
        policy: MissingDocumentPolicy,
    ) -> bool {
        if self.tracks_written {
            self.written.insert(id.clone());
            if self.ordered.insert(id.clone()) {
                self.order.push(id.clone());
            }
        }
        let first_met = match method {
            DocumentMethod::Replace => self.plan.replace(id.clone(), document, policy),
            DocumentMethod::Update => self.plan.update(id.clone(), document, policy),
        };
        if first_met && !self.tracks_written {
            self.order.push(id);
        }
        first_met
    }

    /// Plans a `documentDeletion` task (by ids): of this instance's documents only when
    /// `own_only`.
    async fn document_deletion(
        &mut self,
        work: &BatchWork,
        record: &IndexRecord,
        document_ids: &[String],
        own_only: bool,
    ) -> Result<TaskEffect, ResponseError> {
        let kept: Vec<String> = document_ids
            .iter()
            .filter(|id| !own_only || self.keeps(id))
            .cloned()
            .collect();
        let stored = if self.cleared {
            BTreeSet::new()
        } else {
            work.existing_ids(record, &kept).await?
        };
        let mut deleted = 0;
        for id in kept {
            if self.delete(&id, stored.contains(&id)) {
                deleted += 1;
            }
            self.plan.delete(id);
        }
        self.touched = true;
        Ok(TaskEffect::Deleted(deleted))
    }

    /// Plans a `documentDeletionByFilter` task: the documents stored before the batch that
    /// `filter` matches.
    async fn document_deletion_by_filter(
        &mut self,
        work: &BatchWork,
        record: &IndexRecord,
        filter: &Value,
    ) -> Result<TaskEffect, ResponseError> {
        let filter = checked_task_filter(
            filter,
            record,
            crate::network::sharding::filter_shards(&work.network),
        )?;
        let matched = match filter {
            Some(filter) if !self.cleared => work.matching_ids(record, &filter).await?,
            _ => BTreeSet::new(),
        };
        let mut deleted = 0;
        for id in &matched {
            if self.delete(id, true) {
                deleted += 1;
            }
        }
        self.plan.delete_by_filter(matched, |_| false);
        self.touched = true;
        Ok(TaskEffect::Deleted(deleted))
    }

    /// Plans a `documentClear` task.
    async fn document_clear(
        &mut self,
        work: &BatchWork,
        record: &IndexRecord,
    ) -> Result<TaskEffect, ResponseError> {
        let deleted = if self.cleared {
            self.written.len() as u64
        } else {
            let stored = work.document_count(record).await?;
            stored.saturating_sub(self.gone.len() as u64) + self.written.len() as u64
        };
        self.cleared = true;
        self.written.clear();
        self.plan.delete_all();
        self.touched = true;
        Ok(TaskEffect::Deleted(deleted))
    }

    /// The document ids of an update file, in payload order, with where each document lies
    /// (the file is streamed; the documents are checked and dropped); resolves the batch's
    /// primary key at the first document when the index has none.
    async fn parse_payload(
        &mut self,
        work: &BatchWork,
        content_file: &str,
        requested_primary_key: Option<&str>,
    ) -> Result<PayloadIds, ResponseError> {
        let format = format_of(content_file).ok_or_else(|| {
            ResponseError::internal(format!("unknown update file format: {content_file}"))
        })?;
        let path = work.control.update_files.path(content_file);
        let file = std::fs::File::open(&path).map_err(|error| crate::errors::io_error(&error))?;
        let mut parsed = PayloadIds::new();
        let mut primary_key = self.primary_key.clone().or(self.new_primary_key.clone());
        let mut newly_resolved = None;
        let mut documents = documents_from(file, format).map_err(documents_error)?;
        // The first document is built: the primary key may have to be inferred from it.
        if let Some(first) = documents.next() {
            let first = first.map_err(documents_error)?;
            let resolved =
                resolve_primary_key(primary_key.as_deref(), requested_primary_key, Some(&first))
                    .map_err(documents_error)?;
            if resolved.is_new {
                newly_resolved = Some(resolved.name.clone());
            }
            let id = extract_document_id(&first, &resolved.name).map_err(documents_error)?;
            parsed.push(id, &documents);
            primary_key = Some(resolved.name);
        }
        if let Some(key) = primary_key.as_deref() {
            // The others only give their id (read from the parse, the document is not built).
            read_remaining_ids(&mut documents, key, &mut parsed).await?;
        }
        if parsed.ids.is_empty()
            && let (None, Some(requested)) = (&primary_key, requested_primary_key)
        {
            newly_resolved = Some(requested.to_owned());
        }
        if let Some(name) = newly_resolved {
            self.new_primary_key = Some(name);
        }
        Ok(parsed)
    }
}

impl BatchWork {
    /// Starts reading ahead, on every core, the update files of the document additions of
    /// `tasks` when the index's primary key is known already (each file is then read by
    /// itself) and there are several.
    pub(super) fn prefetch_payloads(&self, record: &IndexRecord, tasks: &[Task]) -> Prefetched {
        let Some(primary_key) = record.primary_key.as_deref() else {
            return Prefetched::none();
        };
        let jobs: Vec<PrefetchJob> = tasks
            .iter()
            .enumerate()
            .filter_map(|(position, task)| match &task.kind {
                KindWithContent::DocumentAdditionOrUpdate {
                    primary_key: requested,
                    content_file,
                    ..
                } if requested
                    .as_deref()
                    .is_none_or(|requested| requested == primary_key) =>
                {
                    Some(PrefetchJob {
                        position,
                        path: self.control.update_files.path(content_file),
                        format: format_of(content_file)?,
                    })
                }
                _ => None,
            })
            .collect();
        if jobs.len() < 2 || self.coordinator.cores() < 2 {
            return Prefetched::none();
        }
        prefetch(&self.coordinator, jobs, primary_key)
    }

    /// Prepares every shard's share, then commits them all (or aborts them all).
    pub(super) async fn apply_documents(
        &self,
        record: &IndexRecord,
        documents: DocumentWork,
    ) -> Result<(), ResponseError> {
        if documents.is_empty() {
            return Ok(());
        }
        let delete_all = documents.plan.delete_all_stored;
        let owners = owning_shards(&record.shard_names(), &documents.order).await;
        let assigned = self
            .assign_internal_ids(record, &documents, &owners)
            .await?;
        let mut assigned_shares = share_out(
            record.shards,
            assigned.into_iter().map(|(position, internal)| {
                (
                    owners[position],
                    (documents.order[position].clone(), internal),
                )
            }),
        );
        let batch_uid = u64::from(self.batch_uid);
        let embedders = remote_embedders(
            &record.settings.embedders,
            record.settings.searchable_attributes.as_ref(),
        )?;
        let prepared = self
            .prepare_every_shard(&record.shard_set(), |shard| Prepare {
                batch_uid,
                delete_all,
                assigned: std::mem::take(&mut assigned_shares[shard as usize]),
                embedders: embedders.clone(),
            })
            .await;
        let sent = match prepared {
            Err(error) => Err(error),
            Ok(_) => {
                send_documents(
                    &self.coordinator,
                    &self.control.update_files,
                    record,
                    documents.payloads,
                    documents.plan.documents,
                    documents.order,
                    owners,
                )
                .await
            }
        };
        self.commit_or_abort(&record.shard_set(), sent).await
    }

    /// Index-wide internal ids for the documents the batch creates, in the order the batch
    /// first met them: the smallest ids no shard uses, as one unsharded index would give.
    /// Answers each created document's position in `documents.order` with its internal id;
    /// `owners` holds the shard of each id in `documents.order`.
    async fn assign_internal_ids(
        &self,
        record: &IndexRecord,
        documents: &DocumentWork,
        owners: &[Option<u32>],
    ) -> Result<Vec<(usize, u32)>, ResponseError> {
        let delete_all = documents.plan.delete_all_stored;
        let mut used = roaring::RoaringBitmap::new();
        let mut stored = BTreeSet::new();
        if !delete_all {
            for answer in self
                .coordinator
                .ask_every_shard(&record.shard_set(), |_| UsedIds)
                .await
            {
                used |= answer?;
            }
            // No internal id in use means no document stored: nothing to look up.
            if !used.is_empty() {
                let shares = shares_by_owner(record.shards, &documents.order, owners).await;
                stored = self.stored_ids(record, shares).await?;
            }
        }
        let mut assigned = Vec::new();
        let mut candidate = 0u32;
        for (position, id) in documents.order.iter().enumerate() {
            if position % APPLY_CHUNK_DOCUMENTS == 0 {
                crate::runtime::yield_if_needed().await;
            }
            let Some(planned) = documents.plan.documents.get(id) else {
                continue;
            };
            let is_stored = stored.contains(id);
            let creates = !is_stored
                && matches!(
                    planned.outcome(is_stored),
                    shards::documents::operation::Outcome::Written { .. }
                );
            if !creates {
                continue;
            }
            while used.contains(candidate) {
                candidate = candidate
                    .checked_add(1)
                    .ok_or_else(|| ResponseError::internal("every internal id is used"))?;
            }
            used.insert(candidate);
            assigned.push((position, candidate));
        }
        Ok(assigned)
    }

    /// Ids among `ids` stored in the index before the batch.
    async fn existing_ids(
        &self,
        record: &IndexRecord,
        ids: &[String],
    ) -> Result<BTreeSet<String>, ResponseError> {
        let owners = owning_shards(&record.shard_names(), ids).await;
        let shares = shares_by_owner(record.shards, ids, &owners).await;
        self.stored_ids(record, shares).await
    }

    /// The ids of `shares` (one list per shard, in shard order) that their shard stores,
    /// asked in rounds of at most [`EXISTING_IDS_PER_REQUEST`] ids per shard.
    async fn stored_ids(
        &self,
        record: &IndexRecord,
        shares: Vec<Vec<String>>,
    ) -> Result<BTreeSet<String>, ResponseError> {
        let mut shares: Vec<std::vec::IntoIter<String>> =
            shares.into_iter().map(Vec::into_iter).collect();
        let mut stored = BTreeSet::new();
        while shares.iter().any(|share| share.len() > 0) {
            self.collect_ids_into(
                record,
                |shard| ExistingIds {
                    ids: shares
                        .get_mut(shard as usize)
                        .map(|share| share.by_ref().take(EXISTING_IDS_PER_REQUEST).collect())
                        .unwrap_or_default(),
                },
                &mut stored,
            )
            .await?;
        }
        Ok(stored)
    }

    /// External ids of the stored documents `filter` matches.
    async fn matching_ids(
        &self,
        record: &IndexRecord,
        filter: &Filter,
    ) -> Result<BTreeSet<String>, ResponseError> {
        self.collect_ids(record, |_| MatchingIds {
            filter: filter.clone(),
        })
        .await
        .map_err(|error| filter_error_in_index(error, &record.uid))
    }

    /// Every id the shards answer to `command`.
    async fn collect_ids<Request: ShardRequest<Answer = Vec<String>>>(
        &self,
        record: &IndexRecord,
        command: impl FnMut(u32) -> Request,
    ) -> Result<BTreeSet<String>, ResponseError> {
        let mut found = BTreeSet::new();
        self.collect_ids_into(record, command, &mut found).await?;
        Ok(found)
    }

    /// Adds the ids every shard answers `command` (given the shard) with to `found`,
    /// yielding to the core's other tasks every [`APPLY_CHUNK_DOCUMENTS`] ids.
    async fn collect_ids_into<Request: ShardRequest<Answer = Vec<String>>>(
        &self,
        record: &IndexRecord,
        command: impl FnMut(u32) -> Request,
        found: &mut BTreeSet<String>,
    ) -> Result<(), ResponseError> {
        for answer in self
            .coordinator
            .ask_every_shard(&record.shard_set(), command)
            .await
        {
            for (position, id) in answer?.into_iter().enumerate() {
                if position % APPLY_CHUNK_DOCUMENTS == 0 {
                    crate::runtime::yield_if_needed().await;
                }
                found.insert(id);
            }
        }
        Ok(())
    }
}

/// Parses a deletion filter, with the messages of `invalid_document_filter`.
pub(super) fn parse_deletion_filter(
    filter: &Value,
    index_uid: &str,
) -> Result<Option<Filter>, ResponseError> {
    Filter::from_json(filter).map_err(|error| {
        let message = match error.kind {
            shards::filter::FilterErrorKind::Index => {
                format!("Index `{index_uid}`: {}", error.message)
            }
            _ => error.message,
        };
        ResponseError::new(Code::InvalidDocumentFilter, message)
    })
}

/// A filter refusal the shards made while evaluating a task's filter (a bad geo argument, an
/// unknown `_shard`), with the ``Index `uid`: `` prefix of Meilisearch's task errors.
pub(super) fn filter_error_in_index(error: ResponseError, index_uid: &str) -> ResponseError {
    if matches!(
        error.code,
        Code::InvalidDocumentFilter | Code::InvalidSearchFilter
    ) {
        error.prefixed(&format!("Index `{index_uid}`: "))
    } else {
        error
    }
}

/// An edition's filter, parsed and checked against the index's filterable attributes (an
/// empty filter selects every document); a task fails with Meilisearch's ``Index `uid`: ``
/// prefix when the filter names an attribute the index cannot filter. Its `_shard`
/// conditions name `filter_shards`.
pub(super) fn checked_task_filter(
    value: &Value,
    record: &IndexRecord,
    filter_shards: Option<NetworkShards>,
) -> Result<Option<Filter>, ResponseError> {
    let Some(filter) = parse_deletion_filter(value, &record.uid)? else {
        return Ok(None);
    };
    let filter = filter.with_network_shards(filter_shards);
    let rules =
        FilterableRules::from_setting(&record.settings.setting_view("filterableAttributes"))
            .map_err(ResponseError::internal)?;
    check_filterable(&filter, &rules).map_err(|error| {
        ResponseError::new(
            Code::InvalidDocumentFilter,
            format!("Index `{}`: {}", record.uid, error.message),
        )
    })?;
    Ok(Some(filter))
}

/// The documents a payload of `ids` indexes: each id once, as Meilisearch counts a payload
/// that names an id twice. The ids are only hashed when the batch met one of them before
/// (`met_before`), so a payload of distinct ids costs nothing more.
fn indexed_count(ids: &[String], met_before: bool) -> u64 {
    if !met_before {
        return ids.len() as u64;
    }
    let distinct: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    distinct.len() as u64
}
