//! Ranking scores: each ranking rule gives a document a rank out of a maximum rank, the global
//! `_rankingScore` folds the ranks of the rules in order (sort rules excluded), and the
//! details render as Meilisearch's `_rankingScoreDetails`.
//!
//! Invariants: ranks are `1..=max_rank` (higher is better); folding is Meilisearch's: each
//! next rule subdivides the previous rule's rank interval, so the global score orders
//! documents as the rules do (rule by rule). Details depend only on the document and the
//! query, so hits of different shards compare with [`compare_details`] exactly as within one.

use std::cmp::Ordering;

use serde_json::{Map, Value, json};

use super::geo_sort::{GeoSort, compare_points, distance};

/// A rank out of a maximum rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rank {
    pub rank: u32,
    pub max_rank: u32,
}

impl Rank {
    pub fn local_score(self) -> f64 {
        f64::from(self.rank) / f64::from(self.max_rank.max(1))
    }

    /// The rank of `inner` inside the interval of `outer`.
    pub fn merge(outer: Rank, inner: Rank) -> Rank {
        Rank {
            rank: outer.rank.saturating_sub(1) * inner.max_rank + inner.rank,
            max_rank: outer.max_rank * inner.max_rank,
        }
    }

    /// The score of ranks folded in order (1.0 without ranks).
    pub fn global_score(ranks: impl Iterator<Item = Rank>) -> f64 {
        ranks
            .fold(
                Rank {
                    rank: 1,
                    max_rank: 1,
                },
                Rank::merge,
            )
            .local_score()
    }
}

/// How the query matched a whole attribute (the first half of `exactness`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExactAttribute {
    ExactMatch,
    MatchesStart,
    NoExactMatch,
}

impl ExactAttribute {
    pub fn rank(self) -> Rank {
        let rank = match self {
            ExactAttribute::ExactMatch => 3,
            ExactAttribute::MatchesStart => 2,
            ExactAttribute::NoExactMatch => 1,
        };
        Rank { rank, max_rank: 3 }
    }

    fn name(self) -> &'static str {
        match self {
            ExactAttribute::ExactMatch => "exactMatch",
            ExactAttribute::MatchesStart => "matchesStart",
            ExactAttribute::NoExactMatch => "noExactMatch",
        }
    }
}

/// The value a sort rule saw for a document.
#[derive(Debug, Clone, PartialEq)]
pub enum SortValue {
    Number(f64),
    /// Compared by the normalized form (the facet order), shown as the original.
    String {
        normalized: String,
        original: String,
    },
    Missing,
}

/// What one ranking rule said about one document.
#[derive(Debug, Clone, PartialEq)]
pub enum ScoreDetail {
    Words {
        matching_words: u32,
        max_matching_words: u32,
    },
    Typo {
        typo_count: u32,
        max_typo_count: u32,
    },
    Proximity(Rank),
    AttributeRank(Rank),
    WordPosition(Rank),
    ExactAttribute(ExactAttribute),
    ExactWords {
        matching_words: u32,
        max_matching_words: u32,
    },
    /// A `sort` parameter rule or a custom `field:asc|desc` ranking rule.
    Sort {
        field: String,
        ascending: bool,
        value: SortValue,
    },
    /// A `_geoPoint(lat, lng):asc|desc` sort rule and the document's point, if any.
    GeoSort {
        rule: GeoSort,
        value: Option<[f64; 2]>,
    },
    /// The rules from here on did not rank the document: `searchCutoffMs` passed first.
    Skipped,
    /// `vectorSort`: the similarity (`1 - (1 - cosine) / 2`, shifted by the embedder's
    /// `distribution`) of the document's closest vector; `None` without a vector.
    Vector {
        similarity: Option<f32>,
    },
    /// A document a dynamic search rule pinned at `position` of the results: a placement,
    /// not a score (it has no rank, is never compared, and its details are this alone).
    Pin {
        position: u32,
    },
}

/// A similarity in ranks: `Rank`'s integer fractions hold it to this many steps.
const SIMILARITY_STEPS: u32 = 1 << 24;

