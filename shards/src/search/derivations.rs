//! The dictionary words a query word matches: itself and the words one or two typos away (the
//! words a prefix word starts are read in one scan, see [`super::occurrences`]).
//!
//! Typo rules as Meilisearch's: a word allowed one typo matches words at Levenshtein distance 1
//! (a transposition counts as one) that start with the same first letter; a word allowed two
//! typos also matches words at distance 2 with the same first letter, and words at distance 1
//! whose first letter differs count as two typos. A prefix word measures distance against the
//! best prefix of the dictionary word. Numbers do not match numbers through typos when
//! `disableOnNumbers` is set.
//!
//! Invariant: the walk intersects the automaton with the dictionary's FST (see
//! [`super::dictionary`]) in byte order, so its cost follows the automaton's live states, not
//! the dictionary size. The numbers of
//! typo words are capped ([`ONE_TYPO_DERIVATIONS_MAX`], [`TWO_TYPOS_DERIVATIONS_MAX`]), first
//! in byte order, as Meilisearch caps them.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use fst::{IntoStreamer, Streamer};
use levenshtein_automata::{DFA, Distance, LevenshteinAutomatonBuilder};

use crate::analysis::TextSettings;

use super::dictionary::{Dictionary, LevenshteinSearch};

/// The automaton builders for one and two typos (transpositions count as one), made once per
/// process: a builder precomputes its parametric tables, which costs milliseconds at two
/// typos.
static AUTOMATON_BUILDERS: LazyLock<[LevenshteinAutomatonBuilder; 2]> = LazyLock::new(|| {
    [
        LevenshteinAutomatonBuilder::new(1, true),
        LevenshteinAutomatonBuilder::new(2, true),
    ]
});

/// The builder of automata accepting `distance` typos (1 or 2; more is capped at 2).
fn automaton_builder(distance: u8) -> &'static LevenshteinAutomatonBuilder {
    let [one, two] = &*AUTOMATON_BUILDERS;
    if distance <= 1 { one } else { two }
}

/// Most words at one typo per query word.
pub const ONE_TYPO_DERIVATIONS_MAX: usize = 150;
/// Most words at two typos per query word.
pub const TWO_TYPOS_DERIVATIONS_MAX: usize = 50;

/// One dictionary word a query word matches, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derivation {
    pub word: String,
    pub typos: u8,
    /// The query word itself (not a typo or synonym).
    pub exact: bool,
}

/// Everything one query word matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WordDerivations {
    pub words: Vec<Derivation>,
    /// Multi-word synonyms: phrases (stop-word holes are `None`).
    pub phrases: Vec<Vec<Option<String>>>,
}

/// The smallest key above every key starting with `prefix` (`None`: no such key).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn first_letter(word: &str) -> &str {
    word.chars()
        .next()
        .map_or("", |character| &word[..character.len_utf8()])
}

fn is_number(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|character| character.is_ascii_digit())
}

/// Walks the words of `dictionary` in `[start, end)` accepted by `dfa`, in byte order,
/// calling `found(word, distance)` until it returns `false`.
fn walk(
    dictionary: &Dictionary,
    dfa: &DFA,
    start: &[u8],
    end: Option<&[u8]>,
    found: &mut dyn FnMut(&[u8], u8) -> bool,
) {
    let search = dictionary
        .search_with_state(LevenshteinSearch(dfa))
        .ge(start);
    let mut stream = match end {
        Some(end) => search.lt(end).into_stream(),
        None => search.into_stream(),
    };
    while let Some((key, state)) = stream.next() {
        if let Distance::Exact(distance) = dfa.distance(state) {
            if !found(key, distance) {
                return;
            }
        }
    }
}

/// Most query words whose derivations one commit remembers; past it the memo starts over.
pub const DERIVATION_MEMO_ENTRIES_MAX: usize = 1024;

/// What a derivation depends on besides the commit: the word, whether it is a prefix, and
/// its typo budget.
type DerivationKey = (String, bool, u8);

