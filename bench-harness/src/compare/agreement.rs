//! Top-hits agreement between two servers: for each query of the mix, whether both answered
//! the same top hit ids in the same order, how much the two sets overlap, and whether both
//! answered the same hit count (`estimatedTotalHits`).
//!
//! Invariants: ids are compared by their JSON text (`828939` and `"828939"` differ, as they
//! would for a client); a query that failed on either side counts as a disagreement with
//! overlap 0 and unequal counts; two empty answers agree with overlap 1; overlap is
//! `|ours ∩ theirs| / max(|ours|, |theirs|)`, in `0..=1`. A query is an example of
//! disagreement when its ids or its counts differ.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use super::query_mix::{Query, QueryKind};

/// Disagreeing examples kept per query kind unless told otherwise.
pub const EXAMPLES_PER_KIND_DEFAULT: usize = 3;

/// What a server answered to one query: its top hit ids and its hit count estimate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopAnswer {
    /// The ids of the first hits, in order.
    pub ids: Vec<String>,
    /// `estimatedTotalHits` (or `totalHits`), when answered.
    pub total_hits: Option<u64>,
}

/// The top hits a server answered for one query, or why it did not.
pub type TopHits = Result<TopAnswer, String>;

/// The ids of the first `count` hits of a search response and its hit count; an error when
/// it has no `hits` array or a hit has no `id`.
pub fn top_ids(response: &Value, count: usize) -> Result<TopAnswer, String> {
    let hits = response["hits"]
        .as_array()
        .ok_or_else(|| "the response has no hits array".to_string())?;
    let ids = hits
        .iter()
        .take(count)
        .map(|hit| match hit.get("id") {
            Some(id) => Ok(id.to_string()),
            None => Err("a hit has no id".to_string()),
        })
        .collect::<Result<Vec<String>, String>>()?;
    let total_hits = response["estimatedTotalHits"]
        .as_u64()
        .or_else(|| response["totalHits"].as_u64());
    Ok(TopAnswer { ids, total_hits })
}

/// How two top-hit lists compare.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Same ids in the same order.
    pub equal: bool,
    /// Shared ids over the longer list's length.
    pub overlap: f64,
    /// Same hit count (set by [`agreement`]; [`compare`] sees ids only and leaves it true).
    pub total_hits_equal: bool,
}

/// Compares two top-hit lists.
pub fn compare(ours: &[String], theirs: &[String]) -> Comparison {
    let longest = ours.len().max(theirs.len());
    if longest == 0 {
        return Comparison {
            equal: true,
            overlap: 1.0,
            total_hits_equal: true,
        };
    }
    let their_ids: HashSet<&String> = theirs.iter().collect();
    let shared = ours
        .iter()
        .collect::<HashSet<&String>>()
        .intersection(&their_ids)
        .count();
    Comparison {
        equal: ours == theirs,
        overlap: shared as f64 / longest as f64,
        total_hits_equal: true,
    }
}

/// Agreement over the queries of one kind (or all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Queries compared.
    pub queries: u64,
    /// Queries whose top hits are equal, in order.
    pub equal: u64,
    /// Sum of the overlaps.
    pub overlap_sum: f64,
    /// Queries that failed on at least one side.
    pub failed: u64,
    /// Queries whose hit counts are equal.
    pub total_hits_equal: u64,
    /// Queries whose top hits and hit counts are both equal.
    pub both_equal: u64,
}

impl Tally {
    fn add(&mut self, comparison: Comparison, failed: bool) {
        self.queries += 1;
        self.equal += u64::from(comparison.equal);
        self.total_hits_equal += u64::from(comparison.total_hits_equal);
        self.both_equal += u64::from(comparison.equal && comparison.total_hits_equal);
        self.overlap_sum += comparison.overlap;
        self.failed += u64::from(failed);
    }

    /// The share of queries with equal top hits (0 when there are none).
    pub fn equal_share(&self) -> f64 {
        share(self.equal as f64, self.queries)
    }

    /// The share of queries with equal hit counts (0 when there are none).
    pub fn total_hits_share(&self) -> f64 {
        share(self.total_hits_equal as f64, self.queries)
    }

