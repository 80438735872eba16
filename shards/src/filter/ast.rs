//! The parsed filter: tokens that remember where they came from, conditions and expressions.
//!
//! Invariants: a [`Token`]'s `start..end` is a byte range on character boundaries of the source
//! string number `source` of its [`super::Filter`]; that range is the raw text the token was read
//! from (for a quoted value, the text between the quotes), while `value` is the unescaped text.
//! Double negations are removed by the parser, so a `Not` never directly wraps a `Not`.

/// A piece of the filter text together with its position, used for values and error markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The text after unescaping (what comparisons use).
    pub value: String,
    /// Index of the source string inside the filter (an array filter has several).
    pub source: usize,
    /// Byte offset where the raw text starts in the source.
    pub start: usize,
    /// Byte offset where the raw text ends in the source.
    pub end: usize,
}

impl Token {
    /// A token whose value is its raw text.
    pub(crate) fn raw(text: &str, source: usize, start: usize, end: usize) -> Self {
        Self {
            value: text[start..end].to_owned(),
            source,
            start,
            end,
        }
    }
}

/// The operator of a condition on one attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    GreaterThan(Token),
    GreaterThanOrEqual(Token),
    Equal(Token),
    NotEqual(Token),
    Null,
    Empty,
    Exists,
    LowerThan(Token),
    LowerThanOrEqual(Token),
    Between {
        from: Token,
        to: Token,
    },
    /// `keyword` is the `CONTAINS` word itself, the position reported when the feature is off.
    Contains {
        keyword: Token,
        word: Token,
    },
    StartsWith {
        keyword: Token,
        word: Token,
    },
}

impl Condition {
    /// The operator as Meilisearch names it in its messages.
    pub fn operator(&self) -> &'static str {
        match self {
            Condition::GreaterThan(_) => ">",
            Condition::GreaterThanOrEqual(_) => ">=",
            Condition::Equal(_) => "=",
            Condition::NotEqual(_) => "!=",
            Condition::Null => "IS NULL",
            Condition::Empty => "IS EMPTY",
            Condition::Exists => "EXISTS",
            Condition::LowerThan(_) => "<",
            Condition::LowerThanOrEqual(_) => "<=",
            Condition::Between { .. } => "TO",
            Condition::Contains { .. } => "CONTAINS",
            Condition::StartsWith { .. } => "STARTS WITH",
        }
    }
}

/// Which part of a document's vectors a `_vectors… EXISTS` filter looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorFilter {
    Fragment(Token),
    DocumentTemplate,
    UserProvided,
    Regenerate,
    None,
}

/// A filter expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expression {
    Not(Box<Expression>),
    Condition {
        attribute: Token,
        condition: Condition,
    },
    In {
        attribute: Token,
        values: Vec<Token>,
    },
    Or(Vec<Expression>),
    And(Vec<Expression>),
    VectorExists {
        attribute: Token,
        embedder: Option<Token>,
        filter: VectorFilter,
    },
    GeoRadius {
        latitude: Token,
        longitude: Token,
        radius: Token,
        resolution: Option<Token>,
    },
    GeoBoundingBox {
        top_right: [Token; 2],
        bottom_left: [Token; 2],
    },
    GeoPolygon {
        points: Vec<[Token; 2]>,
    },
}

impl Expression {
    /// `NOT e`, removing a double negation.
    pub(crate) fn negate(self) -> Self {
        match self {
            Expression::Not(inner) => *inner,
            other => Expression::Not(Box::new(other)),
        }
    }

    /// The first `CONTAINS` keyword, in reading order (gated by the `containsFilter` feature).
    pub fn contains_keyword(&self) -> Option<&Token> {
        match self {
            Expression::Condition {
                condition: Condition::Contains { keyword, .. },
                ..
            } => Some(keyword),
            Expression::Not(inner) => inner.contains_keyword(),
            Expression::Or(children) | Expression::And(children) => {
                children.iter().find_map(Expression::contains_keyword)
            }
            _ => None,
        }
    }

    /// The first `STARTS WITH` keyword, in reading order (not gated in Meilisearch 1.41).
    pub fn starts_with_keyword(&self) -> Option<&Token> {
        match self {
            Expression::Condition {
                condition: Condition::StartsWith { keyword, .. },
                ..
            } => Some(keyword),
            Expression::Not(inner) => inner.starts_with_keyword(),
            Expression::Or(children) | Expression::And(children) => {
                children.iter().find_map(Expression::starts_with_keyword)
            }
            _ => None,
        }
    }

    /// The `_vectors` token of the first vector filter (gated by the `multimodal` feature).
    pub fn vector_filter(&self) -> Option<&Token> {
        match self {
            Expression::VectorExists { attribute, .. } => Some(attribute),
            Expression::Not(inner) => inner.vector_filter(),
            Expression::Or(children) | Expression::And(children) => {
                children.iter().find_map(Expression::vector_filter)
            }
            _ => None,
        }
    }

    /// The first attribute token named `field` in a condition or `IN` (e.g. `_shard`).
    pub fn attribute_named(&self, field: &str) -> Option<&Token> {
        match self {
            Expression::Condition { attribute, .. } | Expression::In { attribute, .. } => {
                (attribute.value == field).then_some(attribute)
            }
            Expression::Not(inner) => inner.attribute_named(field),
            Expression::Or(children) | Expression::And(children) => children
                .iter()
                .find_map(|child| child.attribute_named(field)),
            _ => None,
        }
    }

    /// Attributes of conditions and `IN`s, in reading order, descending at most `depth` levels.
    pub fn attributes<'filter>(&'filter self, depth: usize, output: &mut Vec<&'filter Token>) {
        if depth == 0 {
            return;
        }
        match self {
            Expression::Condition { attribute, .. } | Expression::In { attribute, .. } => {
                output.push(attribute)
            }
            Expression::Not(inner) => inner.attributes(depth.saturating_sub(1), output),
            Expression::Or(children) | Expression::And(children) => {
                for child in children {
                    child.attributes(depth.saturating_sub(1), output);
                }
            }
            _ => {}
        }
    }

    /// The first condition attribute (or radius latitude) found `depth` `AND`/`OR` levels down
    /// or deeper: the witness that the tree is too deep to evaluate.
    pub fn token_at_depth(&self, depth: usize) -> Option<&Token> {
        match self {
            Expression::Condition { attribute, .. } if depth == 0 => Some(attribute),
            Expression::GeoRadius { latitude, .. } if depth == 0 => Some(latitude),
            Expression::Or(children) | Expression::And(children) => children
                .iter()
                .find_map(|child| child.token_at_depth(depth.saturating_sub(1))),
            _ => None,
        }
    }
}