/// The derivations already computed on one commit's dictionary and text settings (held by the
/// commit's view, so it never outlives them): frequent query words are derived once per commit
/// instead of once per search (a two-typo walk costs about a millisecond).
#[derive(Default)]
pub struct DerivationMemo {
    known: Mutex<HashMap<DerivationKey, Arc<WordDerivations>>>,
}

impl DerivationMemo {
    /// [`derive_word`], remembered.
    pub fn derive(
        &self,
        dictionary: &Dictionary,
        settings: &TextSettings,
        word: &str,
        is_prefix: bool,
        typos_max: u8,
    ) -> Arc<WordDerivations> {
        let key = (word.to_owned(), is_prefix, typos_max);
        if let Some(known) = self.lock().get(&key) {
            return Arc::clone(known);
        }
        let derived = Arc::new(derive_word(
            dictionary, settings, word, is_prefix, typos_max,
        ));
        let mut known = self.lock();
        if known.len() >= DERIVATION_MEMO_ENTRIES_MAX {
            known.clear();
        }
        known.insert(key, Arc::clone(&derived));
        derived
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<DerivationKey, Arc<WordDerivations>>> {
        // A panic while holding the lock leaves whole entries only.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Derives `word` against the shard's dictionary.
pub fn derive_word(
    dictionary: &Dictionary,
    settings: &TextSettings,
    word: &str,
    is_prefix: bool,
    typos_max: u8,
) -> WordDerivations {
    let mut derivations = WordDerivations::default();
    if dictionary.contains(word.as_bytes()) {
        derivations.words.push(Derivation {
            word: word.to_owned(),
            typos: 0,
            exact: true,
        });
    }
    if typos_max > 0 {
        typo_derivations(
            dictionary,
            settings,
            word,
            is_prefix,
            typos_max,
            &mut derivations,
        );
    }
    derivations
}

fn typo_derivations(
    dictionary: &Dictionary,
    settings: &TextSettings,
    word: &str,
    is_prefix: bool,
    typos_max: u8,
    derivations: &mut WordDerivations,
) {
    let skip_numbers = settings.typo_tolerance.disable_on_numbers;
    let build = |distance: u8| {
        let builder = automaton_builder(distance);
        if is_prefix {
            builder.build_prefix_dfa(word)
        } else {
            builder.build_dfa(word)
        }
    };
    let first = first_letter(word).as_bytes().to_vec();
    let first_end = prefix_end(&first);
    let mut one = 0;
    let mut two = 0;
    let mut record = |key: &[u8], typos: u8, derivations: &mut WordDerivations| -> bool {
        let Ok(derived) = std::str::from_utf8(key) else {
            return true;
        };
        if skip_numbers && is_number(derived) {
            return true;
        }
        let counter = if typos == 1 { &mut one } else { &mut two };
        let limit = if typos == 1 {
            ONE_TYPO_DERIVATIONS_MAX
        } else {
            TWO_TYPOS_DERIVATIONS_MAX
        };
        if *counter < limit {
            *counter += 1;
            derivations.words.push(Derivation {
                word: derived.to_owned(),
                typos,
                exact: false,
            });
        }
        one < ONE_TYPO_DERIVATIONS_MAX || two < TWO_TYPOS_DERIVATIONS_MAX
    };
    // Same first letter: the distance is the number of typos.
    let same_letter = build(typos_max);
    walk(
        dictionary,
        &same_letter,
        &first,
        first_end.as_deref(),
        &mut |key, distance| {
            if distance == 0 {
                return true;
            }
            record(key, distance, derivations)
        },
    );
    if typos_max < 2 {
        return;
    }
    // Another first letter: one edit, counted as two typos.
    let other_letter = build(1);
    walk(
        dictionary,
        &other_letter,
        &[],
        None,
        &mut |key, distance| {
            if key.starts_with(&first) || distance == 0 {
                return true;
            }
            record(key, 2, derivations)
        },
    );
}
