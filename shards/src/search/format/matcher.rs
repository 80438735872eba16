//! The query's matching words, built once per search ([`QueryMatcher`]), and the matches they
//! find among the tokens of one text ([`QueryMatcher::find_matches`]).
//!
//! Matching follows Meilisearch's highlighter: at each word token the phrases are tried first
//! (a phrase matches only when all its words follow, consecutive words of the text, separators
//! ignored, a stop-word hole matching a token classified as a stop word); then the words of
//! non-prefix terms by equality (n-gram words before single words); then the prefix term (the
//! query's last word) by `starts_with`, the match then covering only as many characters as the
//! query word has. A token takes the first thing that matches it.
//!
//! Invariants: the matcher depends only on the settings, `q` and the words per term, never on
//! a document; [`Match`]es come out in text order and never overlap (a phrase match consumes
//! its words).

use std::collections::HashMap;
use std::ops::RangeInclusive;

use charabia::{Language, Token, TokenKind};

use crate::analysis::{Analyzer, FieldLanguages, TextSettings};
use crate::search::ngrams::ngram_windows;
use crate::search::{ParsedQuery, TermKind, parse_query};

/// Query positions a match stands for (a word's one position, a phrase's or n-gram's span).
pub type TermIds = RangeInclusive<u32>;

/// One match in a text: a word token or a run of word tokens (a phrase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Characters of the original text highlighted from the first token's start.
    pub char_count: usize,
    pub ids: TermIds,
    /// Indexes into the token list.
    pub first_token: usize,
    pub last_token: usize,
    /// Word positions (every non-separator token counts one).
    pub first_word: usize,
    pub last_word: usize,
}

impl Match {
    /// Words the match spans.
    pub fn word_count(&self) -> usize {
        self.last_word - self.first_word + 1
    }
}

/// A phrase of the query: words in order, `None` for a stop word's hole.
#[derive(Debug, Clone)]
struct PhrasePattern {
    words: Vec<Option<String>>,
    ids: TermIds,
}

/// The languages of one search's texts (ISO-639-3 codes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryLanguages {
    /// The `locales` parameter, as given to the search.
    pub requested: Option<Vec<String>>,
    /// The languages the shards analysed `q` in (empty: charabia's detection).
    pub analysed: Vec<String>,
}

/// The query's last word, matched as a prefix.
#[derive(Debug, Clone)]
struct PrefixTerm {
    /// The query word first, then the other words the term may match.
    words: Vec<String>,
    ids: TermIds,
    /// Characters of the query word: the most a prefix match highlights.
    query_characters: usize,
}

/// The query's matching words and the tokenizer settings formatting uses. Built once per
/// search, reused for every hit.
#[derive(Debug, Clone)]
pub struct QueryMatcher {
    phrases: Vec<PhrasePattern>,
    /// Word → the ids it matches, first insertion (n-grams, then terms in query order) wins.
    exact: HashMap<String, TermIds>,
    prefix: Option<PrefixTerm>,
    /// Separators of the index (`None`: charabia's defaults), as the index analyzer has them.
    pub(super) separators: Option<Vec<String>>,
    /// Dictionary words of the index (`None`: none).
    pub(super) dictionary: Option<Vec<String>>,
    /// The request's `locales` (non-empty), which every field is tokenized in when given.
    pub(super) explicit_languages: Option<Vec<Language>>,
    /// The `localizedAttributes` rules: the languages of each field otherwise.
    pub(super) field_languages: FieldLanguages,
}

impl QueryMatcher {
    /// Parses `q` with the index's analyzer and takes, per query term (in the order
    /// [`parse_query`] gives them, as `ShardHits::query_words`), every dictionary word the
    /// term may match. When `words_per_term` does not have one entry per term, each word term
    /// matches only its own word. `languages` says how `q` is analysed and texts tokenized:
    /// the request's `locales`, and the languages the shards analysed `q` in.
    pub fn new(
        settings: &TextSettings,
        q: &str,
        words_per_term: &[Vec<String>],
        languages: &QueryLanguages,
    ) -> QueryMatcher {
        let analyzer = Analyzer::new(settings);
        let query_languages = (!languages.analysed.is_empty())
            .then(|| crate::analysis::languages(&languages.analysed));
        let parsed = parse_query(&analyzer, settings, q, query_languages.as_deref());
        let mut matcher = QueryMatcher::from_parsed(settings, &parsed, words_per_term);
        matcher.explicit_languages = languages
            .requested
            .as_deref()
            .map(crate::analysis::languages)
            .filter(|found| !found.is_empty());
        matcher
    }

    /// The languages the text at `path` is tokenized in: the request's `locales`, else the
    /// field's `localizedAttributes` locales, else charabia's detection (`None`).
    pub(super) fn text_languages(&self, path: &str) -> Option<&[Language]> {
        self.explicit_languages
            .as_deref()
            .or_else(|| self.field_languages.of_field(path))
    }

