//! Applying a batch to a shard: two-phase (prepare, apply in chunks, commit) inside one write
//! transaction; the rebuilds after a settings change ([`super::rebuild`]) re-index the stored
//! documents through the same [`PreparedBatch`].
//!
//! Invariants: nothing is visible to readers before `commit`; dropping a [`PreparedBatch`]
//! aborts; the documents tree changes with each document, while the index trees (facets, words)
//! and `external_ids` for the documents the batch creates change through pending changes
//! ([`Deltas`]) written at each flush (when they take the bound's bytes, and at commit), and
//! every lookup of the batch goes through [`PreparedBatch::existing_id`], which sees the pending
//! ids before the tree; a batch whose uid is not above the applied uid does nothing.
//!
//! Assigned ids: the caller assigns internal ids only to documents no shard stores (see
//! [`PreparedBatch::assign_ids`]); a document created under an assigned id is not looked up,
//! and an assigned id the shard does store fails the batch at its flush.
//!
//! Document dictionaries: a batch trains one in its transaction, right after the document
//! that makes the shard due one (see [`PreparedBatch::training_due`]), from a sample spread
//! over the shard's documents, and stores the sampled documents again with it; the documents
//! after it use it. A failed training changes nothing but the document count the next try
//! waits for. Training runs on the thread applying the batch (the shard's core): about 30 ms
//! for 1.5 MiB of samples.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use roaring::RoaringBitmap;
use serde_json::{Map, Value};
use storage_engine::{Database, Direction, WriteTransaction};

use super::analysis_ahead::{
    self, AHEAD_OPERATIONS_MIN, Ahead, AheadChunk, AheadContext, AheadRunner, AnalyzedDocument,
    AnalyzedText,
};
use super::assigned_ids::AssignedIds;
use super::delta::Delta;
use super::dictionary_changes::DictionaryChanges;
use super::extract::{Extracted, extract};
use super::geo_field::check_geo_field;
use super::network_membership::{MembershipChanges, MembershipSlot};
use super::new_external_ids::NewExternalIds;
use super::pair_changes::PairChanges;
use super::state::ShardState;
use super::word_changes::{KeyChanges, WordChanges};
use crate::analysis::{Analyzer, Occurrence, each_document_word};
use crate::documents::simd_document::SimdParser;
use crate::error::{ShardError, ShardResult};
use crate::index::document_codec::{
    self, DICTIONARY_BYTES, DICTIONARY_LEVEL, DICTIONARY_RETRAINING_GROWTH,
    DICTIONARY_SAMPLE_BYTES, DICTIONARY_TRAINING_DOCUMENTS, DICTIONARY_TRAINING_DOCUMENTS_MIN,
    DecoderCache, Dictionaries, DictionaryDecoder, DocumentEncoder,
};
use crate::index::inverted::{encode_field_lengths, field_word_count_key};
use crate::index::keys::{
    self, decode_string_entry, decode_u64, document_key, encode_string_entry, encode_u64,
};
use crate::vectors::changes::VectorChanges;
use crate::vectors::{GraphSet, SlotVectors, without_vectors};

#[path = "apply_vectors.rs"]
mod vectors;

use crate::index::trees::{
    DOCUMENT_DICTIONARIES_TREE, DOCUMENT_TREES, DOCUMENTS_TREE, EXTERNAL_IDS_TREE,
    FACET_NUMBERS_TREE, FACET_PRESENCE_TREE, FACET_STRINGS_TREE, FIELD_DISTRIBUTION_TREE,
    FIELD_LENGTHS_TREE, FIELD_WORD_COUNTS_TREE, FIELDS_TREE, GEO_TREE, PAIR_DISTANCE_MAX,
    TEXT_TREES, WORD_PAIR_TREES,
};

/// The final effect of a batch on one document of this shard.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// Store this whole document (an update is folded into a full document by the caller).
    Replace {
        external_id: String,
        document: Map<String, Value>,
    },
    /// Store the document whose JSON object `text` is (a
    /// [`crate::documents::payload_document::PayloadDocument::Text`]); the shard builds it.
    ReplaceText {
        external_id: String,
        text: Box<[u8]>,
    },
    Delete {
        external_id: String,
    },
    DeleteAll,
    /// Give the stored (or just written) document `external_id` the embeddings its remote
    /// embedders computed, each replacing what the document had for that embedder; a
    /// document that does not exist is left alone.
    SetGenerated {
        external_id: String,
        generated: Vec<crate::vectors::GeneratedVectors>,
    },
    /// Give the stored (or just written) document `external_id`, for each named embedder,
    /// exactly the embeddings another shard keeps for it, with their flags (whether they
    /// were generated, whether they may be generated again, their fragments): how a
    /// document copied to another shard keeps its vectors as they were. A document that
    /// does not exist is left alone.
    SetStoredVectors {
        external_id: String,
        vectors: Vec<(String, super::StoredVectors)>,
    },
}

/// What a committed batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplyOutcome {
    /// The batch was at or below the recorded applied uid: nothing changed.
    pub already_applied: bool,
    pub replaced: u64,
    pub deleted: u64,
}

/// What was analysed of a written document before it is stored (`None`: analysed when it is).
struct Analyzed {
    extracted: Option<Extracted>,
    text: Option<AnalyzedText>,
}

/// Pending changes of the facet trees, the word trees and the field distribution.
#[derive(Debug, Default)]
struct Deltas {
    numbers: BTreeMap<Vec<u8>, Delta>,
    strings: BTreeMap<Vec<u8>, Delta>,
    presence: BTreeMap<Vec<u8>, Delta>,
    /// The word trees' changes (`word_documents`, `word_fields`, `word_position_buckets`,
    /// `word_position_chunks`).
    words: WordChanges,
    /// The changes of the pair trees by distance (index `d - 1` for distance `d`, by the word
    /// numbers of `words`).
    pairs: [PairChanges; PAIR_DISTANCE_MAX],
    /// The changes of `field_word_counts`.
    field_word_counts: KeyChanges,
    distribution: BTreeMap<String, i64>,
    /// Heap bytes of the facet deltas, as [`PreparedBatch::contribute`] counts them.
    facet_bytes: usize,
    /// The external ids of the documents created since the last flush.
    new_external_ids: NewExternalIds,
}

