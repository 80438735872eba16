//! Analysing a chunk's documents on two threads: the work of a written document that needs
//! nothing of the batch's state (parsing its text, compressing it, extracting its facet
//! values, cutting its text into words) is shared between a helper thread and the batch
//! thread, and the batch thread merges the analysed documents, in order, into its pending
//! changes.
//!
//! Why: with one shard per index a batch is applied by one thread, and on a server whose other
//! cores had nothing to index, they sat idle while it indexed. That pure work is most of
//! a chunk's CPU for the PyPI documents; the merge (numbering words, recording postings,
//! writing the documents tree) and the commit stay on the batch thread
//! (`tuning/results/analysis-ahead-2026-11-28.md`).
//!
//! How the work is shared: both threads claim the next unanalysed operation; the batch thread
//! takes the answers in order and claims operations itself whenever the next answer is not
//! there yet, so neither thread waits while work is left. Handing the helper every document
//! and merging behind it was slower: the analysis alone then took longer than the merge.
//!
//! Invariants:
//! - the analysis of an operation depends only on the [`AheadContext`] taken when the chunk
//!   started and on the operation itself; the merge checks what the batch may have changed
//!   since (the dictionary documents are compressed with, after a training or a `DeleteAll`;
//!   a field numbered after the context was taken) and redoes that part itself, so a chunk
//!   stores exactly what applying it on one thread stores;
//! - every operation is claimed once and answered once, and the answers are merged in the
//!   operations' order; an answer the helper claimed and never gave (its job panicked) fails
//!   the batch, never skips a document;
//! - at most [`ANALYSED_AHEAD_MAX`] operations are claimed past the last one merged;
//! - a document with `_vectors` is answered as it came (its vectors need the batch's embedder
//!   slots), as are deletions and generated embeddings.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{Map, Value};

use super::apply::Operation;
use super::extract::{Extracted, extract};
use super::settings::FacetSettings;
use crate::analysis::{Analyzer, Occurrence, TextSettings, each_document_word};
use crate::documents::simd_document::SimdParser;
use crate::error::{ShardError, ShardResult};
use crate::index::document_codec::{self, DocumentEncoder};
use crate::vectors::VECTORS_FIELD;

/// A job for the helper thread.
pub type AheadJob = Box<dyn FnOnce() + Send>;

/// Hands a job to the thread that analyses ahead. A job it drops without running leaves the
/// whole chunk to the batch thread.
pub type AheadRunner = Arc<dyn Fn(AheadJob) + Send + Sync>;

/// Fewest operations a chunk needs for its analysis to go to the helper: below that the
/// hand-off costs more than the overlap wins (a single document's update stays on the batch
/// thread).
pub const AHEAD_OPERATIONS_MIN: usize = 32;

/// Most operations claimed past the last one merged: bounds the memory analysed documents
/// wait in (about a MiB for PyPI's documents).
pub const ANALYSED_AHEAD_MAX: usize = 256;

/// What the analysis of a document reads from the batch, taken when a chunk starts.
pub(super) struct AheadContext {
    analyzer: Analyzer,
    text_settings: TextSettings,
    facet_settings: FacetSettings,
    /// The batch's field ids when the context was taken.
    fields: BTreeMap<String, u16>,
    /// Compresses with the dictionary the batch compressed with when the context was taken;
    /// `None` when it compressed without one (lz4 or raw).
    encoder: Option<Mutex<DocumentEncoder>>,
    /// The encoder's dictionary.
    dictionary: Option<u32>,
}

impl AheadContext {
    pub(super) fn new(
        text_settings: &TextSettings,
        facet_settings: &FacetSettings,
        fields: &BTreeMap<String, u16>,
        encoder: Option<DocumentEncoder>,
    ) -> AheadContext {
        AheadContext {
            analyzer: Analyzer::new(text_settings),
            text_settings: text_settings.clone(),
            facet_settings: facet_settings.clone(),
            fields: fields.clone(),
            dictionary: encoder.as_ref().map(DocumentEncoder::dictionary),
            encoder: encoder.map(Mutex::new),
        }
    }

    /// How many fields the batch had numbered when the context was taken.
    pub(super) fn field_count(&self) -> usize {
        self.fields.len()
    }

    /// The dictionary the context compresses with.
    pub(super) fn dictionary(&self) -> Option<u32> {
        self.dictionary
    }

