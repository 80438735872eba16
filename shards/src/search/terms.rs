//! Resolving query terms into alternatives: the dictionary words a word derives to (itself,
//! typos), the words it starts when it is the query's prefix, its synonyms, a phrase itself, and what several adjacent query
//! words match together: their concatenation (`sun flower` → `sunflower`) and multi-word
//! synonym keys (`new york` → `nyc`). Alternatives matched by several terms at once are
//! "shared": one occurrence then satisfies all of those terms.
//!
//! Invariants: synonyms are normalized with the index's analyzer (keys and values, once per
//! search); n-grams join 2 or 3 adjacent non-phrase words (at most [`NGRAM_WORDS_MAX`]) and
//! derive like a word of their own ([`super::ngrams`]).

use std::collections::BTreeMap;

use crate::analysis::{Analyzer, TextSettings};

use super::derivation_memo::DerivationMemo;
use super::dictionary::Dictionary;
use super::ngrams::{ngram_alternatives, ngram_typo_floors, ngram_windows};
use super::query::{QueryTerm, TermKind};

/// Most adjacent query words joined into one n-gram or multi-word synonym key.
pub const NGRAM_WORDS_MAX: usize = 3;

/// Normalized synonym key words → normalized alternatives.
pub type Synonyms = BTreeMap<Vec<String>, Vec<Vec<String>>>;

/// The typo cost an n-gram (adjacent query words joined) adds to each term it stands for.
pub const NGRAM_TYPOS_PER_TERM: u8 = 1;

/// One thing a term matches: a word (one element) or a phrase (`None` for stop-word holes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    pub words: Vec<Option<String>>,
    pub typos: u8,
    /// The query word or phrase itself (not a prefix expansion, typo, synonym).
    pub exact: bool,
    /// Matched together by several adjacent terms (an n-gram or multi-word synonym).
    pub shared: bool,
    /// The one word is a prefix: this alternative is every longer dictionary word it starts.
    pub prefix: bool,
    /// For an alternative several adjacent terms share, this term's place among them (0 for
    /// the first): Meilisearch prices a shared match's word position from the first term's
    /// query position, each later term one further (see [`super::ngrams`]).
    pub window_offset: u8,
}

/// A query term with everything it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedTerm {
    pub term: QueryTerm,
    pub alternatives: Vec<Alternative>,
}

impl ResolvedTerm {
    /// The words of one alternative.
    pub fn alternative_words(&self, alternative: u16) -> Vec<String> {
        self.alternatives
            .get(usize::from(alternative))
            .map(|found| found.words.iter().flatten().cloned().collect())
            .unwrap_or_default()
    }

    /// Every dictionary word this term may match (for highlighting).
    pub fn matching_words(&self) -> Vec<String> {
        let mut words = Vec::new();
        for alternative in &self.alternatives {
            for word in alternative.words.iter().flatten() {
                if !words.contains(word) {
                    words.push(word.clone());
                }
            }
        }
        words
    }
}

/// The synonyms setting with keys and values normalized by `analyzer`.
pub fn normalized_synonyms(analyzer: &Analyzer, settings: &TextSettings) -> Synonyms {
    let mut synonyms = Synonyms::new();
    for (key, values) in &settings.synonyms {
        let key = analyzer.normalize_words(key);
        if key.is_empty() {
            continue;
        }
        let entry = synonyms.entry(key).or_default();
        for value in values {
            let words = analyzer.normalize_words(value);
            if !words.is_empty() && !entry.contains(&words) {
                entry.push(words);
            }
        }
    }
    synonyms
}

fn synonym_alternative(words: &[String], shared: bool) -> Alternative {
    Alternative {
        words: words.iter().cloned().map(Some).collect(),
        typos: 0,
        exact: false,
        shared,
        prefix: false,
        window_offset: 0,
    }
}

