//! The write plan of one batch of document operations on one index: per external document id,
//! the single operation the shard that owns the id applies, so that applying the plan twice
//! gives the same index (idempotent) and the result does not depend on the order shards apply
//! ids in.
//!
//! Folding rules (Meilisearch v1.41 `DocumentOperations::from_iter` and `merge`):
//! - a later replacement or deletion discards what came before for that id;
//! - an update merges its top-level fields onto the document the earlier operations produced
//!   (onto the stored document when no replacement or deletion came before);
//! - an operation with the `skip` missing-document policy is dropped when the document does not
//!   exist at that point; whether it existed before the batch is only known to the shard, so such
//!   ids carry both outcomes ([`PlannedDocument::Conditional`]);
//! - "delete all" deletes every stored document and every document planned so far;
//! - "delete by filter" deletes the stored documents the caller's filter matched (the caller
//!   evaluates filters on its indexes and passes the matching ids), and the documents planned so
//!   far that the caller's predicate matches.
//!
//! Routing: [`BatchPlan::split_by_shard`] assigns each id to a shard with rendezvous hashing.
//!
//! The plan is generic over what stands for a document ([`PlanDocument`]): the documents
//! themselves, or [`DocumentRefs`], the positions in the batch's payloads of the documents to
//! merge, so that a batch can be planned from its payloads without keeping their documents in
//! memory and the documents read again, streamed, only to be applied.

use indexmap::IndexMap;
use smallvec::SmallVec;

use super::Document;
use crate::rendezvous::rendezvous_winner_position;

/// What a plan holds for a document: it can take the top-level fields of a later update.
pub trait PlanDocument: Clone {
    /// Writes `update`'s top-level fields over `self`.
    fn merge(&mut self, update: Self);
}

impl PlanDocument for Document {
    fn merge(&mut self, update: Self) {
        merge_top_level(self, update);
    }
}

/// Where one document of a batch is: the payload (in batch order) and its position in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocumentRef {
    pub payload: u32,
    pub position: u32,
}

/// The documents whose top-level fields, written over one another in order, make a planned
/// document. Nearly every planned document is one document of one payload: that one is held
/// in place, and only a document merged from several takes a heap allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentRefs(pub SmallVec<[DocumentRef; 1]>);

impl DocumentRefs {
    /// The single document at `reference`.
    pub fn one(reference: DocumentRef) -> Self {
        Self(smallvec::smallvec![reference])
    }
}

impl PlanDocument for DocumentRefs {
    fn merge(&mut self, update: Self) {
        self.0.extend(update.0);
    }
}

/// What to do with an update or replacement of a document that does not exist
/// (`skipCreation` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingDocumentPolicy {
    /// Create the document (the default).
    Create,
    /// Leave the document absent.
    Skip,
}

/// The final effect of a batch on one document, given whether it was stored before the batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<D = Document> {
    /// Nothing changes.
    Untouched,
    /// The document is deleted (a no-op if it is not stored).
    Deleted,
    /// The document becomes `document`, or, when `onto_stored` and the document is stored, the
    /// stored document with `document`'s top-level fields written over it.
    Written { onto_stored: bool, document: D },
}

/// The planned effect of a batch on one document id.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedDocument<D = Document> {
    /// The same outcome whether or not the document was stored before the batch.
    Unconditional(Outcome<D>),
    /// The outcome depends on whether the document was stored before the batch.
    Conditional {
        if_stored: Outcome<D>,
        if_missing: Outcome<D>,
    },
}

impl<D> PlannedDocument<D> {
    /// The outcome for a document that `is_stored` (or not) before the batch, taken out of
    /// the plan (no copy of the document).
    pub fn into_outcome(self, is_stored: bool) -> Outcome<D> {
        match self {
            Self::Unconditional(outcome) => outcome,
            Self::Conditional { if_stored, .. } if is_stored => if_stored,
            Self::Conditional { if_missing, .. } => if_missing,
        }
    }

    /// Whether the outcome needs the document stored before the batch: to choose between
    /// conditional outcomes, or to write over it. A plain replacement does not.
    pub fn depends_on_stored(&self) -> bool {
        match self {
            Self::Unconditional(Outcome::Written { onto_stored, .. }) => *onto_stored,
            Self::Unconditional(_) => false,
            Self::Conditional { .. } => true,
        }
    }

    /// The outcome for a document that `is_stored` (or not) before the batch.
    pub fn outcome(&self, is_stored: bool) -> &Outcome<D> {
        match self {
            Self::Unconditional(outcome) => outcome,
            Self::Conditional { if_stored, .. } if is_stored => if_stored,
            Self::Conditional { if_missing, .. } => if_missing,
        }
    }
}