    /// `document`'s stored form, and the dictionary it was compressed with (`None`: none).
    fn stored(&self, document: &Map<String, Value>) -> (Vec<u8>, Option<u32>) {
        let json = document_codec::document_json(document);
        if let Some(encoder) = &self.encoder {
            // A poisoned lock means an earlier job panicked mid-compression: that job's batch
            // failed, and the encoder's context starts every frame afresh anyway.
            let mut encoder = encoder
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            return (encoder.compress(&json), self.dictionary);
        }
        (document_codec::compress(&json), None)
    }

    /// `document`'s words, or `None` when one of its searchable fields had no id yet (the
    /// batch thread numbers it, then analyses the text itself).
    fn text(&self, document: &Map<String, Value>) -> Option<AnalyzedText> {
        let mut text = AnalyzedText::default();
        let field_lengths = each_document_word(
            &self.analyzer,
            &self.text_settings,
            document,
            |path| self.fields.get(path).copied(),
            &mut |word, occurrence| {
                let start = text.words.len();
                text.words.push_str(word);
                text.occurrences.push((start..text.words.len(), occurrence));
            },
        )
        .ok()?;
        text.field_lengths = field_lengths;
        Some(text)
    }
}

/// A document's words, as the analysis gave them.
#[derive(Debug, Default)]
pub(super) struct AnalyzedText {
    /// Every occurrence's word, one after the other.
    words: String,
    /// Each occurrence: its word's bytes in `words`, and where it occurs; in walk order, with
    /// repeats, as [`each_document_word`] visits them.
    occurrences: Vec<(Range<usize>, Occurrence)>,
    /// Words per field.
    pub(super) field_lengths: BTreeMap<u16, u16>,
}

impl AnalyzedText {
    /// Every occurrence with its word.
    pub(super) fn occurrences(&self) -> impl Iterator<Item = (&str, Occurrence)> {
        self.occurrences
            .iter()
            .map(|(range, occurrence)| (&self.words[range.clone()], *occurrence))
    }
}

/// A written document, analysed.
pub(super) struct AnalyzedDocument {
    pub(super) document: Map<String, Value>,
    /// The stored form, compressed with `dictionary`.
    pub(super) stored: Vec<u8>,
    pub(super) dictionary: Option<u32>,
    pub(super) extracted: Extracted,
    /// `None` when the batch thread must analyse the text (see [`AheadContext::text`]).
    pub(super) text: Option<AnalyzedText>,
}

/// The helper's answer for one operation.
pub(super) enum Ahead {
    Analyzed {
        external_id: String,
        document: Box<AnalyzedDocument>,
    },
    /// An operation the batch thread applies as it is.
    AsIs(Operation),
    /// The operation cannot apply (its text does not parse): the batch fails here.
    Failed(ShardError),
}

/// The analysis of one operation.
fn analyze(context: &AheadContext, parser: &mut SimdParser, operation: Operation) -> Ahead {
    let (external_id, document) = match operation {
        Operation::ReplaceText { external_id, text } => match parser.parse(&text) {
            Ok(document) => (external_id, document),
            Err(error) => {
                return Ahead::Failed(ShardError::InvalidDocumentValue(error.to_string()));
            }
        },
        Operation::Replace {
            external_id,
            document,
        } => (external_id, document),
        other => return Ahead::AsIs(other),
    };
    if document.contains_key(VECTORS_FIELD) {
        return Ahead::AsIs(Operation::Replace {
            external_id,
            document,
        });
    }
    let (stored, dictionary) = context.stored(&document);
    let extracted = extract(
        &document,
        &|path| context.facet_settings.is_faceted(path),
        context.facet_settings.keeps_geo(),
    );
    let text = context.text(&document);
    Ahead::Analyzed {
        external_id,
        document: Box::new(AnalyzedDocument {
            document,
            stored,
            dictionary,
            extracted,
            text,
        }),
    }
}

/// A chunk's operations shared by the batch thread and the helper.
struct Shared {
    slots: Mutex<Slots>,
    /// Signalled when an answer arrives, the merge moves on, or the helper ends.
    changed: Condvar,
}

/// Which operations are claimed and which answered.
struct Slots {
    /// Each operation, until a thread claims it.
    operations: Vec<Option<Operation>>,
    /// Each operation's answer, from its claim until the batch thread takes it.
    answers: Vec<Option<Ahead>>,
    /// The first operation no thread claimed.
    unclaimed: usize,
    /// The operations the batch thread took the answers of.
    merged: usize,
    /// The batch thread stopped (at an error, or done): the helper claims nothing more.
    stopped: bool,
    /// The helper's job ended, or was dropped without running.
    helper_gone: bool,
}

