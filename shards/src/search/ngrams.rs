//! N-grams: 2 or 3 adjacent query words joined into one word (`sun flower` → `sunflower`),
//! derived like a query word of their own, as Meilisearch derives them.
//!
//! - An n-gram is allowed the typos its joined word would be allowed, less one per word it
//!   adds (`standard in` → `standardin`: 10 characters allow 2 typos, less 1 → 1), so it
//!   matches `standardon` at one typo.
//! - It is a prefix when its last word is the query's prefix word: `plone for` matches
//!   `ploneformgen`.
//! - Its typo cost is one per word it joins (Meilisearch's base cost of an n-gram), plus the
//!   typos of the derivation. The base is spread one per term; a derivation's own typos are
//!   counted on the window's last term, so the typos a document's terms add up to are
//!   Meilisearch's path cost.
//! - It is never an exact match: Meilisearch's exactness rule (exact words and exact
//!   attribute) leaves n-grams out, so a document holding `vectorstore` counts no exact word
//!   through it for `vector store`.
//! - Its word-position cost, found at document position `p`, is Meilisearch's: the sum over
//!   its words `i` of `cost(|p - start| + i)`, `start` the window's first query position.
//!   Each term carries its place in the window ([`Alternative::window_offset`]) and prices
//!   its share, `cost(|p - start| + i)` (a separate word at `p` is priced `cost(|p - q|)`).
//!
//! Invariant: everything here depends on the query and the settings alone except which
//! dictionary words a derivation finds; in particular [`ngram_typo_floors`] (what a term's
//! typo maximum must reach for its n-gram derivations to stay within it) never looks at the
//! dictionary, so every shard gives a term the same maximum.

use crate::analysis::TextSettings;

use super::derivation_memo::DerivationMemo;
use super::dictionary::Dictionary;
use super::query::{QueryTerm, TermKind, typos_allowed};
use super::terms::{Alternative, NGRAM_TYPOS_PER_TERM, NGRAM_WORDS_MAX};

/// One window of adjacent word terms and what they join into.
pub struct NgramWindow {
    /// Index of the window's first term.
    pub start: usize,
    /// Number of terms joined (2..=[`NGRAM_WORDS_MAX`]).
    pub size: usize,
    /// The terms' words, in query order.
    pub words: Vec<String>,
    /// Whether the window's last term is the query's prefix word.
    pub is_prefix: bool,
}

impl NgramWindow {
    /// The joined word.
    pub fn joined(&self) -> String {
        self.words.concat()
    }

    /// The typos the n-gram's derivations may have: its joined word's allowance less one per
    /// word it adds.
    pub fn typos_max(&self, settings: &TextSettings) -> u8 {
        let added_words = u8::try_from(self.size - 1).unwrap_or(u8::MAX);
        typos_allowed(settings, &self.joined()).saturating_sub(added_words)
    }

    /// Index of the window's last term (the one a derivation's own typos are counted on).
    pub fn last(&self) -> usize {
        self.start + self.size - 1
    }
}

/// The word of a non-phrase term and whether it is the prefix word.
fn plain_word(term: &QueryTerm) -> Option<(&str, bool)> {
    match &term.kind {
        TermKind::Word {
            word, is_prefix, ..
        } => Some((word, *is_prefix)),
        TermKind::Phrase { .. } => None,
    }
}

/// Every window of 2 to [`NGRAM_WORDS_MAX`] adjacent word terms (no phrase inside), by size
/// then position.
pub fn ngram_windows(terms: &[QueryTerm]) -> Vec<NgramWindow> {
    let mut windows = Vec::new();
    for size in 2..=NGRAM_WORDS_MAX {
        for start in 0..terms.len().saturating_sub(size - 1) {
            let window = &terms[start..start + size];
            let adjacent = window
                .windows(2)
                .all(|pair| pair[0].end_position + 1 == pair[1].position);
            let words: Option<Vec<(&str, bool)>> = window.iter().map(plain_word).collect();
            let (true, Some(words)) = (adjacent, words) else {
                continue;
            };
            let is_prefix = words.last().is_some_and(|(_, is_prefix)| *is_prefix);
            windows.push(NgramWindow {
                start,
                size,
                words: words.iter().map(|(word, _)| (*word).to_owned()).collect(),
                is_prefix,
            });
        }
    }
    windows
}

/// What the window's n-gram matches, per term of the window (in window order): the joined
/// word itself, its typo derivations and, as a prefix, every longer word it starts; each
/// costs [`NGRAM_TYPOS_PER_TERM`] on every term, the derivation's typos on the last.
pub fn ngram_alternatives(
    dictionary: &Dictionary,
    memo: &DerivationMemo,
    settings: &TextSettings,
    window: &NgramWindow,
) -> Vec<Vec<Alternative>> {
    let joined = window.joined();
    let derivations = memo.derive(
        dictionary,
        settings,
        &joined,
        window.is_prefix,
        window.typos_max(settings),
    );
    let mut found: Vec<(Alternative, u8)> = derivations
        .words
        .iter()
        .map(|derivation| {
            let alternative = Alternative {
                words: vec![Some(derivation.word.clone())],
                typos: NGRAM_TYPOS_PER_TERM,
                // Meilisearch's exactness never counts an n-gram's words as exact (in the
                // word count nor in the exact attribute), even where the joined word is found.
                exact: false,
                shared: true,
                prefix: false,
                window_offset: 0,
            };
            (alternative, derivation.typos)
        })
        .collect();
    if window.is_prefix {
        let starts = Alternative {
            words: vec![Some(joined)],
            typos: NGRAM_TYPOS_PER_TERM,
            exact: false,
            shared: true,
            prefix: true,
            window_offset: 0,
        };
        found.push((starts, 0));
    }
    (0..window.size)
        .map(|offset| {
            let is_last = offset + 1 == window.size;
            let window_offset = u8::try_from(offset).unwrap_or(u8::MAX);
            found
                .iter()
                .map(|(alternative, own_typos)| {
                    let mut alternative = alternative.clone();
                    alternative.window_offset = window_offset;
                    if is_last {
                        alternative.typos = alternative.typos.saturating_add(*own_typos);
                    }
                    alternative
                })
                .collect()
        })
        .collect()
}

/// Per term, the typo maximum its n-grams need: a window's last term carries the n-gram's
/// own typos on top of its base cost (from the query and settings alone, see the module
/// invariant).
pub fn ngram_typo_floors(settings: &TextSettings, terms: &[QueryTerm]) -> Vec<u8> {
    let mut floors = vec![0; terms.len()];
    for window in ngram_windows(terms) {
        let needed = NGRAM_TYPOS_PER_TERM.saturating_add(window.typos_max(settings));
        if let Some(floor) = floors.get_mut(window.last()) {
            *floor = (*floor).max(needed);
        }
    }
    floors
}