    /// As [`QueryMatcher::new`] for an already parsed query.
    pub fn from_parsed(
        settings: &TextSettings,
        parsed: &ParsedQuery,
        words_per_term: &[Vec<String>],
    ) -> QueryMatcher {
        let mut matcher = QueryMatcher {
            phrases: Vec::new(),
            exact: HashMap::new(),
            prefix: None,
            separators: formatting_separators(settings),
            dictionary: (!settings.dictionary.is_empty())
                .then(|| settings.dictionary.iter().cloned().collect()),
            explicit_languages: None,
            field_languages: FieldLanguages::new(&settings.localized_attributes),
        };
        let aligned = words_per_term.len() == parsed.terms.len();
        let ngram_words = if aligned {
            matcher.add_ngrams(parsed, words_per_term)
        } else {
            Vec::new()
        };
        for (index, term) in parsed.terms.iter().enumerate() {
            let ids = term.position..=term.end_position;
            match &term.kind {
                TermKind::Phrase { words } => matcher.phrases.push(PhrasePattern {
                    words: words.clone(),
                    ids,
                }),
                TermKind::Word {
                    word, is_prefix, ..
                } => {
                    let listed: &[String] = if aligned {
                        &words_per_term[index]
                    } else {
                        std::slice::from_ref(word)
                    };
                    if *is_prefix {
                        let mut words = vec![word.clone()];
                        words.extend(
                            listed
                                .iter()
                                .filter(|listed| *listed != word && !ngram_words.contains(listed))
                                .cloned(),
                        );
                        matcher.prefix = Some(PrefixTerm {
                            words,
                            ids,
                            query_characters: word.chars().count(),
                        });
                    } else {
                        for listed in listed {
                            matcher
                                .exact
                                .entry(listed.clone())
                                .or_insert_with(|| ids.clone());
                        }
                    }
                }
            }
        }
        matcher
    }

    /// Registers the n-gram words (2 or 3 adjacent word terms joined) the terms list; returns
    /// them.
    fn add_ngrams(&mut self, parsed: &ParsedQuery, words_per_term: &[Vec<String>]) -> Vec<String> {
        let mut windows = ngram_windows(&parsed.terms);
        // The longest first (a stable sort keeps query order within a size): a 3-gram's span
        // wins over the 2-grams inside it.
        windows.sort_by_key(|window| std::cmp::Reverse(window.size));
        let mut found = Vec::new();
        for window in windows {
            let joined = window.joined();
            let listed = words_per_term[window.start..=window.last()]
                .iter()
                .any(|listed| listed.contains(&joined));
            if listed && !self.exact.contains_key(&joined) {
                let ids =
                    parsed.terms[window.start].position..=parsed.terms[window.last()].end_position;
                self.exact.insert(joined.clone(), ids);
                found.push(joined);
            }
        }
        found
    }

    /// Whether the query has nothing to match (a placeholder search).
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty() && self.exact.is_empty() && self.prefix.is_none()
    }

    /// The matches among `tokens` (one text's tokens, separators included), in text order.
    pub fn find_matches(&self, tokens: &[Token<'_>]) -> Vec<Match> {
        let mut matches = Vec::new();
        if self.is_empty() {
            return matches;
        }
        // (token index, word position) of every non-separator token.
        let words: Vec<(usize, usize)> = tokens
            .iter()
            .enumerate()
            .filter(|(_, token)| !token.is_separator())
            .enumerate()
            .map(|(word_position, (token_index, _))| (token_index, word_position))
            .collect();
        let mut cursor = 0;
        while let Some(&(token_index, word_position)) = words.get(cursor) {
            if let Some(phrase_match) = self.match_phrase(tokens, &words[cursor..]) {
                cursor += phrase_match.word_count();
                matches.push(phrase_match);
                continue;
            }
            if let Some((char_count, ids)) = self.match_word(&tokens[token_index]) {
                matches.push(Match {
                    char_count,
                    ids: ids.clone(),
                    first_token: token_index,
                    last_token: token_index,
                    first_word: word_position,
                    last_word: word_position,
                });
            }
            cursor += 1;
        }
        matches
    }

    /// The first phrase whose words are the next words of the text.
    fn match_phrase(&self, tokens: &[Token<'_>], words: &[(usize, usize)]) -> Option<Match> {
        self.phrases.iter().find_map(|phrase| {
            let length = phrase.words.len();
            let run = words.get(..length)?;
            let all = phrase
                .words
                .iter()
                .zip(run)
                .all(|(expected, &(token_index, _))| {
                    let token = &tokens[token_index];
                    match expected {
                        Some(word) => token.lemma() == word,
                        None => token.kind == TokenKind::StopWord,
                    }
                });
            let (&(first_token, first_word), &(last_token, last_word)) =
                (run.first()?, run.last()?);
            all.then(|| Match {
                char_count: tokens[last_token].char_end - tokens[first_token].char_start,
                ids: phrase.ids.clone(),
                first_token,
                last_token,
                first_word,
                last_word,
            })
        })
    }

    /// The characters of `token` a single word matches, and the ids it matches.
    fn match_word(&self, token: &Token<'_>) -> Option<(usize, &TermIds)> {
        let lemma = token.lemma();
        if let Some(ids) = self.exact.get(lemma) {
            return Some((token.char_end - token.char_start, ids));
        }
        let prefix = self.prefix.as_ref()?;
        prefix.words.iter().find_map(|word| {
            if word.is_empty() || !lemma.starts_with(word.as_str()) {
                return None;
            }
            let prefix_bytes = word
                .char_indices()
                .take(prefix.query_characters)
                .last()
                .map_or(0, |(index, character)| index + character.len_utf8());
            let (char_count, _) = token.original_lengths(prefix_bytes);
            Some((char_count, &prefix.ids))
        })
    }
}

/// The separators the index's analyzer uses, as Meilisearch's `allowed_separators`: `None`
/// keeps charabia's defaults.
fn formatting_separators(settings: &TextSettings) -> Option<Vec<String>> {
    if settings.separator_tokens.is_empty() && settings.non_separator_tokens.is_empty() {
        return None;
    }
    let mut all: std::collections::BTreeSet<String> = charabia::separators::DEFAULT_SEPARATORS
        .iter()
        .map(|separator| (*separator).to_owned())
        .collect();
    all.extend(settings.separator_tokens.iter().cloned());
    Some(
        all.into_iter()
            .filter(|separator| !settings.non_separator_tokens.contains(separator))
            .collect(),
    )
}
