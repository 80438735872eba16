//! The parser's state and its scanning primitives over one source string.
//!
//! Every parse function takes a byte offset and returns the offset after what it consumed.
//! Failing comes in two strengths, as in the grammar Meilisearch's parser is written with:
//! [`Halt::Backtrack`] lets the caller try another alternative, [`Halt::Fail`] ends the parse.
//! Offsets are always on character boundaries of `text`.

use super::syntax_error::{SyntaxError, SyntaxErrorKind};

/// Why a parse function stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Halt {
    /// Not this alternative: the caller may try another one.
    Backtrack(SyntaxError),
    /// The input is wrong here, whatever else could be tried.
    Fail(SyntaxError),
}

impl Halt {
    pub(crate) fn into_error(self) -> SyntaxError {
        match self {
            Halt::Backtrack(error) | Halt::Fail(error) => error,
        }
    }

    /// A backtrack becomes a failure (the parser is committed).
    pub(crate) fn commit(self) -> Halt {
        Halt::Fail(self.into_error())
    }
}

/// The result of a parse function: the offset after the match and what was parsed.
pub(crate) type Step<T> = Result<(usize, T), Halt>;

/// Scanning state over one source string of a filter.
pub(crate) struct Cursor<'text> {
    pub(crate) text: &'text str,
    /// Index of this source string in the filter.
    pub(crate) source: usize,
}

/// Characters that may appear in an unquoted value or attribute name.
pub(crate) fn is_value_character(character: char) -> bool {
    character.is_alphanumeric() || matches!(character, '_' | '-' | '.')
}

/// Characters that end the text quoted in a "was expecting a value" error.
fn is_syntax_character(character: char) -> bool {
    character.is_whitespace() || matches!(character, '(' | ')' | '=' | '<' | '>' | '!')
}

/// The whitespace the grammar skips between tokens (ASCII space, tab, CR, LF only).
fn is_multispace(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\r' | '\n')
}

impl<'text> Cursor<'text> {
    pub(crate) fn new(text: &'text str, source: usize) -> Self {
        Self { text, source }
    }

    pub(crate) fn rest(&self, at: usize) -> &'text str {
        &self.text[at..]
    }

    pub(crate) fn is_at_end(&self, at: usize) -> bool {
        at >= self.text.len()
    }

    /// An error on `start..end`.
    pub(crate) fn error(&self, start: usize, end: usize, kind: SyntaxErrorKind) -> SyntaxError {
        SyntaxError { start, end, kind }
    }

    /// An error on everything from `at` to the end of the text.
    pub(crate) fn error_from(&self, at: usize, kind: SyntaxErrorKind) -> SyntaxError {
        self.error(at, self.text.len(), kind)
    }

    pub(crate) fn backtrack<T>(&self, at: usize, kind: SyntaxErrorKind) -> Step<T> {
        Err(Halt::Backtrack(self.error_from(at, kind)))
    }

    pub(crate) fn fail<T>(&self, at: usize, kind: SyntaxErrorKind) -> Step<T> {
        Err(Halt::Fail(self.error_from(at, kind)))
    }

    /// The end of the longest run from `at` of characters satisfying `accept`.
    pub(crate) fn take_while(&self, at: usize, accept: impl Fn(char) -> bool) -> usize {
        let rest = self.rest(at);
        at + rest
            .find(|character| !accept(character))
            .unwrap_or(rest.len())
    }

    pub(crate) fn skip_multispace(&self, at: usize) -> usize {
        self.take_while(at, is_multispace)
    }

    /// At least one multispace character, or `None`.
    pub(crate) fn multispace1(&self, at: usize) -> Option<usize> {
        let end = self.skip_multispace(at);
        (end > at).then_some(end)
    }

    pub(crate) fn skip_unicode_whitespace(&self, at: usize) -> usize {
        self.take_while(at, char::is_whitespace)
    }

    /// End of the unquoted word starting at `at` (may equal `at`).
    pub(crate) fn word_end(&self, at: usize) -> usize {
        self.take_while(at, is_value_character)
    }

    /// End of the text quoted by "was expecting a value" errors.
    pub(crate) fn error_word_end(&self, at: usize) -> usize {
        self.take_while(at, |character| !is_syntax_character(character))
    }

    /// The end of `word` if the whole unquoted word at `at` is exactly `word`.
    pub(crate) fn exact_word(&self, at: usize, word: &str) -> Option<usize> {
        let end = self.word_end(at);
        (end > at && &self.text[at..end] == word).then_some(end)
    }

    /// The end of `tag` if the text at `at` starts with it (a prefix match).
    pub(crate) fn tag(&self, at: usize, tag: &str) -> Option<usize> {
        self.rest(at).starts_with(tag).then(|| at + tag.len())
    }

    /// `tag` surrounded by optional multispace.
    pub(crate) fn spaced_tag(&self, at: usize, tag: &str) -> Option<usize> {
        let end = self.tag(self.skip_multispace(at), tag)?;
        Some(self.skip_multispace(end))
    }

    /// `first WS+ second [WS+ third]`: keywords separated by mandatory whitespace.
    pub(crate) fn keyword_sequence(&self, at: usize, keywords: &[&str]) -> Option<usize> {
        let mut position = at;
        for (index, keyword) in keywords.iter().enumerate() {
            if index > 0 {
                position = self.multispace1(position)?;
            }
            position = self.tag(position, keyword)?;
        }
        Some(position)
    }

    pub(crate) fn next_char(&self, at: usize) -> Option<char> {
        self.rest(at).chars().next()
    }

    fn skip_ascii_digits(&self, at: usize) -> usize {
        self.take_while(at, |character| character.is_ascii_digit())
    }

    /// A decimal floating point literal `[+-]? (digits ('.' digits?)? | '.' digits) ([eE][+-]?digits)?`.
    /// A missing exponent after `e` is a failure, as in Meilisearch's parser. Only the position
    /// of an error matters: the geo functions, its only callers, replace the kind with their own.
    pub(crate) fn float(&self, at: usize) -> Step<()> {
        let mut position = at;
        if matches!(self.next_char(position), Some('+' | '-')) {
            position += 1;
        }
        let digits_end = self.skip_ascii_digits(position);
        if digits_end > position {
            position = digits_end;
            if self.next_char(position) == Some('.') {
                position = self.skip_ascii_digits(position + 1);
            }
        } else if self.next_char(position) == Some('.') {
            let fraction_end = self.skip_ascii_digits(position + 1);
            if fraction_end == position + 1 {
                return self.backtrack(position + 1, SyntaxErrorKind::InvalidPrimary);
            }
            position = fraction_end;
        } else {
            return self.backtrack(position, SyntaxErrorKind::InvalidPrimary);
        }
        if matches!(self.next_char(position), Some('e' | 'E')) {
            let mut exponent = position + 1;
            if matches!(self.next_char(exponent), Some('+' | '-')) {
                exponent += 1;
            }
            let exponent_end = self.skip_ascii_digits(exponent);
            if exponent_end == exponent {
                return self.fail(exponent, SyntaxErrorKind::InvalidPrimary);
            }
            position = exponent_end;
        }
        Ok((position, ()))
    }
}
