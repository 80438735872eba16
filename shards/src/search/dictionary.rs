//! The word dictionary of a shard as an FST, kept in memory per commit: what typo derivations
//! walk with a Levenshtein automaton (a walk over the `word_documents` tree would seek the
//! B-tree once per dead branch, which costs milliseconds per query word).
//!
//! Invariant: a dictionary holds exactly the `word_documents` keys of the commit it was built
//! from; the shard's commit view ([`crate::shard::ShardSnapshot::dictionary`]) builds it on
//! the first search after a commit and shares it with every later snapshot of that commit,
//! unless the batch that made the commit handed it over already (the previous commit's with
//! the words the batch added and removed, see `shard::dictionary_changes`).
//!
//! A dictionary is a large FST shared between commits (`base`) and two small ones: the words
//! added since that FST was built (`added`, none of them in `base`) and the words of `base`
//! gone since (`removed`). A commit that changes a few thousand words then builds two small
//! FSTs instead of the whole dictionary again: rebuilding a shard's whole dictionary at every
//! commit was about a quarter of the indexing CPU of a steady stream of small replacing
//! batches, and nearly all of it when the documents barely changed
//! (`tuning/results/search-under-writes-2026-11-26b.md`, `dictionary-delta-2026-11-26.md`). The small ones are merged into a
//! new `base` once they hold more than [`DELTA_SHARE_DIVISOR`]th of it (see
//! `shard::dictionary_changes`). Every read gives the same words, in the same byte order, as
//! one FST of the whole dictionary would.

use std::sync::Arc;

use fst::{Automaton, IntoStreamer, Streamer};
use levenshtein_automata::{DFA, Distance, SINK_STATE};
use storage_engine::{Direction, ReadTransaction};

use crate::error::{ShardError, ShardResult};

use crate::index::trees::WORD_DOCUMENTS_TREE;

/// One FST of words.
pub type WordSet = fst::Set<Vec<u8>>;

/// The delta words (`added` plus `removed`) a dictionary may hold: a base of `n` words keeps
/// at most `n / DELTA_SHARE_DIVISOR` of them (and at least [`DELTA_WORDS_MIN`]) before they
/// are merged into a new base.
pub const DELTA_SHARE_DIVISOR: usize = 8;
/// The delta words any dictionary may hold before a merge, however small its base.
pub const DELTA_WORDS_MIN: usize = 4096;

/// The words of one commit, in byte order (see the module documentation).
#[derive(Debug, Clone)]
pub struct Dictionary {
    base: Arc<WordSet>,
    added: WordSet,
    removed: WordSet,
}

impl Dictionary {
    /// A dictionary of exactly `words`.
    pub fn from_words(words: WordSet) -> Dictionary {
        Dictionary {
            base: Arc::new(words),
            added: WordSet::default(),
            removed: WordSet::default(),
        }
    }

    /// `base` (shared) with `added` (no word of `base`) and without `removed` (words of
    /// `base`).
    pub fn with_delta(base: Arc<WordSet>, added: WordSet, removed: WordSet) -> Dictionary {
        debug_assert!(
            added
                .stream()
                .into_bytes()
                .iter()
                .all(|word| !base.contains(word)),
            "an added word is in the base"
        );
        Dictionary {
            base,
            added,
            removed,
        }
    }

    /// The bytes its automata take (the base counted whole, though consecutive commits may
    /// share it).
    pub fn bytes(&self) -> usize {
        [&*self.base, &self.added, &self.removed]
            .iter()
            .map(|set| set.as_fst().as_bytes().len())
            .sum()
    }

    /// The shared large FST.
    pub fn base(&self) -> &Arc<WordSet> {
        &self.base
    }

    /// The words added since the base was built.
    pub fn added(&self) -> &WordSet {
        &self.added
    }

    /// The words of the base gone since it was built.
    pub fn removed(&self) -> &WordSet {
        &self.removed
    }

    /// Whether the delta of `base_words` words holding `delta_words` words must be merged.
    pub fn delta_is_full(base_words: usize, delta_words: usize) -> bool {
        delta_words > (base_words / DELTA_SHARE_DIVISOR).max(DELTA_WORDS_MIN)
    }

    /// Whether `word` is in the dictionary.
    pub fn contains(&self, word: impl AsRef<[u8]>) -> bool {
        let word = word.as_ref();
        self.added.contains(word) || (self.base.contains(word) && !self.removed.contains(word))
    }

