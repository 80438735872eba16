//! Values and attribute names: unquoted words, `'single'` or `"double"` quoted text, escapes.
//!
//! Invariants: a value skips Unicode whitespace before it and ASCII whitespace after it; the
//! token's position is the raw text (between the quotes when quoted); its value has the escaped
//! quote of its own kind replaced, then the usual backslash escapes (`\n`, `\t`, `\\`, `\x41`,
//! `\u{1F600}`, octal…) decoded. Reserved words must be quoted to be used as values.

use super::ast::Token;
use super::cursor::{Cursor, Halt, Step, is_value_character};
use super::syntax_error::SyntaxErrorKind;

/// Words that cannot be used unquoted as values or attribute names (case-sensitive).
const RESERVED_KEYWORDS: [&str; 14] = [
    "AND",
    "OR",
    "IN",
    "NOT",
    "TO",
    "EXISTS",
    "IS",
    "NULL",
    "EMPTY",
    "CONTAINS",
    "STARTS",
    "WITH",
    "_geoRadius",
    "_geoBoundingBox",
];

/// The raw text of a value before escape decoding.
struct RawValue {
    /// Offset after the value (after the closing quote when quoted).
    end: usize,
    start_of_text: usize,
    end_of_text: usize,
    /// The text with escaped quotes replaced, when it had any.
    quote_unescaped: Option<String>,
}

/// Why a vector-filter part could not be read.
pub(crate) enum VectorValueError {
    /// A quote was opened and not closed.
    UnclosedQuote,
    /// Anything else.
    Invalid,
}

