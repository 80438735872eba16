//! The vector filter `_vectors[.embedder[.fragments.name|.userProvided|.documentTemplate|.regenerate]] EXISTS`.
//!
//! Invariant: after `_vectors.` the parser is committed; every problem is a failure with the
//! vector filter's own message.

use super::ast::{Expression, Token, VectorFilter};
use super::cursor::{Cursor, Halt, Step};
use super::syntax_error::SyntaxErrorKind;
use super::value::VectorValueError;

impl Cursor<'_> {
    /// `vectors ("EXISTS" | "NOT" WS+ "EXISTS")`.
    pub(crate) fn vectors_exists(&self, at: usize) -> Step<Expression> {
        let (position, (attribute, embedder, filter)) = self.vectors(at)?;
        let exists = Expression::VectorExists {
            attribute,
            embedder,
            filter,
        };
        if let Some(end) = self.tag(position, "EXISTS") {
            return Ok((end, exists));
        }
        if let Some(end) = self.keyword_sequence(position, &["NOT", "EXISTS"]) {
            return Ok((end, exists.negate()));
        }
        self.fail(position, SyntaxErrorKind::VectorFilterOperation)
    }

    fn vectors(&self, at: usize) -> Step<(Token, Option<Token>, VectorFilter)> {
        let start = self.skip_multispace(at);
        let Some(after_name) = self.tag(start, "_vectors") else {
            return self.backtrack(at, SyntaxErrorKind::InvalidPrimary);
        };
        let attribute = Token::raw(self.text, self.source, start, after_name);
        if let Some(position) = self.multispace1(after_name) {
            return Ok((position, (attribute, None, VectorFilter::None)));
        }
        let Some(after_dot) = self.tag(after_name, ".") else {
            return self.backtrack(after_name, SyntaxErrorKind::InvalidPrimary);
        };
        if self.next_char(after_dot) == Some(' ') {
            let kind = SyntaxErrorKind::VectorFilterMissingEmbedder;
            return Err(Halt::Fail(self.error(after_dot, after_dot + 1, kind)));
        }
        let (position, embedder) =
            self.committed_vector_value(after_dot, SyntaxErrorKind::VectorFilterInvalidEmbedder)?;
        let (position, filter) = self.vector_suffix(position)?;
        if let Some(after_point) = self.tag(position, ".") {
            return Err(self.unknown_suffix(position, after_point, &filter));
        }
        match self.multispace1(position) {
            Some(end) => Ok((end, (attribute, Some(embedder), filter))),
            None => self.fail(position, SyntaxErrorKind::VectorFilterLeftover),
        }
    }

    fn vector_suffix(&self, position: usize) -> Step<VectorFilter> {
        if let Some(after_keyword) = self.tag(position, ".fragments") {
            let Some(after_dot) = self.tag(after_keyword, ".") else {
                return self.fail(after_keyword, SyntaxErrorKind::VectorFilterMissingFragment);
            };
            let kind = SyntaxErrorKind::VectorFilterInvalidFragment;
            let (end, fragment) = self.committed_vector_value(after_dot, kind)?;
            return Ok((end, VectorFilter::Fragment(fragment)));
        }
        let keywords = [
            (".userProvided", VectorFilter::UserProvided),
            (".documentTemplate", VectorFilter::DocumentTemplate),
            (".regenerate", VectorFilter::Regenerate),
        ];
        for (keyword, filter) in keywords {
            if let Some(end) = self.tag(position, keyword) {
                return Ok((end, filter));
            }
        }
        Ok((position, VectorFilter::None))
    }

    /// A `.` after a complete vector filter: report what follows it.
    fn unknown_suffix(&self, point: usize, after_point: usize, filter: &VectorFilter) -> Halt {
        let previous = match filter {
            VectorFilter::Fragment(_) => Some("fragments"),
            VectorFilter::DocumentTemplate => Some("documentTemplate"),
            VectorFilter::UserProvided => Some("userProvided"),
            VectorFilter::Regenerate => Some("regenerate"),
            VectorFilter::None => None,
        };
        let (found, start, end) = match self.vector_value(after_point) {
            Ok((_, token)) => (token.value, token.start, token.end),
            Err(_) => (".".to_owned(), point, after_point),
        };
        let kind = SyntaxErrorKind::VectorFilterUnknownSuffix { previous, found };
        Halt::Fail(self.error(start, end, kind))
    }

    fn committed_vector_value(&self, at: usize, kind: SyntaxErrorKind) -> Step<Token> {
        self.vector_value(at).map_err(|error| {
            let kind = match error {
                VectorValueError::UnclosedQuote => SyntaxErrorKind::VectorFilterInvalidQuotes,
                VectorValueError::Invalid => kind,
            };
            Halt::Fail(self.error_from(at, kind))
        })
    }
}