/// Heap bytes of one entry of a B-tree map beyond its key and value: its share of a node's
/// bookkeeping and the key's allocation slack.
const MAP_ENTRY_OVERHEAD_BYTES: usize = 64;
/// Heap bytes a facet value new to the deltas takes besides its key: its delta (two bitmaps
/// and the original spelling's slot) and the map entry.
const NEW_FACET_VALUE_BYTES: usize =
    size_of::<Vec<u8>>() + size_of::<Delta>() + MAP_ENTRY_OVERHEAD_BYTES;
/// Heap bytes one more document in a facet value's delta takes (a bitmap's array entry, with
/// its growth).
const FACET_CHANGE_BYTES: usize = 4;

impl Deltas {
    /// About the heap bytes the pending changes take.
    fn estimated_bytes(&self) -> usize {
        self.words.estimated_bytes()
            + self
                .pairs
                .iter()
                .map(PairChanges::estimated_bytes)
                .sum::<usize>()
            + self.field_word_counts.estimated_bytes()
            + self.facet_bytes
            + self.new_external_ids.estimated_bytes()
    }
}

/// Most distinct field paths a shard numbers, as Meilisearch allows per index (its field ids
/// are `u16`s and it refuses the 65,536th field).
pub const FIELD_COUNT_MAX: usize = 65_535;

/// The id of the field numbered after `known` others.
///
/// Invariant: ids run from 0 to `FIELD_COUNT_MAX - 1`; one more field is
/// [`ShardError::TooManyFields`], so the batch fails before any tree holds the extra field.
fn next_field_id(known: usize) -> ShardResult<u16> {
    if known >= FIELD_COUNT_MAX {
        return Err(ShardError::TooManyFields);
    }
    u16::try_from(known).map_err(|_| ShardError::TooManyFields)
}

/// The write side of a batch, between `prepare` and `commit`.
pub struct PreparedBatch {
    batch_uid: u64,
    /// `None` when the batch was already applied.
    transaction: Option<WriteTransaction>,
    state: ShardState,
    fields: BTreeMap<String, u16>,
    deltas: Deltas,
    outcome: ApplyOutcome,
    /// Internal ids chosen by the caller for new documents (see [`PreparedBatch::assign_ids`]).
    assigned_ids: AssignedIds,
    /// The tokenizer of the stored text settings.
    analyzer: Analyzer,
    /// About how many heap bytes the pending changes may take before they are written to the
    /// trees (see [`super::Shard::bound_pending_changes`]).
    pending_bytes_max: usize,
    /// The shard's prepared document dictionaries (committed ones only).
    decoders: Arc<DecoderCache>,
    /// The dictionaries this batch trained (uncommitted: they enter `decoders` at commit).
    trained: HashMap<u32, Arc<DictionaryDecoder>>,
    /// What compresses the documents this batch writes.
    encoder: Encoder,
    /// Buffers [`PreparedBatch::contribute_text`] reuses.
    text_scratch: TextScratch,
    /// Builds the documents that arrive as text.
    parser: SimdParser,
    /// The batch's pending vector changes.
    vectors: VectorChanges,
    /// The shard's graphs.
    graphs: Arc<GraphSet>,
    /// The shard's kept network membership and the ids this batch creates for it (see
    /// [`super::network_membership`]); `None` when none is kept for the batch's base commit.
    membership: Option<(Arc<MembershipSlot>, MembershipChanges)>,
    /// The words whose `word_documents` key this batch created or deleted (see
    /// [`DictionaryChanges`]).
    dictionary: DictionaryChanges,
    /// Where chunks are analysed ahead (see [`super::analysis_ahead`]); `None`: on this thread.
    ahead_runner: Option<AheadRunner>,
    /// What the last chunk analysed ahead was analysed with, kept while it still holds.
    ahead_context: Option<Arc<AheadContext>>,
}

impl Drop for PreparedBatch {
    /// A batch that ends without committing forgets the graphs it wrote (their caches may
    /// hold its uncommitted state).
    fn drop(&mut self) {
        if self.transaction.is_some() {
            self.graphs.forget(self.vectors.touched());
        }
    }
}

/// The document encoder of a batch, loaded when the batch writes its first document.
enum Encoder {
    Unloaded,
    /// The shard has no dictionary (or zstd refused it): lz4 or raw.
    Absent,
    Loaded(DocumentEncoder),
}

/// The document dictionaries a write transaction sees: those it trained, else the shard's
/// committed ones.
struct WriteDictionaries<'a> {
    transaction: &'a WriteTransaction,
    trained: &'a HashMap<u32, Arc<DictionaryDecoder>>,
    decoders: &'a DecoderCache,
}

impl Dictionaries for WriteDictionaries<'_> {
    fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>> {
        if let Some(decoder) = self.trained.get(&id) {
            return Ok(Arc::clone(decoder));
        }
        self.decoders.decoder(id, || {
            let Some(tree) = self.transaction.open_tree(DOCUMENT_DICTIONARIES_TREE)? else {
                return Ok(None);
            };
            Ok(tree.get(&document_key(id))?.map(|bytes| bytes.into_owned()))
        })
    }
}

/// A sampled document: its id, the bytes it is stored in, and its JSON.
struct Sample {
    id: u32,
    stored_bytes: usize,
    json: Vec<u8>,
}

/// Heap bytes a batch's pending facet and word changes may take by default before they are
/// written to the trees (a commit always writes them). Every write rewrites most leaves of the
/// word trees, so fewer, larger writes index faster: on the 886k PyPI documents (two shards),
/// writing every 50,000 documents (about 40 MiB of changes) took 21.4-24.8 s and 36-40 s of CPU
/// against 18.3-22.5 s and 30-37 s for every 150,000 or 400,000, with peak RSS 580-610 MiB
/// against 650-700 MiB. Since the changes are counted as held (in segments, not by a doubling
/// vector's capacity), 160 MiB takes the last batch of that ingest (about 300,000 documents a
/// shard, 130 MiB) in one write, where 128 MiB wrote it twice: 9.6-10.5 s against 11.0-12.5 s
/// over three alternating runs, and peak RSS 600-720 MiB against 720-830 MiB.
pub const PENDING_CHANGES_BYTES_DEFAULT: usize = 160 << 20;

fn load_fields(transaction: &WriteTransaction) -> ShardResult<BTreeMap<String, u16>> {
    let tree = transaction.create_tree(FIELDS_TREE)?;
    let mut fields = BTreeMap::new();
    for entry in tree.range(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        Direction::Forward,
    )? {
        let (key, value) = entry?;
        let path = String::from_utf8(key).map_err(|_| ShardError::corrupted("field path"))?;
        fields.insert(path, keys::decode_field_id(&value)?);
    }
    Ok(fields)
}