/// Resolves each term, then adds what adjacent words match together.
pub fn resolve_terms(
    dictionary: &Dictionary,
    memo: &DerivationMemo,
    settings: &TextSettings,
    synonyms: &Synonyms,
    terms: &[QueryTerm],
) -> Vec<ResolvedTerm> {
    let mut resolved = Vec::with_capacity(terms.len());
    for term in terms {
        resolved.push(resolve_term(dictionary, memo, settings, synonyms, term));
    }
    add_shared_alternatives(dictionary, memo, settings, synonyms, terms, &mut resolved);
    resolved
}

fn resolve_term(
    dictionary: &Dictionary,
    memo: &DerivationMemo,
    settings: &TextSettings,
    synonyms: &Synonyms,
    term: &QueryTerm,
) -> ResolvedTerm {
    let mut alternatives = Vec::new();
    match &term.kind {
        TermKind::Phrase { words } => alternatives.push(Alternative {
            words: words.clone(),
            typos: 0,
            exact: true,
            shared: false,
            prefix: false,
            window_offset: 0,
        }),
        TermKind::Word {
            word,
            is_prefix,
            typos_max,
        } => {
            let derivations = memo.derive(dictionary, settings, word, *is_prefix, *typos_max);
            for derivation in &derivations.words {
                alternatives.push(Alternative {
                    words: vec![Some(derivation.word.clone())],
                    typos: derivation.typos,
                    exact: derivation.exact,
                    shared: false,
                    prefix: false,
                    window_offset: 0,
                });
            }
            if *is_prefix {
                alternatives.push(Alternative {
                    words: vec![Some(word.clone())],
                    typos: 0,
                    exact: false,
                    shared: false,
                    prefix: true,
                    window_offset: 0,
                });
            }
            if let Some(values) = synonyms.get(std::slice::from_ref(word)) {
                alternatives.extend(values.iter().map(|value| synonym_alternative(value, false)));
            }
        }
    }
    ResolvedTerm {
        term: term.clone(),
        alternatives,
    }
}

/// Per term, the fewest typos its `maxTypoCount` allows: a word term may match through an
/// n-gram ([`NGRAM_TYPOS_PER_TERM`]) or its split ([`super::split_words::SPLIT_TYPOS`]) even
/// when it allows no typo itself; a phrase through neither. Taken from the query alone, never
/// from whether an n-gram or a split is in a shard's index: a shard holding one and a shard
/// without it must give a term the same maximum, or the same typo count would rank
/// differently in each and the merged order would mix them.
pub fn typo_floors(settings: &TextSettings, terms: &[QueryTerm]) -> Vec<u8> {
    let ngram_floors = ngram_typo_floors(settings, terms);
    terms
        .iter()
        .zip(ngram_floors)
        .map(|(term, ngram_floor)| match term.kind {
            TermKind::Word { .. } => NGRAM_TYPOS_PER_TERM
                .max(super::split_words::SPLIT_TYPOS)
                .max(ngram_floor),
            TermKind::Phrase { .. } => 0,
        })
        .collect()
}

/// N-grams and multi-word synonyms of windows of adjacent word terms (`resolved` holds
/// `terms` resolved, in the same order).
fn add_shared_alternatives(
    dictionary: &Dictionary,
    memo: &DerivationMemo,
    settings: &TextSettings,
    synonyms: &Synonyms,
    terms: &[QueryTerm],
    resolved: &mut [ResolvedTerm],
) {
    debug_assert_eq!(
        terms.len(),
        resolved.len(),
        "one resolved term per query term"
    );
    for window in ngram_windows(terms) {
        let synonym_values = synonyms.get(&window.words).map(Vec::as_slice);
        let ngrams = ngram_alternatives(dictionary, memo, settings, &window);
        let window_terms = &mut resolved[window.start..window.start + window.size];
        for (offset, (term, ngram)) in window_terms.iter_mut().zip(ngrams).enumerate() {
            if let Some(values) = synonym_values {
                let window_offset = u8::try_from(offset).unwrap_or(u8::MAX);
                let shared = values.iter().map(|value| Alternative {
                    window_offset,
                    ..synonym_alternative(value, true)
                });
                term.alternatives.extend(shared);
            }
            term.alternatives.extend(ngram);
        }
    }
}
