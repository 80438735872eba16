//! The dataset's own vocabulary: the searchable text of each document (`name`, `summary`),
//! its tokens, and every word ranked by document frequency and cut into frequency bands.
//!
//! Tokenization is deliberately simple and independent of any server: lowercase, split on
//! every character that is not alphanumeric. Invariants: a token is never empty and is
//! lowercase; `Vocabulary::words` holds each word once, sorted by document frequency
//! (descending) then by the word (ascending), so the order — and every query drawn from it —
//! depends only on the documents; only words seen in at least `DOCUMENT_FREQUENCY_MIN`
//! documents, with at least `WORD_CHARS_MIN` characters and one letter, are kept.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use serde::Deserialize;

/// Fewest documents a word must appear in to be drawn as a query word (a word of one
/// document is a typo or an identifier more often than a word people search for).
pub const DOCUMENT_FREQUENCY_MIN: u32 = 2;
/// Fewest characters of a vocabulary word.
pub const WORD_CHARS_MIN: usize = 2;
/// Share of the ranked vocabulary in the `Frequent` band (its most frequent words).
pub const FREQUENT_BAND_SHARE: f64 = 0.01;
/// Share of the ranked vocabulary in the `Frequent` and `Common` bands together.
pub const COMMON_BAND_SHARE_END: f64 = 0.10;

/// The searchable text of one document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct DocumentText {
    /// The package name.
    #[serde(default)]
    pub name: Option<String>,
    /// The one-line summary.
    #[serde(default)]
    pub summary: Option<String>,
}

impl DocumentText {
    /// The searchable text of one NDJSON line; `None` when the line is not a JSON object.
    pub fn parse(line: &str) -> Option<DocumentText> {
        serde_json::from_str(line).ok()
    }

    /// The tokens of the name followed by those of the summary.
    pub fn tokens(&self) -> Vec<String> {
        let mut tokens = Vec::new();
        for text in [&self.name, &self.summary].into_iter().flatten() {
            tokens.extend(tokenize(text).into_iter().map(|token| token.word));
        }
        tokens
    }
}

/// One token of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The lowercase word.
    pub word: String,
    /// Where it is in the original text, in bytes.
    pub span: Range<usize>,
}

/// The tokens of `text`: maximal runs of alphanumeric characters, lowercased.
pub fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut start = None;
    for (index, character) in text.char_indices() {
        match (character.is_alphanumeric(), start) {
            (true, None) => start = Some(index),
            (false, Some(begin)) => {
                tokens.push(token(text, begin..index));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(begin) = start {
        tokens.push(token(text, begin..text.len()));
    }
    tokens
}

fn token(text: &str, span: Range<usize>) -> Token {
    Token {
        word: text[span.clone()].to_lowercase(),
        span,
    }
}

/// Whether `word` may be drawn as a query word.
pub fn is_query_word(word: &str) -> bool {
    word.chars().count() >= WORD_CHARS_MIN && word.chars().any(char::is_alphabetic)
}

/// A band of document frequency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Band {
    /// The most frequent words.
    Frequent,
    /// The next most frequent.
    Common,
    /// The rest.
    Rare,
}

/// Every band, most frequent first.
pub const BANDS: [Band; 3] = [Band::Frequent, Band::Common, Band::Rare];

/// Ranked words and their bands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    /// `(word, document frequency)`, most frequent first, ties by word.
    pub words: Vec<(String, u32)>,
}

impl Vocabulary {
    /// Counts in how many documents each word appears and ranks the words.
    pub fn build(documents: &[DocumentText]) -> Vocabulary {
        let mut frequencies: HashMap<String, u32> = HashMap::new();
        for document in documents {
            let distinct: HashSet<String> = document.tokens().into_iter().collect();
            for word in distinct {
                *frequencies.entry(word).or_insert(0) += 1;
            }
        }
        let mut words: Vec<(String, u32)> = frequencies
            .into_iter()
            .filter(|(word, frequency)| *frequency >= DOCUMENT_FREQUENCY_MIN && is_query_word(word))
            .collect();
        words.sort_by(|left, right| right.1.cmp(&left.1).then_with(|| left.0.cmp(&right.0)));
        Vocabulary { words }
    }

    /// The ranks (indexes into `words`) of `band`; never empty when `words` is not.
    pub fn band_range(&self, band: Band) -> Range<usize> {
        let total = self.words.len();
        let cut = |share: f64| ((total as f64 * share).ceil() as usize).clamp(1, total.max(1));
        let frequent_end = cut(FREQUENT_BAND_SHARE).min(total);
        let common_end = cut(COMMON_BAND_SHARE_END).max(frequent_end).min(total);
        let range = match band {
            Band::Frequent => 0..frequent_end,
            Band::Common => frequent_end..common_end,
            Band::Rare => common_end..total,
        };
        if range.is_empty() { 0..total } else { range }
    }

    /// The words of `band`.
    pub fn band(&self, band: Band) -> &[(String, u32)] {
        &self.words[self.band_range(band)]
    }

    /// Whether there is no word at all.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn document(name: &str, summary: &str) -> DocumentText {
        DocumentText {
            name: Some(name.to_string()),
            summary: Some(summary.to_string()),
        }
    }

    #[test]
    fn tokens_are_lowercase_alphanumeric_runs_with_their_spans() {
        let tokens = tokenize("Django-FSM logger, v2.0 für Ümlauts");
        let words: Vec<&str> = tokens.iter().map(|token| token.word.as_str()).collect();
        assert_eq!(
            words,
            ["django", "fsm", "logger", "v2", "0", "für", "ümlauts"]
        );
        assert_eq!(tokens[1].span, 7..10);
        assert!(tokenize(" -- ").is_empty());
    }

    #[test]
    fn document_text_reads_name_and_summary_and_ignores_the_rest() {
        let text =
            DocumentText::parse(r#"{"id":1,"name":"pydoa","summary":"Python DOA.","year":2020}"#)
                .expect("the call succeeds");
        assert_eq!(text.tokens(), ["pydoa", "python", "doa"]);
        let no_summary =
            DocumentText::parse(r#"{"id":2,"name":"x-y"}"#).expect("parse reads valid input");
        assert_eq!(no_summary.tokens(), ["x", "y"]);
        assert!(DocumentText::parse("[1]").is_none());
    }

    #[test]
    fn words_are_ranked_by_document_frequency_then_alphabetically() {
        let documents = [
            document("alpha", "beta beta gamma"),
            document("beta", "gamma"),
            document("delta", "beta 42"),
            document("42", "alpha"),
        ];
        let vocabulary = Vocabulary::build(&documents);
        assert_eq!(
            vocabulary.words,
            [
                ("beta".to_string(), 3),
                ("alpha".to_string(), 2),
                ("gamma".to_string(), 2)
            ]
        );
    }

    #[test]
    fn bands_partition_the_ranking_and_are_never_empty() {
        let words = (0..1000)
            .map(|index| (format!("w{index}"), 1000 - index))
            .collect();
        let vocabulary = Vocabulary { words };
        assert_eq!(vocabulary.band_range(Band::Frequent), 0..10);
        assert_eq!(vocabulary.band_range(Band::Common), 10..100);
        assert_eq!(vocabulary.band_range(Band::Rare), 100..1000);
        let tiny = Vocabulary {
            words: vec![("only".to_string(), 2)],
        };
        for band in BANDS {
            assert_eq!(tiny.band(band).len(), 1, "{band:?}");
        }
    }
}