/// Writes the top-level fields of `update` over `base` (fields already in `base` keep their
/// position, new ones are appended).
pub fn merge_top_level(base: &mut Document, update: Document) {
    for (key, value) in update {
        base.insert(key, value);
    }
}

/// One operation on a document, as folded into an [`Outcome`].
enum Step<D> {
    Replace(D, MissingDocumentPolicy),
    Update(D, MissingDocumentPolicy),
    Delete,
}

impl<D> Step<D> {
    fn is_skipped_when_missing(&self) -> bool {
        matches!(
            self,
            Self::Replace(_, MissingDocumentPolicy::Skip)
                | Self::Update(_, MissingDocumentPolicy::Skip)
        )
    }
}

/// Applies `step` to `outcome`; `stored_before` says whether the document existed before the
/// batch (needed only while the outcome is `Untouched`).
fn apply<D: PlanDocument>(outcome: Outcome<D>, step: Step<D>, stored_before: bool) -> Outcome<D> {
    let exists_now = match &outcome {
        Outcome::Untouched => stored_before,
        Outcome::Deleted => false,
        Outcome::Written { .. } => true,
    };
    if !exists_now && step.is_skipped_when_missing() {
        return outcome;
    }
    match (outcome, step) {
        (_, Step::Delete) => Outcome::Deleted,
        (_, Step::Replace(document, _)) => Outcome::Written {
            onto_stored: false,
            document,
        },
        (Outcome::Untouched, Step::Update(document, _)) => Outcome::Written {
            onto_stored: stored_before,
            document,
        },
        (Outcome::Deleted, Step::Update(document, _)) => Outcome::Written {
            onto_stored: false,
            document,
        },
        (
            Outcome::Written {
                onto_stored,
                mut document,
            },
            Step::Update(update, _),
        ) => {
            document.merge(update);
            Outcome::Written {
                onto_stored,
                document,
            }
        }
    }
}

fn clone_step<D: Clone>(step: &Step<D>) -> Step<D> {
    match step {
        Step::Replace(document, policy) => Step::Replace(document.clone(), *policy),
        Step::Update(document, policy) => Step::Update(document.clone(), *policy),
        Step::Delete => Step::Delete,
    }
}

fn fold<D: PlanDocument>(planned: PlannedDocument<D>, step: Step<D>) -> PlannedDocument<D> {
    match planned {
        PlannedDocument::Unconditional(Outcome::Untouched) if step.is_skipped_when_missing() => {
            let if_stored = apply(Outcome::Untouched, step, true);
            PlannedDocument::Conditional {
                if_stored,
                if_missing: Outcome::Untouched,
            }
        }
        // Not skipped: an untouched document gets the same outcome either way (an update on a
        // missing document with `onto_stored` creates it from the update alone).
        PlannedDocument::Unconditional(outcome) => {
            PlannedDocument::Unconditional(apply(outcome, step, true))
        }
        PlannedDocument::Conditional {
            if_stored,
            if_missing,
        } => {
            if matches!(
                step,
                Step::Delete | Step::Replace(_, MissingDocumentPolicy::Create)
            ) {
                return PlannedDocument::Unconditional(apply(Outcome::Untouched, step, false));
            }
            let if_missing = apply(if_missing, clone_step(&step), false);
            let if_stored = apply(if_stored, step, true);
            PlannedDocument::Conditional {
                if_stored,
                if_missing,
            }
        }
    }
}

/// The plan of a batch being built, one operation at a time, in task order.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchPlan<D = Document> {
    /// True when a "delete all" happened: every stored document not in `documents` is deleted.
    pub delete_all_stored: bool,
    /// The planned effect per external document id. Nothing depends on the ids' order
    /// (internal ids follow the order ids first appear in, which the caller keeps).
    pub documents: PlanMap<D>,
}

/// The hasher of maps keyed by external document ids. The ids come from users, so it is keyed
/// with random keys, as std's is, but several times faster than std's SipHash on
/// ids: a batch hashes each of its ids a few times, serially, while the shards wait.
pub type IdHasher = ahash::RandomState;

/// A batch plan's map from external id to planned effect: the entries in one vector, in the
/// order they were planned, found through a table of their indexes. A batch plans hundreds of
/// thousands of ids on the control core while the shards wait; a hash map holding the entries
/// themselves (88 bytes each for a batch of documents) spreads them over a table of 88 MiB for
/// 600,000 ids (2^20 slots), and each plan, look-up and removal missed the cache there. Here the table holds 8 bytes an
/// id, and the entries are written and mostly read in the order the batch meets the ids.
pub type PlanMap<D> = IndexMap<String, PlannedDocument<D>, IdHasher>;

