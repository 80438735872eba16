//! The word dictionary of a shard as an FST, kept in memory per commit: what typo derivations
//! walk with a Levenshtein automaton (a walk over the `word_documents` tree would seek the
//! B-tree once per dead branch, which costs milliseconds per query word).
//!
//! Invariants: a [`DictionaryCache`] hands out the dictionary of exactly the commit a snapshot
//! reads (keyed by the read transaction's id); it is built from that snapshot's
//! `word_documents` keys on first use after a commit and shared by every later snapshot of the
//! same commit. An older snapshot builds its own and leaves the cache to the newer commit.

use std::sync::{Arc, Mutex};

use fst::Automaton;
use levenshtein_automata::{DFA, Distance, SINK_STATE};
use storage_engine::{Direction, ReadTransaction};

use crate::shard::{ShardError, ShardResult};

use super::inverted::WORD_DOCUMENTS_TREE;

/// The words of one commit, in byte order.
pub type Dictionary = fst::Set<Vec<u8>>;

/// The dictionary of the newest commit searched so far.
#[derive(Default)]
pub struct DictionaryCache {
    newest: Mutex<Option<(u64, Arc<Dictionary>)>>,
}

impl DictionaryCache {
    /// The dictionary of the commit `read` sees.
    pub fn dictionary(&self, read: &ReadTransaction) -> ShardResult<Arc<Dictionary>> {
        let commit = read.transaction_id();
        if let Some((cached, dictionary)) = &*self.lock() {
            if *cached == commit {
                return Ok(Arc::clone(dictionary));
            }
        }
        let dictionary = Arc::new(build(read)?);
        let mut newest = self.lock();
        let replace = newest.as_ref().is_none_or(|(cached, _)| *cached < commit);
        if replace {
            *newest = Some((commit, Arc::clone(&dictionary)));
        }
        Ok(dictionary)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, Arc<Dictionary>)>> {
        // A panic while holding the lock leaves a valid value (a whole dictionary or none).
        self.newest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Builds the dictionary from the `word_documents` keys (already in byte order).
fn build(read: &ReadTransaction) -> ShardResult<Dictionary> {
    let mut builder = fst::SetBuilder::memory();
    if let Some(tree) = read.open_tree(WORD_DOCUMENTS_TREE)? {
        for entry in tree.prefix(&[], Direction::Forward)? {
            let (word, _) = entry?;
            builder
                .insert(word)
                .map_err(|error| ShardError::Corrupted(format!("word dictionary: {error}")))?;
        }
    }
    Ok(builder.into_set())
}

/// A Levenshtein DFA driving an FST search.
pub struct LevenshteinSearch<'a>(pub &'a DFA);

impl Automaton for LevenshteinSearch<'_> {
    type State = u32;

    fn start(&self) -> u32 {
        self.0.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(self.0.distance(*state), Distance::Exact(_))
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != SINK_STATE
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.0.transition(*state, byte)
    }
}
