//! The analyzer: charabia's tokenizer configured from the text settings (stop words,
//! separators, dictionary) as Meilisearch configures it, the languages of localized fields, and the word positions Meilisearch
//! gives the words of one text.
//!
//! Invariants: a word's position grows by 1 after a soft separator and by
//! [`HARD_SEPARATOR_DISTANCE`] after a hard one; stop words take a position but are never
//! returned as words; words longer than [`WORD_BYTES_MAX`] or empty after trimming are dropped.
//! Analysis is a pure function of the settings and the text.

use std::collections::BTreeSet;

use charabia::{Language, SeparatorKind, Token, TokenKind, Tokenizer, TokenizerBuilder};

use super::ascii_tokenizer::AsciiTokenizer;
use super::locales::FieldLanguages;
use super::settings::TextSettings;

/// The position gap a hard separator (or a new value of the same field) makes.
pub const HARD_SEPARATOR_DISTANCE: u32 = 8;
/// Longest indexed word (Meilisearch's limit: half of LMDB's 511-byte key).
pub const WORD_BYTES_MAX: usize = 255;
/// Positions per field: positions are `u16`.
pub const FIELD_POSITIONS_MAX: u32 = 1 << 16;

/// One word of a text and its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionedWord {
    pub word: String,
    pub position: u32,
}

/// charabia configured by the settings.
pub struct Analyzer {
    stop_words: fst::Set<Vec<u8>>,
    /// `None` keeps charabia's default separators.
    separators: Option<Vec<String>>,
    dictionary: Option<Vec<String>>,
    /// The `localizedAttributes` rules.
    field_languages: FieldLanguages,
}