impl PreparedBatch {
    /// A batch that rebuilds indexes from the stored documents inside `transaction` (after a
    /// settings change, see [`super::rebuild`]), recorded under the last applied batch uid.
    pub(super) fn for_rebuild(
        transaction: WriteTransaction,
        state: ShardState,
        analyzer: Analyzer,
        decoders: &Arc<DecoderCache>,
        pending_bytes_max: usize,
    ) -> ShardResult<PreparedBatch> {
        // A rebuild re-indexes text or facets only: its vector changes stay empty.
        let graphs = &Arc::new(GraphSet::detached());
        Ok(PreparedBatch {
            batch_uid: state.applied_batch.unwrap_or(0),
            fields: load_fields(&transaction)?,
            transaction: Some(transaction),
            state,
            deltas: Deltas::default(),
            outcome: ApplyOutcome::default(),
            assigned_ids: AssignedIds::default(),
            analyzer,
            pending_bytes_max,
            decoders: Arc::clone(decoders),
            trained: HashMap::new(),
            encoder: Encoder::Unloaded,
            text_scratch: TextScratch::default(),
            parser: SimdParser::new(),
            vectors: VectorChanges::default(),
            graphs: Arc::clone(graphs),
            membership: None,
            dictionary: DictionaryChanges::default(),
            ahead_runner: None,
            ahead_context: None,
        })
    }

    /// Opens batch `batch_uid`'s write transaction; its pending changes are written to the
    /// trees once they take about `pending_bytes_max` heap bytes (see
    /// [`Deltas::estimated_bytes`]).
    pub(crate) fn begin(
        database: &Database,
        batch_uid: u64,
        decoders: &Arc<DecoderCache>,
        pending_bytes_max: usize,
        graphs: &Arc<GraphSet>,
        membership: &Arc<MembershipSlot>,
    ) -> ShardResult<PreparedBatch> {
        let transaction = database.begin_write()?;
        let state = ShardState::load_write(&transaction)?;
        let already_applied = state
            .applied_batch
            .is_some_and(|applied| applied >= batch_uid);
        let fields = load_fields(&transaction)?;
        let analyzer = Analyzer::new(&state.text_settings);
        let membership = match already_applied {
            true => None,
            false => membership
                .changes_from(state.applied_batch)
                .map(|changes| (Arc::clone(membership), changes)),
        };
        Ok(PreparedBatch {
            batch_uid,
            transaction: if already_applied {
                transaction.abort();
                None
            } else {
                Some(transaction)
            },
            state,
            fields,
            deltas: Deltas::default(),
            outcome: ApplyOutcome {
                already_applied,
                ..ApplyOutcome::default()
            },
            assigned_ids: AssignedIds::default(),
            analyzer,
            pending_bytes_max,
            decoders: Arc::clone(decoders),
            trained: HashMap::new(),
            encoder: Encoder::Unloaded,
            text_scratch: TextScratch::default(),
            parser: SimdParser::new(),
            vectors: VectorChanges::default(),
            graphs: Arc::clone(graphs),
            membership,
            dictionary: DictionaryChanges::default(),
            ahead_runner: None,
            ahead_context: None,
        })
    }

    /// Records no touched words or documents (nothing will be carried over this batch).
    pub(super) fn skip_touches(&mut self) {
        self.dictionary.skip_touches();
    }

    /// Whether this batch was applied before (its chunks and commit do nothing).
    pub fn is_already_applied(&self) -> bool {
        self.transaction.is_none()
    }

    pub fn batch_uid(&self) -> u64 {
        self.batch_uid
    }

    /// Shares the analysis of the written documents of the chunks of [`AHEAD_OPERATIONS_MIN`]
    /// operations or more with `runner`'s thread (see [`super::analysis_ahead`]).
    pub fn analyze_ahead_with(&mut self, runner: AheadRunner) {
        self.ahead_runner = Some(runner);
    }

    /// Applies the next operations, in order. The facet and word deltas stay in memory
    /// until they take the bound's bytes or the batch commits: a common word's bitmap is then
    /// rewritten once per batch, not once per chunk.
    pub fn apply_chunk(&mut self, operations: Vec<Operation>) -> ShardResult<()> {
        if self.transaction.is_none() {
            return Ok(());
        }
        match &self.ahead_runner {
            Some(runner) if operations.len() >= AHEAD_OPERATIONS_MIN => {
                let runner = Arc::clone(runner);
                let context = self.ahead_context()?;
                let answers = analysis_ahead::start(&runner, context, operations);
                self.apply_answers(answers)?;
            }
            _ => {
                for operation in operations {
                    turns::checkpoint();
                    self.apply_operation(operation)?;
                }
            }
        }
        self.flush_when_full()
    }