    /// Calls `found` with every word in `[start, end)` accepted by `automaton`, with the
    /// automaton's state at its end, in byte order, until `found` answers `false`. The base
    /// and the added words are read as two streams merged on the fly: a walk that stops early
    /// reads no further in either.
    pub fn walk_matches<A>(
        &self,
        automaton: A,
        start: &[u8],
        end: Option<&[u8]>,
        found: &mut dyn FnMut(&[u8], A::State) -> bool,
    ) where
        A: Automaton + Clone,
        A::State: Clone,
    {
        let mut added = Lookahead::new(range_search(&self.added, automaton.clone(), start, end));
        let mut base = range_search(&self.base, automaton, start, end);
        while let Some((word, state)) = base.next() {
            if self.removed.contains(word) {
                continue;
            }
            while added.is_before(word) {
                if let Some((next, next_state)) = added.take()
                    && !found(&next, next_state)
                {
                    return;
                }
            }
            if !found(word, state) {
                return;
            }
        }
        while let Some((next, next_state)) = added.take() {
            if !found(&next, next_state) {
                return;
            }
        }
    }

    /// How many words lie in `[start, end)`, counting no further than `at_most`.
    pub fn count_in(&self, start: &[u8], end: Option<&[u8]>, at_most: usize) -> usize {
        let mut count = 0;
        self.walk_matches(fst::automaton::AlwaysMatch, start, end, &mut |_, ()| {
            count += 1;
            count < at_most
        });
        count
    }

    /// Every word, in byte order.
    pub fn words(&self) -> Vec<Vec<u8>> {
        let mut words = Vec::new();
        self.walk_matches(fst::automaton::AlwaysMatch, &[], None, &mut |word, ()| {
            words.push(word.to_vec());
            true
        });
        words
    }
}

/// The words of `set` in `[start, end)` accepted by `automaton`, with their states.
fn range_search<'set, A>(
    set: &'set WordSet,
    automaton: A,
    start: &[u8],
    end: Option<&[u8]>,
) -> fst::set::StreamWithState<'set, A>
where
    A: Automaton,
    A::State: Clone,
{
    let search = set.search_with_state(automaton).ge(start);
    match end {
        Some(end) => search.lt(end).into_stream(),
        None => search.into_stream(),
    }
}

/// A stream whose next item is copied out ahead, so that it can be compared with another
/// stream's current item (a stream lends its items only until its next step).
struct Lookahead<'set, A: Automaton> {
    stream: fst::set::StreamWithState<'set, A>,
    next: Option<(Vec<u8>, A::State)>,
}

impl<'set, A> Lookahead<'set, A>
where
    A: Automaton,
    A::State: Clone,
{
    fn new(mut stream: fst::set::StreamWithState<'set, A>) -> Self {
        let next = stream.next().map(|(word, state)| (word.to_vec(), state));
        Lookahead { stream, next }
    }

    /// Whether the next item comes before `word`.
    fn is_before(&self, word: &[u8]) -> bool {
        self.next
            .as_ref()
            .is_some_and(|(next, _)| next.as_slice() < word)
    }

    /// The next item, stepping the stream.
    fn take(&mut self) -> Option<(Vec<u8>, A::State)> {
        let taken = self.next.take()?;
        self.next = self
            .stream
            .next()
            .map(|(word, state)| (word.to_vec(), state));
        Some(taken)
    }
}

/// Builds the dictionary from the `word_documents` keys (already in byte order).
pub fn build_dictionary(read: &ReadTransaction) -> ShardResult<Dictionary> {
    let mut builder = fst::SetBuilder::memory();
    if let Some(tree) = read.open_tree(WORD_DOCUMENTS_TREE)? {
        for (index, entry) in tree.prefix(&[], Direction::Forward)?.enumerate() {
            turns::checkpoint_at(index);
            let (word, _) = entry?;
            builder
                .insert(word)
                .map_err(|error| ShardError::Corrupted(format!("word dictionary: {error}")))?;
        }
    }
    Ok(Dictionary::from_words(builder.into_set()))
}

/// A Levenshtein DFA driving an FST search.
///
/// With `skip_exact_continuations` (for prefix automata only), a state at distance 0 is a
/// dead end: a prefix automaton's distance is the smallest over the word's prefixes, so every
/// word under a node at distance 0 is at distance 0 too, and a typo walk wants none of them
/// (the words a prefix starts are read separately). Without it, every live state is followed.
#[derive(Clone, Copy)]
pub struct LevenshteinSearch<'a> {
    pub dfa: &'a DFA,
    pub skip_exact_continuations: bool,
}

impl Automaton for LevenshteinSearch<'_> {
    type State = u32;

    fn start(&self) -> u32 {
        self.dfa.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(self.dfa.distance(*state), Distance::Exact(_))
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != SINK_STATE
            && !(self.skip_exact_continuations
                && matches!(self.dfa.distance(*state), Distance::Exact(0)))
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.dfa.transition(*state, byte)
    }
}