impl Cursor<'_> {
    /// `value = WS* (word | singleQuoted | doubleQuoted) WS*`.
    pub(crate) fn value(&self, at: usize) -> Step<Token> {
        let at = self.skip_unicode_whitespace(at);
        self.reject_geo_functions_as_value(at)?;
        let raw = match self.next_char(at) {
            Some(quote @ ('\'' | '"')) => self.quoted(at, quote)?,
            _ => self.unquoted_word(at)?,
        };
        let end = self.skip_multispace(raw.end);
        let token = self.decode_escapes(&raw)?;
        Ok((end, token))
    }

    /// The reserved geo names fail wherever a value is expected.
    fn reject_geo_functions_as_value(&self, at: usize) -> Result<(), Halt> {
        let kind = if self.tag(at, "_geoPoint").is_some() {
            SyntaxErrorKind::ReservedGeo("_geoPoint")
        } else if self.tag(at, "_geoDistance").is_some() {
            SyntaxErrorKind::ReservedGeo("_geoDistance")
        } else if self.exact_word(at, "_geo").is_some() {
            SyntaxErrorKind::ReservedGeo("_geo")
        } else if self.exact_word(at, "_geoRadius").is_some() {
            SyntaxErrorKind::MisusedGeoRadius
        } else if self.exact_word(at, "_geoBoundingBox").is_some() {
            SyntaxErrorKind::MisusedGeoBoundingBox
        } else {
            return Ok(());
        };
        Err(Halt::Fail(self.error_from(at, kind)))
    }

    fn unquoted_word(&self, at: usize) -> Result<RawValue, Halt> {
        let end = self.word_end(at);
        let reserved_keyword = RESERVED_KEYWORDS.contains(&&self.text[at..end]);
        if end == at || reserved_keyword {
            let kind = SyntaxErrorKind::ExpectedValue { reserved_keyword };
            return Err(Halt::Backtrack(self.error(
                at,
                self.error_word_end(at),
                kind,
            )));
        }
        Ok(RawValue {
            end,
            start_of_text: at,
            end_of_text: end,
            quote_unescaped: None,
        })
    }

    /// The text between `quote` at `at` and the next unescaped `quote`.
    fn quoted(&self, at: usize, quote: char) -> Result<RawValue, Halt> {
        let start_of_text = at + quote.len_utf8();
        match self.scan_quoted(start_of_text, quote) {
            QuotedScan::Closed {
                end_of_text,
                escaped_quote,
            } => {
                let text = &self.text[start_of_text..end_of_text];
                let quote_unescaped =
                    escaped_quote.then(|| text.replace(&format!("\\{quote}"), &quote.to_string()));
                let end = end_of_text + quote.len_utf8();
                Ok(RawValue {
                    end,
                    start_of_text,
                    end_of_text,
                    quote_unescaped,
                })
            }
            QuotedScan::DanglingBackslash => Err(Halt::Fail(
                self.error_from(start_of_text, SyntaxErrorKind::MalformedValue),
            )),
            QuotedScan::Unclosed => Err(Halt::Fail(
                self.error_from(at, SyntaxErrorKind::MissingClosingDelimiter(quote)),
            )),
        }
    }

    fn scan_quoted(&self, start_of_text: usize, quote: char) -> QuotedScan {
        let mut escaped_quote = false;
        let mut characters = self.rest(start_of_text).char_indices();
        while let Some((offset, character)) = characters.next() {
            if character == quote {
                return QuotedScan::Closed {
                    end_of_text: start_of_text + offset,
                    escaped_quote,
                };
            }
            if character == '\\' {
                match characters.next() {
                    Some((_, escaped)) => escaped_quote |= escaped == quote,
                    None => return QuotedScan::DanglingBackslash,
                }
            }
        }
        QuotedScan::Unclosed
    }

    fn decode_escapes(&self, raw: &RawValue) -> Result<Token, Halt> {
        let text = &self.text[raw.start_of_text..raw.end_of_text];
        let value = raw.quote_unescaped.as_deref().unwrap_or(text);
        let error = |kind| self.error(raw.start_of_text, raw.end_of_text, kind);
        match unescaper::unescape(value) {
            Ok(value) => Ok(Token {
                value,
                source: self.source,
                start: raw.start_of_text,
                end: raw.end_of_text,
            }),
            // Meilisearch's parser reports "incomplete input" here and its caller panics; a
            // malformed value is the closest well-formed answer.
            Err(unescaper::Error::IncompleteStr(_)) => {
                Err(Halt::Fail(error(SyntaxErrorKind::MalformedValue)))
            }
            Err(unescaper::Error::ParseIntError { .. }) => Err(Halt::Backtrack(error(
                SyntaxErrorKind::InvalidEscapedNumber,
            ))),
            Err(unescaper::Error::InvalidChar { .. }) => {
                Err(Halt::Backtrack(error(SyntaxErrorKind::MalformedValue)))
            }
        }
    }

    /// A part of a vector filter: quoted text or a word without dots.
    pub(crate) fn vector_value(&self, at: usize) -> Result<(usize, Token), VectorValueError> {
        let raw = match self.next_char(at) {
            Some(quote @ ('\'' | '"')) => {
                let start_of_text = at + quote.len_utf8();
                match self.scan_quoted(start_of_text, quote) {
                    QuotedScan::Closed {
                        end_of_text,
                        escaped_quote,
                    } => {
                        let text = &self.text[start_of_text..end_of_text];
                        let quote_unescaped = escaped_quote
                            .then(|| text.replace(&format!("\\{quote}"), &quote.to_string()));
                        let end = end_of_text + quote.len_utf8();
                        RawValue {
                            end,
                            start_of_text,
                            end_of_text,
                            quote_unescaped,
                        }
                    }
                    QuotedScan::Unclosed => return Err(VectorValueError::UnclosedQuote),
                    QuotedScan::DanglingBackslash => return Err(VectorValueError::Invalid),
                }
            }
            _ => {
                let end = self.take_while(at, |c| is_value_character(c) && c != '.');
                if end == at {
                    return Err(VectorValueError::Invalid);
                }
                RawValue {
                    end,
                    start_of_text: at,
                    end_of_text: end,
                    quote_unescaped: None,
                }
            }
        };
        let token = self
            .decode_escapes(&raw)
            .map_err(|_| VectorValueError::Invalid)?;
        Ok((raw.end, token))
    }
}

enum QuotedScan {
    Closed {
        end_of_text: usize,
        escaped_quote: bool,
    },
    DanglingBackslash,
    Unclosed,
}
