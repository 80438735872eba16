//! The word dictionary of a shard as an FST, kept in memory per commit: what typo derivations
//! walk with a Levenshtein automaton (a walk over the `word_documents` tree would seek the
//! B-tree once per dead branch, which costs milliseconds per query word).
//!
//! Invariant: a dictionary holds exactly the `word_documents` keys of the commit it was built
//! from; the shard's commit view ([`crate::shard::ShardSnapshot::dictionary`]) builds it on
//! the first search after a commit and shares it with every later snapshot of that commit,
//! unless the batch that made the commit handed it over already (the previous commit's merged
//! with the words the batch added and removed, see `shard::dictionary_changes`).

use fst::Automaton;
use levenshtein_automata::{DFA, Distance, SINK_STATE};
use storage_engine::{Direction, ReadTransaction};

use crate::error::{ShardError, ShardResult};

use crate::index::trees::WORD_DOCUMENTS_TREE;

/// The words of one commit, in byte order.
pub type Dictionary = fst::Set<Vec<u8>>;

/// Builds the dictionary from the `word_documents` keys (already in byte order).
pub fn build_dictionary(read: &ReadTransaction) -> ShardResult<Dictionary> {
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
///
/// With `skip_exact_continuations` (for prefix automata only), a state at distance 0 is a
/// dead end: a prefix automaton's distance is the smallest over the word's prefixes, so every
/// word under a node at distance 0 is at distance 0 too, and a typo walk wants none of them
/// (the words a prefix starts are read separately). Without it, every live state is followed.
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
