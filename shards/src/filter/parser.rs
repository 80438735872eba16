//! The expression grammar: `OR` of `AND` of `NOT` of primaries, primaries being parenthesised
//! expressions, geo functions and conditions on one attribute.
//!
//! ```text
//! filter   = or EOF
//! or       = and ("OR" WS+ and)*
//! and      = not ("AND" WS+ not)*
//! not      = ("NOT" WS+ not) | primary
//! primary  = "(" or ")" | geo | in | not_in | condition | is_null | is_not_null | is_empty
//!          | is_not_empty | vectors_exists | exists | not_exists | to | contains
//!          | not_contains | starts_with | not_starts_with
//! ```
//!
//! Invariants: alternatives are tried in the order above, a failure ends the parse at once and a
//! primary that matches nothing reports "Was expecting an operation …" at its own start; keywords
//! are case-sensitive; each nesting step counts towards [`PARSER_DEPTH_MAX`], so the recursion is
//! bounded whatever the input.

use super::ast::{Condition, Expression, Token};
use super::cursor::{Cursor, Halt, Step};
use super::syntax_error::{SyntaxError, SyntaxErrorKind};

/// The deepest recursion the parser accepts (each parenthesis costs four levels, each `NOT` one).
pub const PARSER_DEPTH_MAX: usize = 200;

