//! A search request on one shard ([`SearchQuery`]) and the parsing of its `q` into located
//! terms, negative words and negative phrases, following Meilisearch's rules.
//!
//! Invariants (as Meilisearch): a word takes the next query position, a hard separator adds
//! 7 more; only the last token of the query is a prefix (a query ending with a separator has
//! none); stop words are not terms except as the last token; `"…"` makes a phrase (an
//! unclosed quote runs to the end, a hard separator inside starts a new phrase), in which stop
//! words are holes; `-` right after whitespace (or at the start) negates the next word or
//! phrase; at most [`QUERY_TERMS_MAX`] terms are kept; typos allowed per word follow
//! `typoTolerance`.

use roaring::RoaringBitmap;

use charabia::{Language, SeparatorKind, TokenKind};

use crate::analysis::{Analyzer, TextSettings, WORD_BYTES_MAX};
use crate::shard::SortRule;

use super::geo_sort::GeoSort;

/// Most terms one query keeps (Meilisearch's words limit).
pub const QUERY_TERMS_MAX: usize = 10;
/// Most tokens of `q` looked at.
pub const QUERY_TOKENS_MAX: usize = 1000;
/// Extra query positions a hard separator adds beyond the usual 1.
const HARD_SEPARATOR_QUERY_GAP: u32 = 7;

/// `matchingStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchingStrategy {
    /// Drop query terms from the end until documents match.
    #[default]
    Last,
    /// Every term must match.
    All,
    /// Drop the most frequent terms first.
    Frequency,
}

/// One rule of the `sort` parameter: a sortable field, or the distance to a point.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchSort {
    Field(SortRule),
    Geo(GeoSort),
}

/// One search on one shard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchQuery {
    /// `None` or empty (after analysis) is a placeholder search.
    pub q: Option<String>,
    pub offset: usize,
    pub limit: usize,
    pub matching_strategy: MatchingStrategy,
    /// Restricts the searched fields (each listed name and the fields nested under it).
    pub attributes_to_search_on: Option<Vec<String>>,
    /// Only these internal ids: a filter's result on the same snapshot, so a subset of the
    /// shard's documents (the search takes them as they are, without intersecting them).
    pub candidates: Option<RoaringBitmap>,
    /// The `sort` parameter, used where the `sort` ranking rule stands.
    pub sort: Vec<SearchSort>,
    /// For `matchingStrategy: frequency`: the number of documents of the whole index matching
    /// each term (sum of [`crate::shard::ShardSnapshot::term_document_counts`] over shards).
    /// Without it the shard's own counts are used, and the order may differ between shards.
    pub term_document_counts: Option<Vec<u64>>,
    /// The `distinct` parameter: overrides the `distinctAttribute` setting when set.
    pub distinct: Option<String>,
    /// The `locales` parameter (ISO-639-3 codes): the languages `q` is analysed in. `None`
    /// takes the locales of the searched fields' `localizedAttributes` rules.
    pub locales: Option<Vec<String>>,
    /// `searchCutoffMs`: past this instant the ranking stops refining and returns what it
    /// has (see [`super::refine`]); `None` ranks fully.
    pub deadline: Option<std::time::Instant>,
}

/// What a term is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermKind {
    Word {
        word: String,
        /// The last word of the query: also matches the words it starts.
        is_prefix: bool,
        /// Typos allowed (0, 1 or 2).
        typos_max: u8,
    },
    /// Words that must follow each other; `None` is a stop word's hole.
    Phrase { words: Vec<Option<String>> },
}

/// A term and where it sits in the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTerm {
    pub kind: TermKind,
    /// Query position of the term's first word.
    pub position: u32,
    /// Query position of the term's last word.
    pub end_position: u32,
}

impl QueryTerm {
    /// Typos this term may carry.
    pub fn typos_max(&self) -> u8 {
        match &self.kind {
            TermKind::Word { typos_max, .. } => *typos_max,
            TermKind::Phrase { .. } => 0,
        }
    }

    /// Number of real words (stop-word holes excluded).
    pub fn word_count(&self) -> usize {
        match &self.kind {
            TermKind::Word { .. } => 1,
            TermKind::Phrase { words } => words.iter().flatten().count(),
        }
    }
}

/// The parsed `q`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedQuery {
    pub terms: Vec<QueryTerm>,
    pub negative_words: Vec<String>,
    pub negative_phrases: Vec<Vec<Option<String>>>,
}

/// Typos allowed for `word` under the settings.
pub fn typos_allowed(settings: &TextSettings, word: &str) -> u8 {
    let typo = &settings.typo_tolerance;
    let characters = word.chars().count();
    let is_number = !word.is_empty() && word.chars().all(|character| character.is_ascii_digit());
    if !typo.enabled
        || characters < usize::from(typo.one_typo_characters_min)
        || typo.disable_on_words.contains(word)
        || (typo.disable_on_numbers && is_number)
        || word.len() > WORD_BYTES_MAX
    {
        0
    } else if characters < usize::from(typo.two_typos_characters_min) {
        1
    } else {
        2
    }
}