    /// Applies the answers to a chunk's operations, in order.
    fn apply_answers(&mut self, mut chunk: AheadChunk) -> ShardResult<()> {
        while let Some(answer) = chunk.next(&mut self.parser) {
            turns::checkpoint();
            match answer? {
                Ahead::Analyzed {
                    external_id,
                    document,
                } => self.replace_analyzed(&external_id, *document)?,
                Ahead::AsIs(operation) => self.apply_operation(operation)?,
                Ahead::Failed(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// The context chunks are analysed ahead with: the last one while the batch has numbered
    /// no field and changed no dictionary since, else a new one.
    fn ahead_context(&mut self) -> ShardResult<Arc<AheadContext>> {
        let dictionary = self.encoder_dictionary()?;
        if let Some(context) = &self.ahead_context {
            if context.field_count() == self.fields.len() && context.dictionary() == dictionary {
                return Ok(Arc::clone(context));
            }
        }
        let encoder = match self.load_encoder()? {
            Encoder::Loaded(encoder) if Some(encoder.dictionary()) == dictionary => Some(encoder),
            _ => None,
        };
        let context = Arc::new(AheadContext::new(
            &self.state.text_settings,
            &self.state.settings,
            &self.fields,
            encoder,
        ));
        self.ahead_context = Some(Arc::clone(&context));
        Ok(context)
    }

    /// The dictionary this batch compresses documents with now (`None`: lz4 or raw).
    fn encoder_dictionary(&mut self) -> ShardResult<Option<u32>> {
        Ok(match self.loaded_encoder()? {
            Encoder::Loaded(encoder) => Some(encoder.dictionary()),
            Encoder::Unloaded | Encoder::Absent => None,
        })
    }

    /// Applies one operation on this thread.
    fn apply_operation(&mut self, operation: Operation) -> ShardResult<()> {
        match operation {
            Operation::Replace {
                external_id,
                document,
            } => self.replace(&external_id, &document),
            Operation::ReplaceText { external_id, text } => {
                let document = self
                    .parser
                    .parse(&text)
                    .map_err(|error| ShardError::InvalidDocumentValue(error.to_string()))?;
                self.replace(&external_id, &document)
            }
            Operation::Delete { external_id } => self.delete(&external_id),
            Operation::DeleteAll => self.delete_all(),
            Operation::SetGenerated {
                external_id,
                generated,
            } => self.record_generated(&external_id, generated),
            Operation::SetStoredVectors {
                external_id,
                vectors,
            } => self.record_stored_copies(&external_id, vectors),
        }
    }

    /// Writes the pending changes once they take the bound's bytes.
    fn flush_when_full(&mut self) -> ShardResult<()> {
        if self.deltas.estimated_bytes() + self.vectors.estimated_bytes() >= self.pending_bytes_max
        {
            self.flush()?;
        }
        Ok(())
    }

    /// Internal ids for documents this batch creates, chosen by the caller so that ids are
    /// unique and ordered across an index's shards (the order a listing merges by). A new
    /// document without an assigned id takes the shard's smallest free id.
    ///
    /// The caller assigns ids only to distinct external ids this shard does not store (the
    /// coordinator asks the shards first): such a document is created without a lookup, and
    /// an assigned id found stored at the flush fails the batch as corruption.
    pub fn assign_ids(&mut self, assigned: impl IntoIterator<Item = (String, u32)>) {
        self.assigned_ids.extend(assigned);
    }

    /// What the chunks applied so far did.
    pub fn outcome(&self) -> ApplyOutcome {
        self.outcome
    }

    /// Records the batch uid and commits: the batch becomes visible and durable at once.
    pub fn commit(self) -> ShardResult<ApplyOutcome> {
        self.commit_with_changes().map(|(outcome, _)| outcome)
    }

    /// [`PreparedBatch::commit`], answering also the words the batch added to and removed
    /// from the dictionary.
    pub(super) fn commit_with_changes(mut self) -> ShardResult<(ApplyOutcome, DictionaryChanges)> {
        let Some(transaction) = self.transaction.take() else {
            return Ok((self.outcome, DictionaryChanges::default()));
        };
        self.state.applied_batch = Some(self.batch_uid);
        flush_deltas(&transaction, &mut self.deltas, &mut self.dictionary)?;
        self.vectors
            .flush(&transaction, &self.state.vector_settings, &self.graphs)?;
        self.state.store(&transaction)?;
        transaction.commit()?;
        for (id, decoder) in self.trained.drain() {
            self.decoders.insert(id, decoder);
        }
        if let Some((slot, changes)) = self.membership.take() {
            slot.committed(changes, &self.state.document_ids, self.state.applied_batch);
        }
        Ok((self.outcome, std::mem::take(&mut self.dictionary)))
    }

    fn transaction(&self) -> &WriteTransaction {
        self.transaction
            .as_ref()
            .expect("operations run only while the transaction is open")
    }

    fn flush(&mut self) -> ShardResult<()> {
        let transaction = self
            .transaction
            .as_ref()
            .expect("flush runs only while the transaction is open");
        flush_deltas(transaction, &mut self.deltas, &mut self.dictionary)?;
        self.vectors
            .flush(transaction, &self.state.vector_settings, &self.graphs)?;
        self.state.store(transaction)
    }

    /// After each document a rebuild re-indexes: writes the pending deltas once they take
    /// the bound's bytes, so a rebuild's memory stays bounded like a batch's.
    pub(super) fn rebuilt_one(&mut self) -> ShardResult<()> {
        self.flush_when_full()
    }

    /// The live documents' internal ids, ascending: what a rebuild re-indexes.
    pub(super) fn live_ids(&self) -> Vec<u32> {
        self.state.document_ids.iter().collect()
    }

    /// The live document `id` as this transaction stores it, decoded.
    pub(super) fn live_document(&self, id: u32) -> ShardResult<Map<String, Value>> {
        let stored = self.stored_document(id)?;
        self.decode(&stored)
    }

    /// Indexes the facet values and geo point of the stored document `id` again (a facet
    /// rebuild: the distribution counts, which the rebuild does not touch, stay as they were).
    pub(super) fn reindex_facets(
        &mut self,
        id: u32,
        document: &Map<String, Value>,
    ) -> ShardResult<()> {
        let document = without_vectors(document);
        let extracted = extract(
            &document,
            &|path| self.state.settings.is_faceted(path),
            self.state.settings.keeps_geo(),
        );
        self.contribute(id, &document, &extracted, true)?;
        self.deltas.distribution.clear();
        Ok(())
    }

    /// Indexes the words of the stored document `id` again (a text rebuild).
    pub(super) fn reindex_text(
        &mut self,
        id: u32,
        document: &Map<String, Value>,
    ) -> ShardResult<()> {
        self.contribute_text(id, &without_vectors(document), true)
    }

    /// Writes a rebuild's pending changes and the state, and commits; unlike
    /// [`PreparedBatch::commit`], the applied batch uid stays as it was.
    pub(super) fn commit_rebuild(mut self) -> ShardResult<()> {
        let transaction = self
            .transaction
            .take()
            .expect("the rebuild transaction is open");
        // A rebuild's commit view is made lazily: its dictionary changes are not kept.
        flush_deltas(&transaction, &mut self.deltas, &mut self.dictionary)?;
        self.state.store(&transaction)?;
        transaction.commit()?;
        Ok(())
    }

    /// Where the stored documents of this transaction find their dictionaries.
    fn dictionaries(&self) -> WriteDictionaries<'_> {
        WriteDictionaries {
            transaction: self.transaction(),
            trained: &self.trained,
            decoders: &self.decoders,
        }
    }

    /// The document stored as `stored` in this transaction.
    fn decode(&self, stored: &[u8]) -> ShardResult<Map<String, Value>> {
        document_codec::decode(stored, &self.dictionaries())
    }

    /// The stored form of `json`: with the shard's dictionary when it has one.
    fn encode(&mut self, json: &[u8]) -> ShardResult<Vec<u8>> {
        Ok(match self.loaded_encoder()? {
            Encoder::Loaded(encoder) => encoder.compress(json),
            Encoder::Unloaded | Encoder::Absent => document_codec::compress(json),
        })
    }

    /// The batch's encoder, loaded on first use.
    fn loaded_encoder(&mut self) -> ShardResult<&mut Encoder> {
        if let Encoder::Unloaded = self.encoder {
            self.encoder = self.load_encoder()?;
        }
        Ok(&mut self.encoder)
    }

    fn load_encoder(&self) -> ShardResult<Encoder> {
        let Some(id) = self.state.dictionary else {
            return Ok(Encoder::Absent);
        };
        let tree = self.transaction().create_tree(DOCUMENT_DICTIONARIES_TREE)?;
        let bytes = tree
            .get(&document_key(id))?
            .ok_or_else(|| document_codec::unknown_dictionary(id))?;
        Ok(match DocumentEncoder::new(id, &bytes, DICTIONARY_LEVEL) {
            Some(encoder) => Encoder::Loaded(encoder),
            None => Encoder::Absent,
        })
    }

    /// Whether the shard, as this batch left it so far, is due a (newer) dictionary: it holds
    /// [`DICTIONARY_TRAINING_DOCUMENTS`] documents (or [`DICTIONARY_TRAINING_DOCUMENTS_MIN`]
    /// taking a whole sample's bytes), and [`DICTIONARY_RETRAINING_GROWTH`] times those of
    /// the last training.
    fn training_due(&self) -> bool {
        let count = self.state.document_ids.len();
        let enough = count >= DICTIONARY_TRAINING_DOCUMENTS
            || (count >= DICTIONARY_TRAINING_DOCUMENTS_MIN
                && self.state.document_bytes >= DICTIONARY_SAMPLE_BYTES as u64);
        enough
            && count
                >= self
                    .state
                    .dictionary_trained_at
                    .saturating_mul(DICTIONARY_RETRAINING_GROWTH)
    }

    /// Trains a dictionary from a sample of the shard's documents, stores it and makes it the
    /// one documents are written with, and stores the sampled documents again with it. When
    /// zstd cannot train (or refuses what it trained), nothing changes but the count the next
    /// try waits for: the batch goes on with the forms it had.
    fn train_dictionary(&mut self) -> ShardResult<()> {
        self.state.dictionary_trained_at = self.state.document_ids.len();
        let id = self.state.next_dictionary_id;
        let Some(next_id) = id.checked_add(1) else {
            return Ok(());
        };
        let samples = self.sample_documents()?;
        let Some(bytes) = document_codec::train_dictionary(
            samples.iter().map(|sample| &sample.json[..]),
            DICTIONARY_BYTES,
        ) else {
            return Ok(());
        };
        let (Some(mut encoder), Ok(decoder)) = (
            DocumentEncoder::new(id, &bytes, DICTIONARY_LEVEL),
            DictionaryDecoder::new(&bytes),
        ) else {
            return Ok(());
        };
        self.transaction()
            .create_tree(DOCUMENT_DICTIONARIES_TREE)?
            .put(&document_key(id), &bytes)?;
        self.state.next_dictionary_id = next_id;
        self.state.dictionary = Some(id);
        self.trained.insert(id, Arc::new(decoder));
        let documents = self.transaction().create_tree(DOCUMENTS_TREE)?;
        let mut document_bytes = self.state.document_bytes;
        for sample in samples {
            let stored = encoder.compress(&sample.json);
            documents.put(&document_key(sample.id), &stored)?;
            document_bytes =
                document_bytes.saturating_sub(sample.stored_bytes as u64) + stored.len() as u64;
        }
        self.state.document_bytes = document_bytes;
        self.encoder = Encoder::Loaded(encoder);
        Ok(())
    }

    /// The JSON of live documents, up to [`DICTIONARY_SAMPLE_BYTES`], spread over the shard:
    /// taken at the ranks of the bit-reversed counter, every prefix of which is spread evenly
    /// (all of them while the shard holds less than the budget).
    fn sample_documents(&self) -> ShardResult<Vec<Sample>> {
        let ids = &self.state.document_ids;
        let count = ids.len();
        let bits = u64::BITS - count.saturating_sub(1).leading_zeros();
        let documents = self.transaction().create_tree(DOCUMENTS_TREE)?;
        let dictionaries = self.dictionaries();
        let mut samples = Vec::new();
        let mut sampled_bytes = 0;
        for index in 0..1u64 << bits {
            let rank = index
                .reverse_bits()
                .checked_shr(u64::BITS - bits)
                .unwrap_or(0);
            let Some(id) = u32::try_from(rank).ok().and_then(|rank| ids.select(rank)) else {
                continue;
            };
            let stored = documents
                .get(&document_key(id))?
                .ok_or_else(|| ShardError::corrupted("live id without document"))?;
            let json = document_codec::decompress(&stored, &dictionaries)?;
            sampled_bytes += json.len();
            samples.push(Sample {
                id,
                stored_bytes: stored.len(),
                json,
            });
            if sampled_bytes >= DICTIONARY_SAMPLE_BYTES {
                break;
            }
        }
        Ok(samples)
    }

    fn stored_document(&self, id: u32) -> ShardResult<Vec<u8>> {
        let documents = self.transaction().create_tree(DOCUMENTS_TREE)?;
        let stored = documents
            .get(&document_key(id))?
            .ok_or_else(|| ShardError::corrupted("live id without document"))?;
        Ok(stored.into_owned())
    }

    /// The internal id of the document stored (or created by this batch) under `external_id`.
    fn existing_id(&mut self, external_id: &str) -> ShardResult<Option<u32>> {
        if let Some(id) = self.deltas.new_external_ids.get(external_id)? {
            return Ok(Some(id));
        }
        let tree = self.transaction().create_tree(EXTERNAL_IDS_TREE)?;
        match tree.get(external_id.as_bytes())? {
            Some(bytes) => Ok(Some(keys::document_from_key(&bytes)?)),
            None => Ok(None),
        }
    }

    fn replace(&mut self, external_id: &str, document: &Map<String, Value>) -> ShardResult<()> {
        if self.state.settings.keeps_geo() {
            check_geo_field(external_id, document)?;
        }
        let (document, vectors) = self.split_vectors(external_id, document)?;
        let document = document.as_ref();
        let stored = self.encode(&document_codec::document_json(document))?;
        let analyzed = Analyzed {
            extracted: None,
            text: None,
        };
        self.store_replacement(external_id, document, vectors, stored, analyzed)
    }

    /// [`PreparedBatch::replace`] with a document analysed ahead (it has no `_vectors`): its
    /// stored form is compressed again when the batch changed dictionary since, its text
    /// analysed again when one of its fields had no id then.
    fn replace_analyzed(
        &mut self,
        external_id: &str,
        analyzed: AnalyzedDocument,
    ) -> ShardResult<()> {
        let AnalyzedDocument {
            document,
            stored,
            dictionary,
            extracted,
            text,
        } = analyzed;
        if self.state.settings.keeps_geo() {
            check_geo_field(external_id, &document)?;
        }
        let stored = if dictionary == self.encoder_dictionary()? {
            stored
        } else {
            self.encode(&document_codec::document_json(&document))?
        };
        let analyzed = Analyzed {
            extracted: Some(extracted),
            text,
        };
        self.store_replacement(external_id, &document, Vec::new(), stored, analyzed)
    }

    /// Stores `document` (without its `vectors`, stored as `stored`) under `external_id`, and
    /// indexes it with what was `analyzed` of it ahead (the rest is analysed here).
    fn store_replacement(
        &mut self,
        external_id: &str,
        document: &Map<String, Value>,
        vectors: Vec<SlotVectors>,
        stored: Vec<u8>,
        analyzed: Analyzed,
    ) -> ShardResult<()> {
        let (id, created) = match self.assigned_ids.take(external_id) {
            // The caller assigns ids only to documents no shard stores (see
            // [`PreparedBatch::assign_ids`]): new, without a lookup. The flush that writes the
            // id checks it is not stored.
            Some(assigned) => {
                let id = self.state.take(assigned)?;
                self.created(external_id, id)?;
                (id, true)
            }
            None => match self.existing_id(external_id)? {
                Some(id) => {
                    let old = self.stored_document(id)?;
                    if old == stored {
                        self.record_vectors(external_id, id, vectors, false)?;
                        self.outcome.replaced += 1;
                        return Ok(());
                    }
                    self.unindex(id, &old)?;
                    (id, false)
                }
                None => {
                    let id = self.state.allocate()?;
                    self.created(external_id, id)?;
                    (id, true)
                }
            },
        };
        self.record_vectors(external_id, id, vectors, created)?;
        self.transaction()
            .create_tree(DOCUMENTS_TREE)?
            .put(&document_key(id), &stored)?;
        self.state.document_bytes += stored.len() as u64;
        let indexed = without_vectors(document);
        let extracted = analyzed.extracted.unwrap_or_else(|| {
            extract(
                &indexed,
                &|path| self.state.settings.is_faceted(path),
                self.state.settings.keeps_geo(),
            )
        });
        self.register_fields(&extracted)?;
        self.contribute(id, &indexed, &extracted, true)?;
        match analyzed.text {
            // Its searchable fields all had ids, which never change (the fields map only
            // grows).
            Some(text) => self.contribute_analyzed_text(id, &text)?,
            None => self.contribute_text(id, &indexed, true)?,
        }
        self.outcome.replaced += 1;
        if self.training_due() {
            self.train_dictionary()?;
        }
        Ok(())
    }

    /// Holds the external id of the document `id` the batch creates, and records it for the
    /// kept network membership.
    fn created(&mut self, external_id: &str, id: u32) -> ShardResult<()> {
        self.deltas.new_external_ids.insert(external_id, id)?;
        if let Some((_, changes)) = &mut self.membership {
            changes.created(external_id, id);
        }
        Ok(())
    }

    fn delete(&mut self, external_id: &str) -> ShardResult<()> {
        let Some(id) = self.existing_id(external_id)? else {
            return Ok(());
        };
        let old = self.stored_document(id)?;
        self.unindex(id, &old)?;
        self.transaction()
            .create_tree(DOCUMENTS_TREE)?
            .delete(&document_key(id))?;
        if !self.deltas.new_external_ids.remove(external_id)? {
            self.transaction()
                .create_tree(EXTERNAL_IDS_TREE)?
                .delete(external_id.as_bytes())?;
        }
        self.state.release(id);
        self.vectors
            .remove_document(&self.state.vector_settings, id);
        self.outcome.deleted += 1;
        Ok(())
    }

    /// Removes what the stored document `old` of `id` contributes to the indexes.
    fn unindex(&mut self, id: u32, old: &[u8]) -> ShardResult<()> {
        self.state.document_bytes = self.state.document_bytes.saturating_sub(old.len() as u64);
        let document = self.decode(old)?;
        let document = without_vectors(&document).into_owned();
        let extracted = extract(
            &document,
            &|path| self.state.settings.is_faceted(path),
            self.state.settings.keeps_geo(),
        );
        self.contribute(id, &document, &extracted, false)?;
        self.contribute_text(id, &document, false)?;
        self.transaction()
            .create_tree(GEO_TREE)?
            .delete(&document_key(id))?;
        Ok(())
    }

    fn delete_all(&mut self) -> ShardResult<()> {
        let transaction = self.transaction();
        for name in DOCUMENT_TREES
            .iter()
            .chain([GEO_TREE].iter())
            .chain(&TEXT_TREES)
        {
            transaction.delete_tree(name)?;
        }
        self.deltas = Deltas::default();
        self.dictionary.cleared();
        self.vectors.clear_all();
        self.outcome.deleted += self.state.document_ids.len();
        self.state.clear_documents();
        self.encoder = Encoder::Absent;
        Ok(())
    }

    fn register_fields(&mut self, extracted: &Extracted) -> ShardResult<()> {
        for path in &extracted.paths {
            if self.fields.contains_key(path) {
                continue;
            }
            let id = next_field_id(self.fields.len())?;
            self.transaction()
                .create_tree(FIELDS_TREE)?
                .put(path.as_bytes(), &keys::encode_field_id(id))?;
            self.fields.insert(path.clone(), id);
        }
        Ok(())
    }

    /// Adds (`add`) or removes a document's words: word bitmaps (through the deltas), word
    /// occurrences and field lengths.
    fn contribute_text(
        &mut self,
        id: u32,
        document: &Map<String, Value>,
        add: bool,
    ) -> ShardResult<()> {
        let fields = &self.fields;
        let scratch = &mut self.text_scratch;
        scratch.clear();
        let words = &mut self.deltas.words;
        let field_lengths = each_document_word(
            &self.analyzer,
            &self.state.text_settings,
            document,
            |path| fields.get(path).copied(),
            // A word numbered here stays in the batch's changes even if the analysis fails
            // later: harmless, since an error fails the whole batch.
            &mut |word, occurrence| scratch.occurrences.push((words.number(word), occurrence)),
        )
        .map_err(ShardError::Corrupted)?;
        self.record_text(id, &field_lengths, add)
    }

    /// Adds the words of a document analysed ahead, as [`PreparedBatch::contribute_text`].
    fn contribute_analyzed_text(&mut self, id: u32, text: &AnalyzedText) -> ShardResult<()> {
        let scratch = &mut self.text_scratch;
        scratch.clear();
        let words = &mut self.deltas.words;
        scratch.occurrences.extend(
            text.occurrences()
                .map(|(word, occurrence)| (words.number(word), occurrence)),
        );
        self.record_text(id, &text.field_lengths, true)
    }

    /// Adds (`add`) or removes the words of document `id` the scratch's occurrences hold, and
    /// its `field_lengths`.
    fn record_text(
        &mut self,
        id: u32,
        field_lengths: &BTreeMap<u16, u16>,
        add: bool,
    ) -> ShardResult<()> {
        self.dictionary.touched_document(id);
        let scratch = &mut self.text_scratch;
        let words = &mut self.deltas.words;
        scratch.occurrences.sort_unstable();
        scratch.occurrences.dedup();
        for group in scratch
            .occurrences
            .chunk_by(|left, right| left.0 == right.0)
        {
            let (number, first) = group[0];
            words.record_number(
                number,
                id,
                first,
                group[1..].iter().map(|(_, occurrence)| *occurrence),
                add,
            );
        }
        scratch.fill_near_pairs();
        for &(distance, left, right) in &scratch.pairs {
            self.deltas.pairs[usize::from(distance) - 1].record(left, right, id, add);
        }
        for (field, count) in field_lengths {
            if let Some(key) = field_word_count_key(*field, *count) {
                self.deltas.field_word_counts.record(&key, id, add);
            }
        }
        let transaction = self
            .transaction
            .as_ref()
            .expect("operations run only while the transaction is open");
        let lengths = transaction.create_tree(FIELD_LENGTHS_TREE)?;
        if add && !field_lengths.is_empty() {
            lengths.put(&document_key(id), &encode_field_lengths(field_lengths))?;
        } else if !add {
            lengths.delete(&document_key(id))?;
        }
        Ok(())
    }

    /// Adds (`add`) or removes a document's facet values, geo point and distribution counts.
    fn contribute(
        &mut self,
        id: u32,
        document: &Map<String, Value>,
        extracted: &Extracted,
        add: bool,
    ) -> ShardResult<()> {
        let step = if add { 1 } else { -1 };
        for key in document.keys() {
            *self.deltas.distribution.entry(key.clone()).or_default() += step;
        }
        for (path, facets) in &extracted.facets {
            let field = *self
                .fields
                .get(path)
                .ok_or_else(|| ShardError::corrupted("faceted path missing from fields map"))?;
            let change = |delta: &mut Delta| {
                if add { delta.add(id) } else { delta.remove(id) }
            };
            let deltas = &mut self.deltas;
            for ordered in &facets.numbers {
                let key = keys::ordered_number_key(field, *ordered);
                change(facet_delta(
                    &mut deltas.numbers,
                    key,
                    &mut deltas.facet_bytes,
                ));
            }
            for (normalized, original) in &facets.strings {
                let key = keys::string_key(field, normalized);
                let delta = facet_delta(&mut deltas.strings, key, &mut deltas.facet_bytes);
                if add && delta.original.is_none() {
                    deltas.facet_bytes += original.len();
                    delta.original = Some(original.clone());
                }
                change(delta);
            }
            for presence in &facets.presence {
                let key = keys::presence_key(field, *presence).to_vec();
                change(facet_delta(
                    &mut deltas.presence,
                    key,
                    &mut deltas.facet_bytes,
                ));
            }
        }
        if let (true, Some(point)) = (add, extracted.geo) {
            self.transaction()
                .create_tree(GEO_TREE)?
                .put(&document_key(id), &keys::encode_geo_point(point))?;
        }
        Ok(())
    }
}

/// The delta of facet value `key` in `deltas`, counting into `bytes` what the change and, for
/// a value new to the deltas, the value itself take.
fn facet_delta<'d>(
    deltas: &'d mut BTreeMap<Vec<u8>, Delta>,
    key: Vec<u8>,
    bytes: &mut usize,
) -> &'d mut Delta {
    *bytes += FACET_CHANGE_BYTES;
    match deltas.entry(key) {
        std::collections::btree_map::Entry::Occupied(entry) => entry.into_mut(),
        std::collections::btree_map::Entry::Vacant(entry) => {
            *bytes += entry.key().len() + NEW_FACET_VALUE_BYTES;
            entry.insert(Delta::default())
        }
    }
}

/// Buffers the analysis of one document reuses from the last.
#[derive(Debug, Default)]
struct TextScratch {
    /// Every occurrence of the document's words, as (word number, occurrence).
    occurrences: Vec<(u32, Occurrence)>,
    /// The occurrences as (field, position, word number).
    placed: Vec<(u16, u16, u32)>,
    /// The distinct (distance, left word number, right word number) of the document (see
    /// [`TextScratch::fill_near_pairs`]).
    pairs: Vec<(u8, u32, u32)>,
}

impl TextScratch {
    /// Empties every buffer, keeping its capacity.
    fn clear(&mut self) {
        self.occurrences.clear();
        self.placed.clear();
        self.pairs.clear();
    }