impl Cursor<'_> {
    /// Parses the whole text (which must not be blank).
    pub(crate) fn parse_filter(&self) -> Result<Expression, SyntaxError> {
        let (end, expression) = self.or_expression(0, 0).map_err(Halt::into_error)?;
        if !self.is_at_end(end) {
            return Err(self.error_from(end, SyntaxErrorKind::ExpectedEof));
        }
        Ok(expression)
    }

    fn check_depth(&self, at: usize, depth: usize) -> Result<(), Halt> {
        if depth > PARSER_DEPTH_MAX {
            return Err(Halt::Backtrack(
                self.error_from(at, SyntaxErrorKind::DepthLimitReached),
            ));
        }
        Ok(())
    }

    /// `WS* word WS*` where the whole unquoted word must be `word`.
    fn spaced_word(&self, at: usize, word: &str) -> Option<usize> {
        let end = self.exact_word(self.skip_multispace(at), word)?;
        Some(self.skip_multispace(end))
    }

    fn or_expression(&self, at: usize, depth: usize) -> Step<Expression> {
        self.check_depth(at, depth)?;
        let (position, first) = self.and_expression(at, depth + 1)?;
        self.repeated(
            position,
            depth,
            first,
            "OR",
            Self::and_expression,
            Expression::Or,
        )
    }

    fn and_expression(&self, at: usize, depth: usize) -> Step<Expression> {
        self.check_depth(at, depth)?;
        let (position, first) = self.not_expression(at, depth + 1)?;
        self.repeated(
            position,
            depth,
            first,
            "AND",
            Self::not_expression,
            Expression::And,
        )
    }

    /// `first (keyword operand)*`: after the keyword an operand is mandatory.
    fn repeated(
        &self,
        mut position: usize,
        depth: usize,
        first: Expression,
        keyword: &str,
        operand: fn(&Self, usize, usize) -> Step<Expression>,
        combine: fn(Vec<Expression>) -> Expression,
    ) -> Step<Expression> {
        let mut operands = vec![first];
        while let Some(after_keyword) = self.spaced_word(position, keyword) {
            let (after, next) = operand(self, after_keyword, depth + 1).map_err(Halt::commit)?;
            operands.push(next);
            position = after;
        }
        if operands.len() == 1 {
            return Ok((position, operands.remove(0)));
        }
        Ok((position, combine(operands)))
    }

    fn not_expression(&self, at: usize, depth: usize) -> Step<Expression> {
        self.check_depth(at, depth)?;
        if let Some(after_not) = self.spaced_word(at, "NOT") {
            let (end, inner) = self
                .not_expression(after_not, depth + 1)
                .map_err(Halt::commit)?;
            return Ok((end, inner.negate()));
        }
        self.primary(at, depth + 1)
    }

    fn primary(&self, at: usize, depth: usize) -> Step<Expression> {
        self.check_depth(at, depth)?;
        if let Some(after_parenthesis) = self.spaced_tag(at, "(") {
            let (position, inner) = self
                .or_expression(after_parenthesis, depth + 1)
                .map_err(Halt::commit)?;
            return match self.spaced_tag(position, ")") {
                Some(end) => Ok((end, inner)),
                None => self.fail(at, SyntaxErrorKind::MissingClosingDelimiter(')')),
            };
        }
        // The primaries other than a parenthesised expression, in the order they are tried.
        let alternatives: [fn(&Self, usize) -> Step<Expression>; 18] = [
            Self::geo_radius,
            Self::geo_bounding_box,
            Self::geo_polygon,
            Self::in_list,
            Self::not_in_list,
            Self::comparison,
            Self::is_null,
            Self::is_not_null,
            Self::is_empty,
            Self::is_not_empty,
            Self::vectors_exists,
            Self::exists,
            Self::not_exists,
            Self::range,
            Self::contains,
            Self::not_contains,
            Self::starts_with,
            Self::not_starts_with,
        ];
        for alternative in alternatives {
            match alternative(self, at) {
                Err(Halt::Backtrack(_)) => continue,
                done => return done,
            }
        }
        // A reserved keyword where an attribute was expected deserves its own message.
        if let Err(Halt::Backtrack(error)) = self.comparison(at) {
            if error.kind
                == (SyntaxErrorKind::ExpectedValue {
                    reserved_keyword: true,
                })
            {
                return Err(Halt::Fail(error));
            }
        }
        self.backtrack(at, SyntaxErrorKind::InvalidPrimary)
    }

    fn no_match<T>(&self, at: usize) -> Step<T> {
        self.backtrack(at, SyntaxErrorKind::InvalidPrimary)
    }

    /// A value that must be there: a backtrack becomes a failure.
    fn mandatory_value(&self, at: usize) -> Step<Token> {
        self.value(at).map_err(Halt::commit)
    }

    fn in_list(&self, at: usize) -> Step<Expression> {
        let (position, attribute) = self.value(at)?;
        let (end, values) = self.in_body(position)?;
        Ok((end, Expression::In { attribute, values }))
    }

    fn not_in_list(&self, at: usize) -> Step<Expression> {
        let (position, attribute) = self.value(at)?;
        let Some(position) = self.exact_word(position, "NOT") else {
            return self.no_match(at);
        };
        let (end, values) = self.in_body(position)?;
        Ok((end, Expression::In { attribute, values }.negate()))
    }

    /// `"IN" WS* "[" value_list "]"`: committed after `IN`.
    fn in_body(&self, at: usize) -> Step<Vec<Token>> {
        let Some(after_in) = self.spaced_word(at, "IN") else {
            return self.no_match(at);
        };
        let Some(after_bracket) = self.tag(after_in, "[") else {
            return self.fail(after_in, SyntaxErrorKind::InOpeningBracket);
        };
        let (position, values) = self.value_list(after_bracket)?;
        match self.spaced_tag(position, "]") {
            Some(end) => Ok((end, values)),
            None if self.is_at_end(position) => {
                self.fail(position, SyntaxErrorKind::InClosingBracket)
            }
            None => self.fail(position, SyntaxErrorKind::InExpectedValue),
        }
    }

    /// `(value ("," value)* ","?)?`
    fn value_list(&self, at: usize) -> Step<Vec<Token>> {
        let (mut position, first) = match self.value(at) {
            Ok(parsed) => parsed,
            Err(Halt::Backtrack(_)) => return Ok((at, Vec::new())),
            Err(failure) => return Err(failure),
        };
        let mut values = vec![first];
        while let Some(after_comma) = self.spaced_tag(position, ",") {
            match self.value(after_comma) {
                Ok((after, value)) => {
                    values.push(value);
                    position = after;
                }
                Err(Halt::Backtrack(_)) => break,
                Err(failure) => return Err(failure),
            }
        }
        if let Some(after_comma) = self.spaced_tag(position, ",") {
            position = after_comma;
        }
        Ok((position, values))
    }

    /// `value ("<=" | ">=" | "!=" | "<" | ">" | "=") value`
    fn comparison(&self, at: usize) -> Step<Expression> {
        let (position, attribute) = self.value(at)?;
        let operators = ["<=", ">=", "!=", "<", ">", "="];
        let Some(operator) = operators
            .into_iter()
            .find(|operator| self.tag(position, operator).is_some())
        else {
            return self.no_match(at);
        };
        let (end, value) = self.mandatory_value(position + operator.len())?;
        let condition = match operator {
            "<=" => Condition::LowerThanOrEqual(value),
            ">=" => Condition::GreaterThanOrEqual(value),
            "!=" => Condition::NotEqual(value),
            "<" => Condition::LowerThan(value),
            ">" => Condition::GreaterThan(value),
            _ => Condition::Equal(value),
        };
        Ok((
            end,
            Expression::Condition {
                attribute,
                condition,
            },
        ))
    }

    /// `value keywords…` for the operators without operand.
    fn keyword_condition(
        &self,
        at: usize,
        keywords: &[&str],
        condition: Condition,
        negated: bool,
    ) -> Step<Expression> {
        let (position, attribute) = self.value(at)?;
        let Some(end) = self.keyword_sequence(position, keywords) else {
            return self.no_match(at);
        };
        let expression = Expression::Condition {
            attribute,
            condition,
        };
        Ok((
            end,
            if negated {
                expression.negate()
            } else {
                expression
            },
        ))
    }

    fn is_null(&self, at: usize) -> Step<Expression> {
        self.keyword_condition(at, &["IS", "NULL"], Condition::Null, false)
    }

    fn is_not_null(&self, at: usize) -> Step<Expression> {
        self.keyword_condition(at, &["IS", "NOT", "NULL"], Condition::Null, true)
    }

    fn is_empty(&self, at: usize) -> Step<Expression> {
        self.keyword_condition(at, &["IS", "EMPTY"], Condition::Empty, false)
    }

    fn is_not_empty(&self, at: usize) -> Step<Expression> {
        self.keyword_condition(at, &["IS", "NOT", "EMPTY"], Condition::Empty, true)
    }

    fn exists(&self, at: usize) -> Step<Expression> {
        self.keyword_condition(at, &["EXISTS"], Condition::Exists, false)
    }

    fn not_exists(&self, at: usize) -> Step<Expression> {
        self.keyword_condition(at, &["NOT", "EXISTS"], Condition::Exists, true)
    }

    /// `value value "TO" WS+ value`
    fn range(&self, at: usize) -> Step<Expression> {
        let (position, attribute) = self.value(at)?;
        let (position, from) = self.value(position)?;
        let Some(position) = self
            .tag(position, "TO")
            .and_then(|end| self.multispace1(end))
        else {
            return self.no_match(at);
        };
        let (end, to) = self.mandatory_value(position)?;
        Ok((
            end,
            Expression::Condition {
                attribute,
                condition: Condition::Between { from, to },
            },
        ))
    }

    /// `value [NOT WS+] keyword value` for `CONTAINS` and `STARTS WITH`.
    fn word_condition(
        &self,
        at: usize,
        keyword: &str,
        negated: bool,
        make: fn(Token, Token) -> Condition,
    ) -> Step<Expression> {
        let (position, attribute) = self.value(at)?;
        let keyword_start = if negated {
            match self
                .tag(position, "NOT")
                .and_then(|end| self.multispace1(end))
            {
                Some(start) => start,
                None => return self.no_match(at),
            }
        } else {
            position
        };
        let Some(keyword_end) = self.tag(keyword_start, keyword) else {
            return self.no_match(at);
        };
        let keyword = Token::raw(self.text, self.source, keyword_start, keyword_end);
        let (end, word) = self.mandatory_value(keyword_end)?;
        let expression = Expression::Condition {
            attribute,
            condition: make(keyword, word),
        };
        Ok((
            end,
            if negated {
                expression.negate()
            } else {
                expression
            },
        ))
    }

    fn contains(&self, at: usize) -> Step<Expression> {
        self.word_condition(at, "CONTAINS", false, |keyword, word| Condition::Contains {
            keyword,
            word,
        })
    }

    fn not_contains(&self, at: usize) -> Step<Expression> {
        self.word_condition(at, "CONTAINS", true, |keyword, word| Condition::Contains {
            keyword,
            word,
        })
    }

    fn starts_with(&self, at: usize) -> Step<Expression> {
        self.word_condition(at, "STARTS WITH", false, |keyword, word| {
            Condition::StartsWith { keyword, word }
        })
    }

    fn not_starts_with(&self, at: usize) -> Step<Expression> {
        self.word_condition(at, "STARTS WITH", true, |keyword, word| {
            Condition::StartsWith { keyword, word }
        })
    }
}