impl<D> Default for BatchPlan<D> {
    fn default() -> Self {
        Self {
            delete_all_stored: false,
            documents: IndexMap::default(),
        }
    }
}

impl<D: PlanDocument> BatchPlan<D> {
    /// An empty plan.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes room for `additional` more ids, so that a payload's ids are planned without the
    /// map growing (and rehashing every id planned so far) on the way.
    pub fn reserve(&mut self, additional: usize) {
        self.documents.reserve(additional);
    }

    fn initial(&self) -> PlannedDocument<D> {
        if self.delete_all_stored {
            PlannedDocument::Unconditional(Outcome::Deleted)
        } else {
            PlannedDocument::Unconditional(Outcome::Untouched)
        }
    }

    /// Folds `step` into the plan of `document_id`; answers whether the plan had no entry for
    /// it before.
    fn push(&mut self, document_id: String, step: Step<D>) -> bool {
        let initial = self.initial();
        let size_before = self.documents.len();
        let entry = self.documents.entry(document_id).or_insert(initial);
        let planned = std::mem::replace(entry, PlannedDocument::Unconditional(Outcome::Untouched));
        *entry = fold(planned, step);
        self.documents.len() > size_before
    }

    /// Adds or replaces the document `document_id` (`POST /documents`); answers whether the
    /// plan met `document_id` for the first time.
    pub fn replace(
        &mut self,
        document_id: String,
        document: D,
        policy: MissingDocumentPolicy,
    ) -> bool {
        self.push(document_id, Step::Replace(document, policy))
    }

    /// Adds or updates the document `document_id` (`PUT /documents`); answers whether the
    /// plan met `document_id` for the first time.
    pub fn update(
        &mut self,
        document_id: String,
        document: D,
        policy: MissingDocumentPolicy,
    ) -> bool {
        self.push(document_id, Step::Update(document, policy))
    }

    /// Deletes the document `document_id`.
    pub fn delete(&mut self, document_id: String) {
        self.push(document_id, Step::Delete);
    }

    /// Deletes every document (`DELETE /documents`).
    pub fn delete_all(&mut self) {
        self.delete_all_stored = true;
        for planned in self.documents.values_mut() {
            *planned = PlannedDocument::Unconditional(Outcome::Deleted);
        }
    }

    /// Deletes by filter: `matching_stored` are the ids of stored documents the caller's filter
    /// matched; `matches_planned` evaluates the filter on a document this plan writes.
    pub fn delete_by_filter(
        &mut self,
        matching_stored: impl IntoIterator<Item = String>,
        mut matches_planned: impl FnMut(&D) -> bool,
    ) {
        let matching_stored: std::collections::BTreeSet<String> =
            matching_stored.into_iter().collect();
        for (document_id, planned) in &mut self.documents {
            let stored_matches = matching_stored.contains(document_id);
            let mut filter_outcome = |outcome: &mut Outcome<D>| {
                let deleted = match outcome {
                    Outcome::Untouched => stored_matches,
                    Outcome::Deleted => false,
                    Outcome::Written { document, .. } => matches_planned(document),
                };
                if deleted {
                    *outcome = Outcome::Deleted;
                }
            };
            match planned {
                PlannedDocument::Unconditional(outcome) => filter_outcome(outcome),
                PlannedDocument::Conditional {
                    if_stored,
                    if_missing,
                } => {
                    filter_outcome(if_stored);
                    filter_outcome(if_missing);
                }
            }
        }
        if self.delete_all_stored {
            return;
        }
        for document_id in matching_stored {
            self.documents
                .entry(document_id)
                .or_insert(PlannedDocument::Unconditional(Outcome::Deleted));
        }
    }

    /// Splits the planned documents by owning shard: entry `i` of the result holds the ids of
    /// `shard_names[i]`, in no particular order. Empty when there is no shard.
    pub fn split_by_shard(
        self,
        shard_names: &[impl AsRef<str>],
    ) -> Vec<Vec<(String, PlannedDocument<D>)>> {
        let mut per_shard: Vec<Vec<(String, PlannedDocument<D>)>> =
            shard_names.iter().map(|_| Vec::new()).collect();
        for (document_id, planned) in self.documents {
            if let Some(position) = rendezvous_winner_position(shard_names, &document_id) {
                per_shard[position].push((document_id, planned));
            }
        }
        per_shard
    }
}