    /// Fills `pairs` with the distinct pairs of words of the document where the second stands
    /// 1 to [`PAIR_DISTANCE_MAX`] positions after the first in one field (what the pair trees
    /// hold), with that distance, from `occurrences`.
    fn fill_near_pairs(&mut self) {
        self.placed.clear();
        self.placed.extend(
            self.occurrences
                .iter()
                .map(|(number, occurrence)| (occurrence.field, occurrence.position, *number)),
        );
        self.placed.sort_unstable();
        self.pairs.clear();
        for (index, &(field, position, left)) in self.placed.iter().enumerate() {
            for &(next_field, next_position, right) in &self.placed[index + 1..] {
                if next_field != field {
                    break;
                }
                // Sorted by field then position: within a field, positions never go back.
                let distance = next_position - position;
                if usize::from(distance) > PAIR_DISTANCE_MAX {
                    break;
                }
                // Two words at one position (never made by the analysis) are no pair.
                if let Ok(distance @ 1..) = u8::try_from(distance) {
                    self.pairs.push((distance, left, right));
                }
            }
        }
        self.pairs.sort_unstable();
        self.pairs.dedup();
    }
}

/// Writes the pending deltas into the trees and empties them; the words that appear in or
/// leave `word_documents` are recorded in `dictionary`.
fn flush_deltas(
    transaction: &WriteTransaction,
    deltas: &mut Deltas,
    dictionary: &mut DictionaryChanges,
) -> ShardResult<()> {
    // Both are recorded by the word numbers the vocabulary ranks.
    let vocabulary = deltas.words.take_vocabulary();
    for (pairs, tree) in deltas.pairs.iter_mut().zip(WORD_PAIR_TREES) {
        pairs.write(transaction, tree, &vocabulary)?;
    }
    deltas.words.write(transaction, &vocabulary, dictionary)?;
    deltas
        .field_word_counts
        .write(transaction, FIELD_WORD_COUNTS_TREE)?;
    deltas.new_external_ids.write(transaction)?;
    let deltas = std::mem::take(deltas);
    let mut buffer = Vec::new();
    for (name, entries) in [
        (FACET_NUMBERS_TREE, deltas.numbers),
        (FACET_PRESENCE_TREE, deltas.presence),
    ] {
        let tree = transaction.create_tree(name)?;
        let mut merge = tree.merge_writer();
        for (key, delta) in entries {
            delta.merge_into(&mut merge, &key, &mut buffer)?;
        }
        merge.finish()?;
    }
    let strings = transaction.create_tree(FACET_STRINGS_TREE)?;
    let mut merge = strings.merge_writer();
    for (key, delta) in deltas.strings {
        let (original, current) = match merge.seek(&key)? {
            Some(bytes) => decode_string_entry(bytes)?,
            None => (
                delta.original.clone().unwrap_or_default(),
                RoaringBitmap::new(),
            ),
        };
        let updated = delta.applied_to(current);
        if updated.is_empty() {
            merge.delete()?;
        } else {
            merge.put(&encode_string_entry(&original, &updated))?;
        }
    }
    merge.finish()?;
    let distribution = transaction.create_tree(FIELD_DISTRIBUTION_TREE)?;
    for (field, change) in deltas.distribution {
        if change == 0 {
            continue;
        }
        let current = match distribution.get(field.as_bytes())? {
            Some(bytes) => decode_u64(&bytes, "field count")?,
            None => 0,
        };
        let updated = current.saturating_add_signed(change);
        if updated == 0 {
            distribution.delete(field.as_bytes())?;
        } else {
            distribution.put(field.as_bytes(), &encode_u64(updated))?;
        }
    }
    Ok(())
}

/// Stores every document not compressed with the shard's dictionary again with it (those it
/// does not shrink stay raw or lz4), then deletes the older dictionaries, which no document
/// uses any more; run by the compaction's repack, in its transaction. A shard without a
/// dictionary is left as it is.
pub(crate) fn recompress_documents(
    transaction: &WriteTransaction,
    decoders: &DecoderCache,
) -> ShardResult<()> {
    let mut state = ShardState::load_write(transaction)?;
    let Some(current) = state.dictionary else {
        return Ok(());
    };
    let dictionaries = transaction.create_tree(DOCUMENT_DICTIONARIES_TREE)?;
    let bytes = dictionaries
        .get(&document_key(current))?
        .ok_or_else(|| document_codec::unknown_dictionary(current))?;
    let Some(mut encoder) = DocumentEncoder::new(current, &bytes, DICTIONARY_LEVEL) else {
        return Ok(());
    };
    let documents = transaction.create_tree(DOCUMENTS_TREE)?;
    let mut outdated = Vec::new();
    for entry in documents.range(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        Direction::Forward,
    )? {
        let (key, stored) = entry?;
        if document_codec::dictionary_of(&stored) != Some(current) {
            outdated.push(keys::document_from_key(&key)?);
        }
    }
    let trained = HashMap::new();
    let source = WriteDictionaries {
        transaction,
        trained: &trained,
        decoders,
    };
    for id in outdated {
        let stored = documents
            .get(&document_key(id))?
            .ok_or_else(|| ShardError::corrupted("listed document missing"))?
            .into_owned();
        let again = encoder.compress(&document_codec::decompress(&stored, &source)?);
        if again != stored {
            documents.put(&document_key(id), &again)?;
            state.document_bytes =
                state.document_bytes.saturating_sub(stored.len() as u64) + again.len() as u64;
        }
    }
    let mut older = Vec::new();
    for entry in dictionaries.range(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        Direction::Forward,
    )? {
        let (key, _) = entry?;
        if keys::document_from_key(&key)? != current {
            older.push(key);
        }
    }
    for key in older {
        dictionaries.delete(&key)?;
    }
    state.store(transaction)
}

#[cfg(test)]
mod tests {
    use super::TextScratch;
    use crate::analysis::Occurrence;