    /// The share of queries with equal top hits and hit counts (0 when there are none).
    pub fn both_share(&self) -> f64 {
        share(self.both_equal as f64, self.queries)
    }

    /// The mean overlap (0 when there are no queries).
    pub fn mean_overlap(&self) -> f64 {
        share(self.overlap_sum, self.queries)
    }
}

fn share(part: f64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part / whole as f64 }
}

/// One query whose top hits differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagreement {
    /// Its position in the mix.
    pub index: usize,
    /// Its kind's label.
    pub kind: &'static str,
    /// The request body.
    pub body: Value,
    /// Our answer (`{"ids", "total_hits"}`, or `{"error"}`).
    pub ours: Value,
    /// Theirs.
    pub theirs: Value,
    /// The set overlap.
    pub overlap: f64,
}

/// The agreement over a whole mix.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Agreement {
    /// Over every query.
    pub total: Tally,
    /// Per kind, by label.
    pub per_kind: BTreeMap<&'static str, Tally>,
    /// At most the asked number of disagreeing queries of each kind, in mix order.
    pub examples: Vec<Disagreement>,
}

/// An answer as written in the examples file.
fn answer_json(hits: &TopHits) -> Value {
    match hits {
        Ok(answer) => serde_json::json!({"ids": answer.ids, "total_hits": answer.total_hits}),
        Err(error) => serde_json::json!({ "error": error }),
    }
}