/// The normalized form of `text` under a default tokenizer: its word lemmas joined by spaces.
fn normalized_phrase(tokenizer: &Tokenizer<'_>, text: &str) -> String {
    tokenizer
        .tokenize(text)
        .filter(|token| !token.is_separator())
        .map(|token| token.lemma().trim().to_owned())
        .filter(|lemma| !lemma.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Analyzer {
    pub fn new(settings: &TextSettings) -> Analyzer {
        let default_tokenizer = TokenizerBuilder::<Vec<u8>>::new().into_tokenizer();
        let stop_words: BTreeSet<String> = settings
            .stop_words
            .iter()
            .map(|word| normalized_phrase(&default_tokenizer, word))
            .filter(|word| !word.is_empty())
            .collect();
        // An empty set skips fst's builder, whose registry alone costs a large allocation.
        let stop_words = if stop_words.is_empty() {
            fst::Set::default()
        } else {
            fst::Set::from_iter(stop_words.iter())
                .expect("a BTreeSet iterates in the sorted order fst requires")
        };
        let separators =
            if settings.separator_tokens.is_empty() && settings.non_separator_tokens.is_empty() {
                None
            } else {
                let mut all: BTreeSet<String> = charabia::separators::DEFAULT_SEPARATORS
                    .iter()
                    .map(|separator| (*separator).to_owned())
                    .collect();
                all.extend(settings.separator_tokens.iter().cloned());
                Some(
                    all.into_iter()
                        .filter(|separator| !settings.non_separator_tokens.contains(separator))
                        .collect(),
                )
            };
        let dictionary = (!settings.dictionary.is_empty())
            .then(|| settings.dictionary.iter().cloned().collect());
        Analyzer {
            stop_words,
            separators,
            dictionary,
            field_languages: FieldLanguages::new(&settings.localized_attributes),
        }
    }

    /// The languages of fields (`localizedAttributes`).
    pub fn field_languages(&self) -> &FieldLanguages {
        &self.field_languages
    }

    /// Runs `body` with the configured tokenizer.
    pub fn with_tokenizer<R>(&self, body: impl FnOnce(&Tokenizer<'_>) -> R) -> R {
        let separators: Option<Vec<&str>> = self
            .separators
            .as_ref()
            .map(|list| list.iter().map(String::as_str).collect());
        let dictionary: Option<Vec<&str>> = self
            .dictionary
            .as_ref()
            .map(|list| list.iter().map(String::as_str).collect());
        let mut builder = TokenizerBuilder::new();
        builder.stop_words(&self.stop_words);
        if let Some(separators) = &separators {
            builder.separators(separators);
        }
        if let Some(dictionary) = &dictionary {
            builder.words_dict(dictionary);
        }
        let tokenizer = builder.build();
        body(&tokenizer)
    }

    /// The shortcut for printable ASCII text (see [`AsciiTokenizer`]), when the settings
    /// keep charabia's default separators and add no dictionary words.
    fn ascii_tokenizer(&self) -> Option<AsciiTokenizer<'_>> {
        if self.separators.is_some() || self.dictionary.is_some() {
            return None;
        }
        AsciiTokenizer::new(&self.stop_words)
    }

    /// The words of `text` in `languages` (a field's, if it has any), with positions
    /// starting at `start`: through the ASCII shortcut when it takes the text, else through
    /// `tokenizer` (the one [`Analyzer::with_tokenizer`] builds).
    pub fn words_with(
        &self,
        tokenizer: &Tokenizer<'_>,
        text: &str,
        languages: Option<&[Language]>,
        start: u32,
    ) -> Vec<PositionedWord> {
        collected(|mut visit| self.each_word_with(tokenizer, text, languages, start, &mut visit))
    }

    /// Calls `visit` with each word of `text` (borrowed, so that a word already known costs
    /// no allocation) and its position, in order: the words and positions
    /// [`Analyzer::words_with`] answers.
    pub fn each_word_with(
        &self,
        tokenizer: &Tokenizer<'_>,
        text: &str,
        languages: Option<&[Language]>,
        start: u32,
        visit: &mut impl FnMut(&str, u32),
    ) {
        if languages.is_none()
            && let Some(ascii) = self.ascii_tokenizer()
            && let Some(tokens) = ascii.tokens(text)
        {
            each_positioned_word(tokens, start, visit);
            return;
        }
        each_positioned_word(
            tokenizer.tokenize_with_allow_list(text, languages),
            start,
            visit,
        );
    }

    /// The words of `text` with positions starting at `start`.
    pub fn words(&self, text: &str, start: u32) -> Vec<PositionedWord> {
        self.with_tokenizer(|tokenizer| self.words_with(tokenizer, text, None, start))
    }

    /// The normalized words of `text`, in order, stop words included (used for synonyms and
    /// settings words).
    pub fn normalize_words(&self, text: &str) -> Vec<String> {
        self.with_tokenizer(|tokenizer| {
            tokenizer
                .tokenize(text)
                .filter(|token| !token.is_separator())
                .map(|token| token.lemma().trim().to_owned())
                .filter(|lemma| !lemma.is_empty())
                .collect()
        })
    }
}

/// Meilisearch's position rule over a token stream.
pub fn positioned_words<'o>(
    tokens: impl Iterator<Item = Token<'o>>,
    start: u32,
) -> Vec<PositionedWord> {
    collected(|mut visit| each_positioned_word(tokens, start, &mut visit))
}

/// The words `each` visits, with their positions, collected.
fn collected(each: impl FnOnce(&mut dyn FnMut(&str, u32))) -> Vec<PositionedWord> {
    let mut words = Vec::new();
    each(&mut |word, position| {
        words.push(PositionedWord {
            word: word.to_owned(),
            position,
        });
    });
    words
}

/// [`positioned_words`] without collecting: `visit` gets each word and its position.
fn each_positioned_word<'o>(
    tokens: impl Iterator<Item = Token<'o>>,
    start: u32,
    visit: &mut impl FnMut(&str, u32),
) {
    let mut position = start;
    let mut previous: Option<TokenKind> = None;
    for token in tokens.skip_while(Token::is_separator) {
        match token.kind {
            TokenKind::Word | TokenKind::StopWord if !token.lemma().is_empty() => {
                position += match previous {
                    Some(TokenKind::Separator(SeparatorKind::Hard)) => HARD_SEPARATOR_DISTANCE,
                    Some(_) => 1,
                    None => 0,
                };
                previous = Some(token.kind);
                if position >= FIELD_POSITIONS_MAX {
                    break;
                }
                let lemma = token.lemma().trim();
                if token.kind == TokenKind::Word
                    && !lemma.is_empty()
                    && lemma.len() <= WORD_BYTES_MAX
                {
                    visit(lemma, position);
                }
            }
            TokenKind::Separator(SeparatorKind::Hard) => previous = Some(token.kind),
            TokenKind::Separator(SeparatorKind::Soft)
                if previous != Some(TokenKind::Separator(SeparatorKind::Hard)) =>
            {
                previous = Some(token.kind);
            }
            _ => {}
        }
    }
}
