//! Whether a network search ranks as well as one instance holding everything: for each query
//! the sequence of its top hits' ranking keys — `_rankingScore`, preceded by the sort
//! attribute's value when the query sorts — must equal the one-instance network's.
//!
//! Why keys and not ids: many documents of the dataset tie (every package named exactly
//! after a one-word query scores the same), and among tied hits a network search keeps its
//! shards' order (the earlier shard first, as Meilisearch's merge does), so the ids of
//! equally good hits differ while the ranking is right. Equal key sequences mean every
//! position holds a hit as good as the one instance's; a missing or worse hit changes them.
//!
//! Invariants: scores are compared at `SCORE_DECIMALS` decimals (the same computation on
//! each shard gives the same value); an answer without `_rankingScore` on a hit, or a
//! failed query, makes its query unequal; a sorted query's key starts with the sort
//! attribute's JSON value.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::compare::query_mix::Query;

/// Decimals of `_rankingScore` compared.
const SCORE_DECIMALS: usize = 6;

/// The ranking keys of one answer's hits, in order.
pub type RankingKeys = Result<Vec<String>, String>;

/// The ranking keys of `answer`'s hits for `query`.
pub fn ranking_keys(query: &Query, answer: &Value) -> RankingKeys {
    let sort_attribute = query.body["sort"][0]
        .as_str()
        .and_then(|sort| sort.split(':').next());
    let hits = answer["hits"]
        .as_array()
        .ok_or_else(|| "the response has no hits array".to_string())?;
    hits.iter()
        .map(|hit| {
            let score = hit["_rankingScore"]
                .as_f64()
                .ok_or_else(|| "a hit has no _rankingScore".to_string())?;
            let score = format!("{score:.SCORE_DECIMALS$}");
            Ok(match sort_attribute {
                Some(attribute) => format!("{} {score}", hit[attribute]),
                None => score,
            })
        })
        .collect()
}

/// Queries whose ranking keys equal the reference's, and queries compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RankingTally {
    /// Queries with equal keys.
    pub equal: u64,
    /// Queries compared.
    pub compared: u64,
}

impl RankingTally {
    /// The share of equal queries (0 without queries).
    pub fn equal_share(&self) -> f64 {
        if self.compared == 0 {
            0.0
        } else {
            self.equal as f64 / self.compared as f64
        }
    }

    fn add(&mut self, equal: bool) {
        self.compared += 1;
        self.equal += u64::from(equal);
    }
}

/// The ranking agreement over a mix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RankingAgreement {
    /// Over every query.
    pub total: RankingTally,
    /// Per query kind, by label.
    pub per_kind: BTreeMap<&'static str, RankingTally>,
}

/// Compares every query's keys with the reference's (`ours[i]` and `reference[i]` answer
/// `queries[i]`).
pub fn ranking_agreement(
    queries: &[Query],
    ours: &[RankingKeys],
    reference: &[RankingKeys],
) -> RankingAgreement {
    let mut agreement = RankingAgreement::default();
    for ((query, ours), reference) in queries.iter().zip(ours).zip(reference) {
        let equal = matches!((ours, reference), (Ok(ours), Ok(reference)) if ours == reference);
        agreement.total.add(equal);
        agreement
            .per_kind
            .entry(query.kind.label())
            .or_default()
            .add(equal);
    }
    agreement
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compare::query_mix::QueryKind;

    fn query(body: Value) -> Query {
        Query {
            kind: QueryKind::OneWord,
            body,
        }
    }

    #[test]
    fn tied_hits_in_another_order_agree_and_a_worse_hit_does_not() {
        let plain = query(json!({"q": "django"}));
        let single = json!({"hits": [{"id": 1, "_rankingScore": 0.99}, {"id": 2, "_rankingScore": 0.99}, {"id": 3, "_rankingScore": 0.5}]});
        let tied = json!({"hits": [{"id": 2, "_rankingScore": 0.99}, {"id": 7, "_rankingScore": 0.99}, {"id": 3, "_rankingScore": 0.5}]});
        let worse = json!({"hits": [{"id": 1, "_rankingScore": 0.99}, {"id": 3, "_rankingScore": 0.5}, {"id": 4, "_rankingScore": 0.4}]});
        let queries = vec![plain.clone()];
        let reference = vec![ranking_keys(&plain, &single)];
        let agreement = ranking_agreement(&queries, &[ranking_keys(&plain, &tied)], &reference);
        assert_eq!(
            agreement.total,
            RankingTally {
                equal: 1,
                compared: 1
            }
        );
        assert_eq!(agreement.per_kind["one_word"].equal, 1);
        let agreement = ranking_agreement(&queries, &[ranking_keys(&plain, &worse)], &reference);
        assert_eq!(agreement.total.equal, 0);
        let missing = json!({"hits": [{"id": 1}]});
        assert!(ranking_keys(&plain, &missing).is_err());
    }

    #[test]
    fn a_sorted_query_is_keyed_by_its_sort_value_first() {
        let sorted = query(json!({"q": "django", "sort": ["year:desc"]}));
        let answer = json!({"hits": [{"id": 1, "year": 2024, "_rankingScore": 0.5}]});
        assert_eq!(
            ranking_keys(&sorted, &answer),
            Ok(vec!["2024 0.500000".to_string()])
        );
    }
}