impl Shared {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        // A thread panics only while analysing, never while holding the lock.
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wait<'s>(
        &self,
        slots: std::sync::MutexGuard<'s, Slots>,
    ) -> std::sync::MutexGuard<'s, Slots> {
        self.changed
            .wait(slots)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Shared {
    /// Analyses the claimed operation `index` (without holding the lock), stores its answer
    /// and tells the other thread; answers the lock, held again.
    fn analyze_claimed(
        &self,
        context: &AheadContext,
        parser: &mut SimdParser,
        (index, operation): (usize, Operation),
    ) -> std::sync::MutexGuard<'_, Slots> {
        let answer = analyze(context, parser, operation);
        turns::checkpoint();
        let mut slots = self.slots();
        slots.answers[index] = Some(answer);
        self.changed.notify_all();
        slots
    }
}

impl Slots {
    /// Claims the next operation, if any is unclaimed within the window.
    fn claim(&mut self) -> Option<(usize, Operation)> {
        let index = self.unclaimed;
        if self.stopped
            || index >= self.operations.len()
            || index >= self.merged + ANALYSED_AHEAD_MAX
        {
            return None;
        }
        self.unclaimed += 1;
        self.operations[index]
            .take()
            .map(|operation| (index, operation))
    }
}

/// Marks the helper gone when its job ends or is dropped unrun, so that the batch thread never
/// waits for an answer that will not come.
struct HelperEnd(Arc<Shared>);

impl Drop for HelperEnd {
    fn drop(&mut self) {
        self.0.slots().helper_gone = true;
        self.0.changed.notify_all();
    }
}

/// A chunk being analysed by the helper and the batch thread, its answers taken in order.
pub(super) struct AheadChunk {
    shared: Arc<Shared>,
    context: Arc<AheadContext>,
}

impl AheadChunk {
    /// The next operation's answer, analysing the next unclaimed operations on this thread
    /// while it is not there; `None` once every operation was answered.
    pub(super) fn next(&mut self, parser: &mut SimdParser) -> Option<ShardResult<Ahead>> {
        let mut slots = self.shared.slots();
        let index = slots.merged;
        if index == slots.operations.len() {
            return None;
        }
        loop {
            if let Some(answer) = slots.answers[index].take() {
                slots.merged += 1;
                drop(slots);
                self.shared.changed.notify_all();
                return Some(Ok(answer));
            }
            if let Some(claimed) = slots.claim() {
                drop(slots);
                slots = self.shared.analyze_claimed(&self.context, parser, claimed);
                continue;
            }
            if slots.helper_gone {
                return Some(Err(ShardError::corrupted(
                    "the analysis of a chunk ended before its last document",
                )));
            }
            slots = self.shared.wait(slots);
        }
    }
}

impl Drop for AheadChunk {
    /// Stops the helper claiming (after an error, the rest of the chunk is not needed).
    fn drop(&mut self) {
        self.shared.slots().stopped = true;
        self.shared.changed.notify_all();
    }
}

/// The helper's share: claims and analyses operations until none is left.
fn help(shared: &Shared, context: &AheadContext) {
    let mut parser = SimdParser::new();
    let mut slots = shared.slots();
    loop {
        if let Some(claimed) = slots.claim() {
            drop(slots);
            slots = shared.analyze_claimed(context, &mut parser, claimed);
            continue;
        }
        let exhausted = slots.unclaimed >= slots.operations.len();
        if slots.stopped || exhausted {
            return;
        }
        // The window is full: wait for the merge to move on.
        slots = shared.wait(slots);
    }
}

/// Starts analysing `operations` on `runner`'s thread; the batch thread shares the work as it
/// takes the answers (see [`AheadChunk::next`]).
pub(super) fn start(
    runner: &AheadRunner,
    context: Arc<AheadContext>,
    operations: Vec<Operation>,
) -> AheadChunk {
    let count = operations.len();
    let shared = Arc::new(Shared {
        slots: Mutex::new(Slots {
            operations: operations.into_iter().map(Some).collect(),
            answers: std::iter::repeat_with(|| None).take(count).collect(),
            unclaimed: 0,
            merged: 0,
            stopped: false,
            helper_gone: false,
        }),
        changed: Condvar::new(),
    });
    let end = HelperEnd(Arc::clone(&shared));
    let helper_context = Arc::clone(&context);
    runner(Box::new(move || {
        help(&end.0, &helper_context);
        drop(end);
    }));
    AheadChunk { shared, context }
}