struct PhraseBuilder {
    words: Vec<Option<String>>,
    start: Option<u32>,
    end: u32,
}

impl PhraseBuilder {
    fn new() -> PhraseBuilder {
        PhraseBuilder {
            words: Vec::new(),
            start: None,
            end: 0,
        }
    }

    fn push(&mut self, word: Option<String>, position: u32) {
        self.start.get_or_insert(position);
        self.end = position;
        self.words.push(word);
    }

    fn build(self) -> Option<(Vec<Option<String>>, u32, u32)> {
        if self.words.iter().all(Option::is_none) {
            return None;
        }
        Some((self.words, self.start.unwrap_or(0), self.end))
    }
}

/// The parser's running state.
struct Parser<'a> {
    settings: &'a TextSettings,
    parsed: ParsedQuery,
    phrase: Option<PhraseBuilder>,
    negative_phrase: bool,
    negative_next: bool,
}

impl Parser<'_> {
    fn close_phrase(&mut self, phrase: PhraseBuilder) {
        if let Some((words, position, end_position)) = phrase.build() {
            if self.negative_phrase {
                self.parsed.negative_phrases.push(words);
            } else {
                self.parsed.terms.push(QueryTerm {
                    kind: TermKind::Phrase { words },
                    position,
                    end_position,
                });
            }
        }
    }

    fn word(&mut self, lemma: &str, kind: TokenKind, position: u32, is_last: bool) {
        if let Some(phrase) = &mut self.phrase {
            let word = (kind == TokenKind::Word).then(|| lemma.to_owned());
            phrase.push(word, position);
        } else if self.negative_next {
            self.parsed.negative_words.push(lemma.to_owned());
            self.negative_next = false;
        } else if is_last || kind == TokenKind::Word {
            let is_prefix = is_last && self.settings.prefix_search && lemma.len() <= WORD_BYTES_MAX;
            self.parsed.terms.push(QueryTerm {
                kind: TermKind::Word {
                    word: lemma.to_owned(),
                    is_prefix,
                    typos_max: typos_allowed(self.settings, lemma),
                },
                position,
                end_position: position,
            });
        }
    }

    fn separator(&mut self, lemma: &str, kind: SeparatorKind, after_whitespace: bool) {
        let mut phrase = self.phrase.take();
        if kind == SeparatorKind::Hard {
            if let Some(open) = phrase.take() {
                // A hard separator inside a phrase closes it and opens a new one, keeping
                // the negation.
                let negative = self.negative_phrase;
                self.close_phrase(open);
                self.negative_phrase = negative;
                phrase = Some(PhraseBuilder::new());
            }
        }
        let mut quotes = lemma.chars().filter(|character| *character == '"').count();
        if quotes > 0 {
            if let Some(open) = phrase.take() {
                quotes -= 1;
                self.close_phrase(open);
                self.negative_phrase = false;
            }
            if quotes % 2 == 1 {
                self.negative_phrase = self.negative_next;
                phrase = Some(PhraseBuilder::new());
            }
        }
        self.phrase = phrase;
        self.negative_next = self.phrase.is_none() && lemma == "-" && after_whitespace;
    }
}

/// Parses `q` with the analyzer of the index's settings, detecting its language among
/// `languages` when given (see [`crate::analysis::FieldLanguages::of_query`]).
pub fn parse_query(
    analyzer: &Analyzer,
    settings: &TextSettings,
    q: &str,
    languages: Option<&[Language]>,
) -> ParsedQuery {
    analyzer.with_tokenizer(|tokenizer| {
        let tokens: Vec<_> = tokenizer
            .tokenize_with_allow_list(q, languages)
            .take(QUERY_TOKENS_MAX)
            .filter(|token| !token.lemma().is_empty())
            .collect();
        let mut parser = Parser {
            settings,
            parsed: ParsedQuery::default(),
            phrase: None,
            negative_phrase: false,
            negative_next: false,
        };
        let mut position: Option<u32> = None;
        let mut after_whitespace = true;
        for (index, token) in tokens.iter().enumerate() {
            if parser.parsed.terms.len() >= QUERY_TERMS_MAX {
                break;
            }
            match token.kind {
                TokenKind::Word | TokenKind::StopWord => {
                    let next = position.map_or(0, |current| current + 1);
                    position = Some(next);
                    let is_last = index + 1 == tokens.len();
                    parser.word(token.lemma(), token.kind, next, is_last);
                }
                TokenKind::Separator(kind) => {
                    if kind == SeparatorKind::Hard {
                        position = Some(position.map_or(HARD_SEPARATOR_QUERY_GAP - 1, |current| {
                            current + HARD_SEPARATOR_QUERY_GAP
                        }));
                    }
                    parser.separator(token.lemma(), kind, after_whitespace);
                }
                TokenKind::Unknown => {}
            }
            after_whitespace = token
                .lemma()
                .chars()
                .last()
                .is_some_and(char::is_whitespace);
        }
        if let Some(open) = parser.phrase.take() {
            parser.close_phrase(open);
        }
        parser.parsed.terms.truncate(QUERY_TERMS_MAX);
        parser.parsed
    })
}