impl ScoreDetail {
    /// The rank, `None` for sort rules (which do not score).
    pub fn rank(&self) -> Option<Rank> {
        match self {
            ScoreDetail::Words {
                matching_words,
                max_matching_words,
            } => Some(Rank {
                rank: *matching_words,
                max_rank: *max_matching_words,
            }),
            ScoreDetail::Typo {
                typo_count,
                max_typo_count,
            } => Some(Rank {
                rank: (max_typo_count + 1).saturating_sub(*typo_count),
                max_rank: max_typo_count + 1,
            }),
            ScoreDetail::Proximity(rank)
            | ScoreDetail::AttributeRank(rank)
            | ScoreDetail::WordPosition(rank) => Some(*rank),
            ScoreDetail::ExactAttribute(exact) => Some(exact.rank()),
            ScoreDetail::ExactWords {
                matching_words,
                max_matching_words,
            } => Some(Rank {
                rank: matching_words + 1,
                max_rank: max_matching_words + 1,
            }),
            ScoreDetail::Sort { .. } | ScoreDetail::GeoSort { .. } | ScoreDetail::Pin { .. } => {
                None
            }
            ScoreDetail::Vector { similarity } => Some(Rank {
                rank: (similarity.unwrap_or(0.0).clamp(0.0, 1.0) * SIMILARITY_STEPS as f32) as u32,
                max_rank: SIMILARITY_STEPS,
            }),
            // The lowest rank: below every document the rule did rank.
            ScoreDetail::Skipped => Some(Rank {
                rank: 0,
                max_rank: 1,
            }),
        }
    }
}

/// `_rankingScore` of a document's details.
pub fn global_score(details: &[ScoreDetail]) -> f64 {
    Rank::global_score(details.iter().filter_map(ScoreDetail::rank))
}

/// Meilisearch's order of sort values: numbers before strings, missing values last.
pub(super) fn compare_sort_values(
    ascending: bool,
    left: &SortValue,
    right: &SortValue,
) -> Ordering {
    let directed = |order: Ordering| if ascending { order } else { order.reverse() };
    match (left, right) {
        (SortValue::Missing, SortValue::Missing) => Ordering::Equal,
        (SortValue::Missing, _) => Ordering::Greater,
        (_, SortValue::Missing) => Ordering::Less,
        (SortValue::Number(_), SortValue::String { .. }) => Ordering::Less,
        (SortValue::String { .. }, SortValue::Number(_)) => Ordering::Greater,
        (SortValue::Number(left), SortValue::Number(right)) => {
            directed(left.partial_cmp(right).unwrap_or(Ordering::Equal))
        }
        (
            SortValue::String {
                normalized: left, ..
            },
            SortValue::String {
                normalized: right, ..
            },
        ) => directed(left.cmp(right)),
    }
}