/// Compares the answers of both servers to every query (`ours[i]` and `theirs[i]` answer
/// `queries[i]`), keeping at most `examples_per_kind` disagreeing queries of each kind.
pub fn agreement(
    queries: &[Query],
    ours: &[TopHits],
    theirs: &[TopHits],
    examples_per_kind: usize,
) -> Agreement {
    let mut result = Agreement::default();
    let mut examples_kept: BTreeMap<QueryKind, usize> = BTreeMap::new();
    for (index, ((query, our_hits), their_hits)) in queries.iter().zip(ours).zip(theirs).enumerate()
    {
        let (comparison, failed) = match (our_hits, their_hits) {
            (Ok(our_answer), Ok(their_answer)) => (
                Comparison {
                    total_hits_equal: our_answer.total_hits == their_answer.total_hits,
                    ..compare(&our_answer.ids, &their_answer.ids)
                },
                false,
            ),
            _ => (
                Comparison {
                    equal: false,
                    overlap: 0.0,
                    total_hits_equal: false,
                },
                true,
            ),
        };
        result.total.add(comparison, failed);
        result
            .per_kind
            .entry(query.kind.label())
            .or_default()
            .add(comparison, failed);
        let examples = examples_kept.entry(query.kind).or_insert(0);
        let disagrees = !comparison.equal || !comparison.total_hits_equal;
        if disagrees && *examples < examples_per_kind {
            *examples += 1;
            result.examples.push(Disagreement {
                index,
                kind: query.kind.label(),
                body: query.body.clone(),
                ours: answer_json(our_hits),
                theirs: answer_json(their_hits),
                overlap: comparison.overlap,
            });
        }
    }
    result
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ids(values: &[u32]) -> Vec<String> {
        values.iter().map(u32::to_string).collect()
    }

    fn answer(values: &[u32]) -> TopHits {
        Ok(TopAnswer {
            ids: ids(values),
            total_hits: Some(values.len() as u64),
        })
    }

    #[test]
    fn equal_lists_agree_and_reordered_lists_only_overlap() {
        assert_eq!(
            compare(&ids(&[1, 2, 3]), &ids(&[1, 2, 3])),
            Comparison {
                equal: true,
                overlap: 1.0,
                total_hits_equal: true
            }
        );
        assert_eq!(
            compare(&ids(&[1, 2, 3]), &ids(&[3, 2, 1])),
            Comparison {
                equal: false,
                overlap: 1.0,
                total_hits_equal: true
            }
        );
        let partial = compare(&ids(&[1, 2, 3, 4]), &ids(&[1, 9]));
        assert!(!partial.equal);
        assert!((partial.overlap - 0.25).abs() < 1e-12);
        assert_eq!(compare(&[], &[]).overlap, 1.0);
        assert_eq!(compare(&ids(&[1]), &[]).overlap, 0.0);
    }

    #[test]
    fn top_ids_keep_order_and_json_text_and_reject_missing_ids() {
        let response = json!({"hits": [{"id": 7}, {"id": "7"}, {"id": 3}], "query": "x"});
        assert_eq!(
            top_ids(&response, 2).expect("top_ids succeeds"),
            TopAnswer {
                ids: vec!["7".to_string(), "\"7\"".to_string()],
                total_hits: None
            }
        );
        assert_eq!(
            top_ids(&response, 10).expect("top_ids succeeds").ids.len(),
            3
        );
        let counted = json!({"hits": [], "estimatedTotalHits": 12});
        assert_eq!(
            top_ids(&counted, 10).expect("top_ids succeeds").total_hits,
            Some(12)
        );
        let paged = json!({"hits": [], "totalHits": 3});
        assert_eq!(
            top_ids(&paged, 10).expect("top_ids succeeds").total_hits,
            Some(3)
        );
        assert!(top_ids(&json!({"hits": [{"name": 1}]}), 10).is_err());
        assert!(top_ids(&json!({"message": "x"}), 10).is_err());
    }

    #[test]
    fn agreement_counts_per_kind_failures_and_keeps_few_examples() {
        let query = |kind| Query {
            kind,
            body: json!({"q": "x"}),
        };
        let queries: Vec<Query> = (0..6)
            .map(|index| {
                query(if index < 5 {
                    QueryKind::OneWord
                } else {
                    QueryKind::Typo
                })
            })
            .collect();
        let ours: Vec<TopHits> = vec![
            answer(&[1, 2]),
            answer(&[2, 1]),
            answer(&[5]),
            answer(&[6]),
            answer(&[7]),
            Err("503".to_string()),
        ];
        let theirs: Vec<TopHits> = vec![
            answer(&[1, 2]),
            answer(&[1, 2]),
            answer(&[4]),
            answer(&[4]),
            answer(&[4]),
            answer(&[1]),
        ];
        let result = agreement(&queries, &ours, &theirs, EXAMPLES_PER_KIND_DEFAULT);
        assert_eq!(result.total.queries, 6);
        assert_eq!(result.total.total_hits_equal, 5);
        assert_eq!(result.total.both_equal, 1);
        assert_eq!(result.total.equal, 1);
        assert_eq!(result.total.failed, 1);
        assert!((result.total.mean_overlap() - 2.0 / 6.0).abs() < 1e-12);
        assert_eq!(result.per_kind["one_word"].queries, 5);
        assert_eq!(result.per_kind["one_word"].equal, 1);
        assert_eq!(result.per_kind["typo"].failed, 1);
        let one_word_examples = result
            .examples
            .iter()
            .filter(|example| example.kind == "one_word")
            .count();
        assert_eq!(one_word_examples, EXAMPLES_PER_KIND_DEFAULT);
        assert_eq!(result.examples.len(), EXAMPLES_PER_KIND_DEFAULT + 1);
        assert_eq!(result.examples[0].index, 1);
        assert_eq!(result.examples[0].ours["ids"], json!(["2", "1"]));
        assert_eq!(result.examples[3].ours["error"], "503");
        assert!((result.total.equal_share() - 1.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn equal_ids_with_another_hit_count_are_a_disagreement() {
        let queries = vec![Query {
            kind: QueryKind::TwoWords,
            body: json!({"q": "x y"}),
        }];
        let ours: Vec<TopHits> = vec![answer(&[1, 2])];
        let theirs: Vec<TopHits> = vec![Ok(TopAnswer {
            ids: ids(&[1, 2]),
            total_hits: Some(3),
        })];
        let result = agreement(&queries, &ours, &theirs, EXAMPLES_PER_KIND_DEFAULT);
        assert_eq!(result.total.equal, 1);
        assert_eq!(result.total.total_hits_equal, 0);
        assert_eq!(result.total.both_equal, 0);
        assert_eq!(result.examples.len(), 1);
        assert_eq!(result.examples[0].theirs["total_hits"], 3);
        let none_kept = agreement(&queries, &ours, &theirs, 0);
        assert!(none_kept.examples.is_empty());
    }
}