    /// Word numbers → occurrences at (field, position).
    fn scratch(placed: &[(u32, u16, u16)]) -> TextScratch {
        let mut scratch = TextScratch::default();
        scratch.occurrences.extend(
            placed
                .iter()
                .map(|&(word, field, position)| (word, Occurrence { field, position })),
        );
        scratch
    }

    #[test]
    fn near_pairs_are_the_words_one_to_three_positions_apart_in_one_field() {
        // Field 0: 7 8 9 7 _ 8 (a stop word's hole at 4); field 1: 9 right after field 0 ends.
        let mut scratch = scratch(&[
            (7, 0, 0),
            (8, 0, 1),
            (9, 0, 2),
            (7, 0, 3),
            (8, 0, 5),
            (9, 1, 6),
        ]);
        scratch.fill_near_pairs();
        let expected = vec![
            (1, 7, 8), // 0 → 1
            (1, 8, 9), // 1 → 2
            (1, 9, 7), // 2 → 3
            (2, 7, 8), // 3 → 5
            (2, 7, 9), // 0 → 2
            (2, 8, 7), // 1 → 3
            (3, 7, 7), // 0 → 3
            (3, 9, 8), // 2 → 5
        ];
        assert_eq!(scratch.pairs, expected);
        // A second document reuses the buffers and keeps none of the first's pairs.
        scratch.clear();
        scratch.occurrences.push((
            1,
            Occurrence {
                field: 2,
                position: 40,
            },
        ));
        scratch.fill_near_pairs();
        assert!(scratch.pairs.is_empty());
    }
}