/// Orders two documents' details (of the same query): `Less` means `left` ranks first.
pub fn compare_details(left: &[ScoreDetail], right: &[ScoreDetail]) -> Ordering {
    for (left, right) in left.iter().zip(right) {
        let order = match (left, right) {
            (
                ScoreDetail::Sort {
                    ascending, value, ..
                },
                ScoreDetail::Sort {
                    value: other_value, ..
                },
            ) => compare_sort_values(*ascending, value, other_value),
            (
                ScoreDetail::GeoSort { rule, value },
                ScoreDetail::GeoSort {
                    value: other_value, ..
                },
            ) => compare_points(*rule, *value, *other_value),
            (
                ScoreDetail::Vector { similarity },
                ScoreDetail::Vector {
                    similarity: other_similarity,
                },
            ) => other_similarity
                .unwrap_or(-1.0)
                .total_cmp(&similarity.unwrap_or(-1.0)),
            _ => match (left.rank(), right.rank()) {
                (Some(left), Some(right)) => {
                    // Higher local score first; equal fractions are equal ranks.
                    (u64::from(right.rank) * u64::from(left.max_rank))
                        .cmp(&(u64::from(left.rank) * u64::from(right.max_rank)))
                }
                _ => Ordering::Equal,
            },
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

fn sort_value_json(value: &SortValue) -> Value {
    match value {
        SortValue::Number(number) => json!(number),
        SortValue::String { original, .. } => json!(original),
        SortValue::Missing => Value::Null,
    }
}

/// `_rankingScoreDetails`. `attribute_unified` is true when the `attribute` rule (rather than
/// `attributeRank` and `wordPosition`) is used: the two ranks then render as one `attribute`.
pub fn details_json(details: &[ScoreDetail], attribute_unified: bool) -> Map<String, Value> {
    let mut map = Map::new();
    let mut order = 0u32;
    let mut attribute_rank = None;
    for detail in details {
        let score = detail.rank().map(Rank::local_score);
        let (name, entry) = match detail {
            ScoreDetail::Words {
                matching_words,
                max_matching_words,
            } => (
                "words".to_owned(),
                json!({"order": order, "matchingWords": matching_words,
                       "maxMatchingWords": max_matching_words, "score": score}),
            ),
            ScoreDetail::Typo {
                typo_count,
                max_typo_count,
            } => (
                "typo".to_owned(),
                json!({"order": order, "typoCount": typo_count,
                       "maxTypoCount": max_typo_count, "score": score}),
            ),
            ScoreDetail::Proximity(_) => (
                "proximity".to_owned(),
                json!({"order": order, "score": score}),
            ),
            ScoreDetail::AttributeRank(rank) if attribute_unified => {
                attribute_rank = Some(*rank);
                (
                    "attribute".to_owned(),
                    json!({"order": order, "attributeRankingOrderScore": score}),
                )
            }
            ScoreDetail::AttributeRank(_) => (
                "attributeRank".to_owned(),
                json!({"order": order, "score": score}),
            ),
            ScoreDetail::WordPosition(rank) if attribute_unified => {
                complete_attribute(&mut map, attribute_rank, *rank, score);
                continue;
            }
            ScoreDetail::WordPosition(_) => (
                "wordPosition".to_owned(),
                json!({"order": order, "score": score}),
            ),
            ScoreDetail::ExactAttribute(exact) => (
                "exactness".to_owned(),
                json!({"order": order, "matchType": exact.name(), "score": score}),
            ),
            ScoreDetail::ExactWords {
                matching_words,
                max_matching_words,
            } => {
                complete_exactness(&mut map, detail, *matching_words, *max_matching_words);
                continue;
            }
            ScoreDetail::Sort { .. }
            | ScoreDetail::GeoSort { .. }
            | ScoreDetail::Skipped
            | ScoreDetail::Vector { .. }
            | ScoreDetail::Pin { .. } => unranked_entry(detail, order),
        };
        map.insert(name, entry);
        order += 1;
    }
    map
}

/// Adds the word position half of a unified `attribute` rule to its entry: its score, and
/// the rule's score from both ranks.
fn complete_attribute(
    map: &mut Map<String, Value>,
    attribute_rank: Option<Rank>,
    word_position: Rank,
    score: Option<f64>,
) {
    if let (Some(Value::Object(attribute)), Some(first)) =
        (map.get_mut("attribute"), attribute_rank)
    {
        attribute.insert("queryWordDistanceScore".into(), json!(score));
        let combined = Rank::global_score([first, word_position].into_iter());
        attribute.insert("score".into(), json!(combined));
    }
}

/// Adds the exact words half of `exactness` (`detail`) to its entry, when the attribute half
/// found no exact match: the counts, and the rule's score from both halves.
fn complete_exactness(
    map: &mut Map<String, Value>,
    detail: &ScoreDetail,
    matching_words: u32,
    max_matching_words: u32,
) {
    let Some(Value::Object(exactness)) = map.get_mut("exactness") else {
        return;
    };
    if exactness.get("matchType") != Some(&json!("noExactMatch")) {
        return;
    }
    let combined = Rank::global_score(
        [
            ExactAttribute::NoExactMatch.rank(),
            detail.rank().unwrap_or(Rank {
                rank: 1,
                max_rank: 1,
            }),
        ]
        .into_iter(),
    );
    exactness.remove("score");
    exactness.insert("matchingWords".into(), json!(matching_words));
    exactness.insert("maxMatchingWords".into(), json!(max_matching_words));
    exactness.insert("score".into(), json!(combined));
}

/// The name (`field:asc` or `field:desc`) and entry of a sort rule's detail.
/// The entry of a rule that sorts rather than ranks (`sort`, geo sort, `vectorSort`), or
/// the `skipped` mark.
fn unranked_entry(detail: &ScoreDetail, order: u32) -> (String, Value) {
    match detail {
        ScoreDetail::Sort {
            field,
            ascending,
            value,
        } => sort_entry(field, *ascending, value, order),
        ScoreDetail::GeoSort { rule, value } => geo_sort_entry(rule, *value, order),
        ScoreDetail::Vector { similarity } => (
            "vectorSort".to_owned(),
            json!({"order": order, "similarity": similarity}),
        ),
        ScoreDetail::Pin { position } => (
            "pin".to_owned(),
            json!({"order": order, "position": position}),
        ),
        _ => ("skipped".to_owned(), json!({"order": order})),
    }
}

fn sort_entry(field: &str, ascending: bool, value: &SortValue, order: u32) -> (String, Value) {
    let name = format!("{field}:{}", if ascending { "asc" } else { "desc" });
    (
        name,
        json!({"order": order, "value": sort_value_json(value)}),
    )
}

/// The name (`_geoPoint(latitude, longitude):direction`) and entry of a geo sort's detail.
fn geo_sort_entry(rule: &GeoSort, value: Option<[f64; 2]>, order: u32) -> (String, Value) {
    let [latitude, longitude] = rule.point;
    let direction = if rule.ascending { "asc" } else { "desc" };
    let name = format!("_geoPoint({latitude}, {longitude}):{direction}");
    let point = value.map(|[lat, lng]| json!({"lat": lat, "lng": lng}));
    (
        name,
        json!({
            "order": order,
            "value": point,
            "distance": distance(rule.point, value),
        }),
    )
}
