//! Ranking rules on hand-checked corpora, one rule at a time (order and `_rankingScore`), the
//! sort and custom rules, and the rendering of `_rankingScoreDetails`.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use common::query;

use serde_json::{Value, json};
use shards::analysis::{RankingRule, TextSettings};
use shards::search::geo_sort::GeoSort;
use shards::search::{MatchingStrategy, SearchQuery, SearchSort, details_json};
use shards::shard::{Shard, SortRule};

fn open(directory: &tempfile::TempDir) -> Shard {
    common::open_shard(directory, "shard.pages")
}

fn shard_with(
    directory: &tempfile::TempDir,
    rules: Vec<RankingRule>,
    searchable: Option<Vec<&str>>,
    documents: &[Value],
) -> Shard {
    let shard = open(directory);
    let settings = TextSettings {
        ranking_rules: rules,
        searchable_attributes: searchable.map(|list| list.into_iter().map(str::to_owned).collect()),
        ..TextSettings::default()
    };
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    common::load(&shard, documents);
    shard
}

/// `(external id, score)` of the hits, best first.
fn ranked(shard: &Shard, query: &SearchQuery) -> Vec<(i64, f64)> {
    let snapshot = shard.read().expect("read succeeds");
    snapshot
        .search(query)
        .expect("search succeeds")
        .hits
        .iter()
        .map(|hit| {
            let document = snapshot
                .document_by_id(hit.id, None)
                .expect("document_by_id succeeds")
                .expect("the value exists");
            (
                document["id"].as_i64().expect("as_i64 finds a value"),
                hit.score,
            )
        })
        .collect()
}

/// The external ids of the hits, best first.
fn ranked_ids(shard: &Shard, query: &SearchQuery) -> Vec<i64> {
    ranked(shard, query).iter().map(|(id, _)| *id).collect()
}

fn assert_ranked(actual: &[(i64, f64)], expected: &[(i64, f64)]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for ((id, score), (expected_id, expected_score)) in actual.iter().zip(expected) {
        assert_eq!(id, expected_id, "{actual:?} vs {expected:?}");
        assert!(
            (score - expected_score).abs() < 1e-9,
            "{actual:?} vs {expected:?}"
        );
    }
}

/// `page` ranks the documents in `expected` order (external ids), and every smaller page gives
/// the first hits of that ranking with the same scores.
fn assert_order_at_every_page_size(shard: &Shard, mut page: SearchQuery, expected: &[i64]) {
    let full = ranked(shard, &page);
    let order: Vec<i64> = full.iter().map(|(id, _)| *id).collect();
    assert_eq!(order, expected);
    for limit in 1..=expected.len() {
        page.limit = limit;
        assert_ranked(&ranked(shard, &page), &full[..limit]);
    }
}

#[test]
fn words_rule_ranks_by_matched_terms_from_the_end() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::Words],
        None,
        &[
            json!({"id": 1, "text": "quick"}),
            json!({"id": 2, "text": "quick brown fox"}),
            json!({"id": 3, "text": "quick brown"}),
            json!({"id": 4, "text": "brown fox"}),
        ],
    );
    assert_ranked(
        &ranked(&shard, &query("quick brown fox ")),
        &[(2, 1.0), (3, 2.0 / 3.0), (1, 1.0 / 3.0)],
    );
    let mut all = query("quick brown fox ");
    all.matching_strategy = MatchingStrategy::All;
    assert_ranked(&ranked(&shard, &all), &[(2, 1.0)]);
}

#[test]
fn typo_rule_ranks_by_typo_count() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::Typo],
        None,
        &[
            json!({"id": 1, "text": "wodrerful"}),
            json!({"id": 2, "text": "wondrful"}),
            json!({"id": 3, "text": "wonderful"}),
        ],
    );
    assert_ranked(
        &ranked(&shard, &query("wonderful ")),
        &[(3, 1.0), (2, 2.0 / 3.0), (1, 1.0 / 3.0)],
    );
}

#[test]
fn proximity_rule_ranks_by_word_distance() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::Proximity],
        None,
        &[
            json!({"id": 1, "title": "quick", "body": "fox"}),
            json!({"id": 2, "text": "quick one two three fox"}),
            json!({"id": 3, "text": "fox quick"}),
            json!({"id": 4, "text": "quick brown fox"}),
            json!({"id": 5, "text": "quick fox"}),
        ],
    );
    let mut all = query("quick fox ");
    all.matching_strategy = MatchingStrategy::All;
    assert_ranked(
        &ranked(&shard, &all),
        &[(5, 1.0), (3, 0.75), (4, 0.75), (1, 0.25), (2, 0.25)],
    );
}

#[test]
fn attribute_rank_rule_ranks_by_field_order() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::AttributeRank],
        Some(vec!["title", "body"]),
        &[
            json!({"id": 1, "title": "dog", "body": "fox"}),
            json!({"id": 2, "title": "fox", "body": "dog"}),
        ],
    );
    assert_ranked(&ranked(&shard, &query("fox ")), &[(2, 1.0), (1, 0.5)]);
}

#[test]
fn word_position_rule_ranks_by_position_in_the_field() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::WordPosition],
        None,
        &[
            json!({"id": 1, "text": "one two three fox"}),
            json!({"id": 2, "text": "one fox"}),
            json!({"id": 3, "text": "fox"}),
        ],
    );
    assert_ranked(
        &ranked(&shard, &query("fox ")),
        &[(3, 1.0), (2, 10.0 / 11.0), (1, 9.0 / 11.0)],
    );
}

#[test]
fn exactness_rule_prefers_whole_then_starting_then_exact_words() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::Exactness],
        None,
        &[
            json!({"id": 1, "text": "quikc fox"}),
            json!({"id": 2, "text": "the quick fox"}),
            json!({"id": 3, "text": "quick fox jumps"}),
            json!({"id": 4, "text": "quick fox"}),
        ],
    );
    let mut all = query("quick fox ");
    all.matching_strategy = MatchingStrategy::All;
    assert_ranked(
        &ranked(&shard, &all),
        &[(4, 1.0), (3, 6.0 / 9.0), (2, 3.0 / 9.0), (1, 2.0 / 9.0)],
    );
}

/// A page smaller than the bucket: exactness as the last rule ranks only the documents the
/// page can hold, and must still find the exact match with the highest id and the lowest ids
/// among the documents matching the start of the field.
#[test]
fn exactness_as_the_last_rule_fills_a_small_page_in_rank_then_id_order() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents = [
        json!({"id": 1, "text": "fox quick"}),
        json!({"id": 2, "text": "the quick fox"}),
        json!({"id": 3, "text": "quick fox jumps"}),
        json!({"id": 4, "text": "quick fox jumps high"}),
        json!({"id": 5, "text": "quick brown fox"}),
        json!({"id": 6, "text": "quick fox again"}),
        json!({"id": 7, "text": "quick fox"}),
        json!({"id": 8, "text": "quikc fox"}),
    ];
    let shard = shard_with(&directory, vec![RankingRule::Exactness], None, &documents);
    let mut page = query("quick fox ");
    page.matching_strategy = MatchingStrategy::All;
    // Exact match 1.0; start of the field 6/9; neither, both words exact 3/9.
    let expected = [
        (7, 1.0),
        (3, 6.0 / 9.0),
        (4, 6.0 / 9.0),
        (6, 6.0 / 9.0),
        (1, 3.0 / 9.0),
        (2, 3.0 / 9.0),
        (5, 3.0 / 9.0),
        // A typo on one word: one exact word, 2/9.
        (8, 2.0 / 9.0),
    ];
    for limit in 1..=expected.len() {
        page.limit = limit;
        assert_ranked(&ranked(&shard, &page), &expected[..limit]);
    }
    page.offset = 2;
    page.limit = 2;
    let hits = ranked(&shard, &page);
    assert_eq!(
        hits.len(),
        4,
        "the shard returns offset + limit hits: {hits:?}"
    );
    assert_ranked(&hits, &expected[..4]);

    // Without a document holding exactly the query, the ceiling is the start of a field.
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::Exactness],
        None,
        &documents[..6],
    );
    page.offset = 0;
    page.limit = 2;
    assert_ranked(&ranked(&shard, &page), &[(3, 6.0 / 9.0), (4, 6.0 / 9.0)]);

    // A prefix matches no word exactly: every document is at the ceiling, lowest ids first.
    let mut prefix = query("qui");
    prefix.limit = 2;
    let hits = ranked(&shard, &prefix);
    let ids: Vec<i64> = hits.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, vec![1, 2], "{hits:?}");

    // More documents than one ranked chunk: the ones matching the start of the field come
    // after many that do not, and must not be left out.
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut many: Vec<Value> = (1..=150)
        .map(|id| json!({"id": id, "text": format!("the quick fox number{id}")}))
        .collect();
    many.extend((151..=160).map(|id| json!({"id": id, "text": format!("quick fox number{id}")})));
    let shard = shard_with(&directory, vec![RankingRule::Exactness], None, &many);
    page.limit = 3;
    assert_ranked(
        &ranked(&shard, &page),
        &[(151, 6.0 / 9.0), (152, 6.0 / 9.0), (153, 6.0 / 9.0)],
    );
    // More documents that may match a field exactly than one ranked chunk, only the last of
    // which does: the others (both words in a two-word field, but starting another field)
    // rank at the ceiling after it.
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut many: Vec<Value> = (1..=100)
        .map(|id| json!({"id": id, "text": "fox quick", "title": format!("quick fox number{id}")}))
        .collect();
    many.push(json!({"id": 101, "text": "quick fox"}));
    let shard = shard_with(&directory, vec![RankingRule::Exactness], None, &many);
    page.limit = 2;
    assert_ranked(&ranked(&shard, &page), &[(101, 1.0), (1, 6.0 / 9.0)]);

    // A page wanting more than the documents at the start of a field: the ones holding both
    // words elsewhere follow in id order, ranked without being read, before those with a
    // typo on one word (lower ids).
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut many: Vec<Value> = (1..=5)
        .map(|id| json!({"id": id, "text": format!("quikc fox number{id}")}))
        .collect();
    many.extend((6..=155).map(|id| json!({"id": id, "text": format!("the quick fox number{id}")})));
    many.extend((156..=160).map(|id| json!({"id": id, "text": format!("quick fox number{id}")})));
    let shard = shard_with(&directory, vec![RankingRule::Exactness], None, &many);
    page.limit = 12;
    let mut expected: Vec<(i64, f64)> = (156..=160).map(|id| (id, 6.0 / 9.0)).collect();
    expected.extend((6..=12).map(|id| (id, 3.0 / 9.0)));
    assert_ranked(&ranked(&shard, &page), &expected);

    // An exact match with the highest id, after more documents at the start-of-field ceiling
    // than one ranked chunk holds: it must be found without ranking them all.
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut many: Vec<Value> = (1..=200)
        .map(|id| json!({"id": id, "text": format!("quick fox jumps high number{id}")}))
        .collect();
    many.push(json!({"id": 201, "text": "quick fox"}));
    let shard = shard_with(&directory, vec![RankingRule::Exactness], None, &many);
    page.limit = 2;
    assert_ranked(&ranked(&shard, &page), &[(201, 1.0), (1, 6.0 / 9.0)]);
}

#[test]
fn sort_and_custom_rules_order_by_field_values() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents = [
        json!({"id": 1, "text": "fox", "price": 3}),
        json!({"id": 2, "text": "fox", "price": 1}),
        json!({"id": 3, "text": "fox"}),
        json!({"id": 4, "text": "fox", "price": "cheap"}),
        json!({"id": 5, "text": "fox", "price": 2}),
    ];
    let shard = shard_with(
        &directory,
        vec![RankingRule::Words, RankingRule::Sort],
        None,
        &documents,
    );
    shard
        .set_sortable_fields(&["price".to_owned()])
        .expect("set_sortable_fields succeeds");
    let mut sorted = query("fox ");
    sorted.sort = vec![SearchSort::Field(SortRule {
        field: "price".to_owned(),
        ascending: true,
    })];
    let order = ranked_ids(&shard, &sorted);
    assert_eq!(order, [2, 5, 1, 4, 3]);
    // Placeholder search follows the sort too.
    sorted.q = None;
    let order = ranked_ids(&shard, &sorted);
    assert_eq!(order, [2, 5, 1, 4, 3]);

    let settings = TextSettings {
        ranking_rules: vec![
            RankingRule::Words,
            RankingRule::Custom {
                field: "price".to_owned(),
                ascending: false,
            },
        ],
        ..TextSettings::default()
    };
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    let order = ranked_ids(&shard, &query("fox "));
    assert_eq!(order, [1, 5, 2, 4, 3]);
}

/// Pages smaller than the bucket: the sort step groups documents by facet value only as far
/// as the page needs, then the next rule (exactness) orders each value's documents.
#[test]
fn sort_fills_small_pages_value_by_value_then_by_the_next_rule() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents = [
        json!({"id": 1, "text": "the fox", "year": 2020}),
        json!({"id": 2, "text": "fox", "year": 2024}),
        json!({"id": 3, "text": "the fox", "year": 2024}),
        json!({"id": 4, "text": "fox"}),
        json!({"id": 5, "text": "the fox", "year": [2019, 2025]}),
        json!({"id": 6, "text": "fox", "year": "recent"}),
        json!({"id": 7, "text": "the fox", "year": 2020}),
        json!({"id": 8, "text": "fox", "year": 2020}),
    ];
    let shard = shard_with(
        &directory,
        vec![
            RankingRule::Words,
            RankingRule::Sort,
            RankingRule::Exactness,
        ],
        None,
        &documents,
    );
    shard
        .set_sortable_fields(&["year".to_owned()])
        .expect("set_sortable_fields succeeds");
    let mut page = query("fox ");
    page.sort = vec![SearchSort::Field(SortRule {
        field: "year".to_owned(),
        ascending: false,
    })];
    // Descending: 2025 (5's largest value), 2024 (2 exact before 3), 2020 (8 exact, then 1
    // and 7), then the string, then no value.
    let expected = [5, 2, 3, 8, 1, 7, 6, 4];
    for limit in 1..=expected.len() {
        page.limit = limit;
        let order = ranked_ids(&shard, &page);
        assert_eq!(order, expected[..limit], "limit {limit}");
    }
    // Ascending: 2019 (5's smallest), 2020, 2024, the string, no value.
    page.sort = vec![SearchSort::Field(SortRule {
        field: "year".to_owned(),
        ascending: true,
    })];
    let expected = [5, 8, 1, 7, 2, 3, 6, 4];
    for limit in 1..=expected.len() {
        page.limit = limit;
        let order = ranked_ids(&shard, &page);
        assert_eq!(order, expected[..limit], "limit {limit}");
    }
}

#[test]
fn default_rules_render_meilisearch_details() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        RankingRule::defaults(),
        None,
        &[json!({"id": 1, "text": "quick brown fox"})],
    );
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot
        .search(&query("quick fox "))
        .expect("search succeeds");
    assert_eq!(hits.total, 1);
    let hit = &hits.hits[0];
    let details = Value::Object(details_json(&hit.details, hits.attribute_unified));
    assert_eq!(
        details,
        json!({
            "words": {"order": 0, "matchingWords": 2, "maxMatchingWords": 2, "score": 1.0},
            // "quick" may carry one typo and "fox" may match through its split (one typo):
            // the maximum counts both (Meilisearch counts the typos of the paths its index
            // can match; see the search module's documentation).
            "typo": {"order": 1, "typoCount": 0, "maxTypoCount": 2, "score": 1.0},
            "proximity": {"order": 2, "score": 0.75},
            "attributeRank": {"order": 3, "score": 1.0},
            "wordPosition": {"order": 4, "score": 20.0 / 21.0},
            // "fox" is not at the query's position 1: no exact attribute match.
            "exactness": {"order": 5, "matchType": "noExactMatch", "matchingWords": 2,
                          "maxMatchingWords": 2, "score": 1.0 / 3.0},
        })
    );
    assert_eq!(hit.matched_words, ["fox", "quick"]);

    let settings = TextSettings {
        ranking_rules: vec![RankingRule::Attribute, RankingRule::Exactness],
        ..TextSettings::default()
    };
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(&query("brown ")).expect("search succeeds");
    let details = Value::Object(details_json(&hits.hits[0].details, hits.attribute_unified));
    assert_eq!(
        details,
        // `words` comes first even though the settings leave it out (strategy `last`).
        json!({
            "words": {"order": 0, "matchingWords": 1, "maxMatchingWords": 1, "score": 1.0},
            "attribute": {"order": 1, "attributeRankingOrderScore": 1.0,
                          "queryWordDistanceScore": 10.0 / 11.0, "score": 10.0 / 11.0},
            "exactness": {"order": 2, "matchType": "noExactMatch", "matchingWords": 1,
                          "maxMatchingWords": 1, "score": 2.0 / 6.0},
        })
    );
}

#[test]
fn distinct_attribute_keeps_the_best_document_per_value() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::WordPosition],
        None,
        &[
            json!({"id": 1, "text": "a b fox", "color": "Red"}),
            json!({"id": 2, "text": "fox", "color": "red"}),
            json!({"id": 3, "text": "a fox", "color": "blue"}),
            json!({"id": 4, "text": "a b c d fox"}),
            json!({"id": 5, "text": "a b c d e f g h fox"}),
        ],
    );
    shard
        .set_filterable_fields(&json!(["color"]))
        .expect("set_filterable_fields succeeds");
    let mut distinct = query("fox ");
    distinct.distinct = Some("color".to_owned());
    let order = ranked_ids(&shard, &distinct);
    assert_eq!(order, [2, 3, 4, 5]);
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(&distinct).expect("search succeeds");
    // The total counts every match: the server counts what distinct leaves.
    assert_eq!(hits.total, 5);
    assert!(hits.complete);
    assert_eq!(hits.hits[0].distinct_values, ["s:red"]);
    // Placeholder search too.
    distinct.q = None;
    let order = ranked_ids(&shard, &distinct);
    assert_eq!(order, [1, 3, 4, 5]);
}

#[test]
fn phrases_are_never_dropped_and_equal_frequencies_drop_together() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::Words],
        None,
        &[
            json!({"id": 1, "text": "quick brown fox"}),
            json!({"id": 2, "text": "quick brown"}),
            json!({"id": 3, "text": "fox"}),
            json!({"id": 4, "text": "alpha"}),
            json!({"id": 5, "text": "beta"}),
            json!({"id": 6, "text": "alpha beta"}),
            json!({"id": 7, "text": "alpha gamma"}),
        ],
    );
    // Words maximum: 1 + (2 phrase words - 1) + 1 removable term.
    assert_ranked(
        &ranked(&shard, &query("\"quick brown\" fox ")),
        &[(1, 1.0), (2, 2.0 / 3.0)],
    );
    let mut frequency = query("alpha beta ");
    frequency.matching_strategy = MatchingStrategy::Frequency;
    // "alpha" (3 documents) goes first, then "beta" stays.
    assert_ranked(&ranked(&shard, &frequency), &[(6, 1.0), (5, 0.5)]);
    let mut tied = query("quick fox ");
    tied.matching_strategy = MatchingStrategy::Frequency;
    // Equal counts (2 and 2) form one group, the last one, which is never dropped.
    assert_ranked(&ranked(&shard, &tied), &[(1, 1.0)]);
}

#[test]
fn rules_are_arranged_as_meilisearch_arranges_them() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![
            RankingRule::AttributeRank,
            RankingRule::Words,
            RankingRule::AttributeRank,
        ],
        None,
        &[json!({"id": 1, "text": "quick fox"})],
    );
    let snapshot = shard.read().expect("read succeeds");
    let keys = |query: &SearchQuery| {
        let hits = snapshot.search(query).expect("search succeeds");
        let details = details_json(&hits.hits[0].details, hits.attribute_unified);
        details
            .iter()
            .map(|(name, value)| format!("{name}:{}", value["order"]))
            .collect::<Vec<_>>()
    };
    // `words` moves before the first rule looking at words; duplicates are dropped.
    assert_eq!(keys(&query("quick fox ")), ["words:0", "attributeRank:1"]);
    // No `words` rule with matchingStrategy all.
    let mut all = query("quick fox ");
    all.matching_strategy = MatchingStrategy::All;
    assert_eq!(keys(&all), ["attributeRank:0"]);
}

/// A small deterministic generator (seeded LCG), so the test prints and replays its seed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

/// The value a sort sees, written out by hand: numbers before strings before nothing; an
/// ascending rule sees a document's smallest value, a descending one its largest.
fn sort_key(value: &serde_json::Value, ascending: bool) -> (u8, f64, String) {
    let mut numbers: Vec<f64> = Vec::new();
    let mut strings: Vec<String> = Vec::new();
    let items = match value {
        serde_json::Value::Array(items) => items.clone(),
        serde_json::Value::Null => Vec::new(),
        other => vec![other.clone()],
    };
    for item in items {
        match item {
            serde_json::Value::Number(number) => numbers.push(number.as_f64().expect("finite")),
            serde_json::Value::String(text) => strings.push(text.to_lowercase()),
            _ => {}
        }
    }
    numbers.sort_by(f64::total_cmp);
    strings.sort();
    let pick = |count: usize| if ascending { 0 } else { count - 1 };
    if !numbers.is_empty() {
        (0, numbers[pick(numbers.len())], String::new())
    } else if !strings.is_empty() {
        (1, 0.0, strings[pick(strings.len())].clone())
    } else {
        (2, 0.0, String::new())
    }
}

#[test]
fn a_sorted_placeholder_search_equals_sorting_every_document_by_hand() {
    let seed: u64 = std::env::var("SORT_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(7);
    println!("SORT_SEED={seed}");
    let mut random = Lcg(seed);
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut documents = Vec::new();
    for id in 0..300u64 {
        let a = match random.below(5) {
            0 => json!(null),
            1 => json!(format!("w{}", random.below(7))),
            2 => json!([random.below(20), random.below(20)]),
            _ => json!(random.below(20)),
        };
        let mut document = json!({"id": id, "text": "fox", "b": random.below(4)});
        if !a.is_null() {
            document["a"] = a;
        }
        documents.push(document);
    }
    let shard = shard_with(&directory, vec![RankingRule::Sort], None, &documents);
    shard
        .set_sortable_fields(&["a".to_owned(), "b".to_owned()])
        .expect("set_sortable_fields succeeds");
    for (a_ascending, b_ascending) in [(true, false), (false, true)] {
        let mut search = query("");
        search.q = None;
        search.limit = 40;
        search.sort = vec![
            SearchSort::Field(SortRule {
                field: "a".to_owned(),
                ascending: a_ascending,
            }),
            SearchSort::Field(SortRule {
                field: "b".to_owned(),
                ascending: b_ascending,
            }),
        ];
        let order = ranked_ids(&shard, &search);
        let mut expected: Vec<&serde_json::Value> = documents.iter().collect();
        expected.sort_by(|left, right| {
            let compare = |document: &serde_json::Value, field: &str, ascending: bool| {
                sort_key(&document[field], ascending)
            };
            let (left_a, right_a) = (
                compare(left, "a", a_ascending),
                compare(right, "a", a_ascending),
            );
            let rank_a = left_a.0.cmp(&right_a.0).then_with(|| {
                let order = left_a
                    .1
                    .total_cmp(&right_a.1)
                    .then_with(|| left_a.2.cmp(&right_a.2));
                if a_ascending { order } else { order.reverse() }
            });
            let (left_b, right_b) = (
                compare(left, "b", b_ascending),
                compare(right, "b", b_ascending),
            );
            let rank_b = left_b.0.cmp(&right_b.0).then_with(|| {
                let order = left_b.1.total_cmp(&right_b.1);
                if b_ascending { order } else { order.reverse() }
            });
            rank_a.then(rank_b)
        });
        // Ties keep insertion order, which is internal-id order in one batch.
        let expected: Vec<i64> = expected
            .iter()
            .take(40)
            .map(|document| document["id"].as_i64().expect("an integer id"))
            .collect();
        assert_eq!(order, expected, "a ascending: {a_ascending}, seed {seed}");
    }
}

#[test]
fn a_phrase_ranks_by_the_field_of_its_first_word() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    // Both hold the phrase in `summary`; only document 2 has its first word in `name`, the
    // better field. Meilisearch's attribute rule looks at the phrase's first word, so 2 wins
    // although 1 was stored first.
    let documents = [
        json!({"id": 1, "name": "pysdrweb", "summary": "server to host radio"}),
        json!({"id": 2, "name": "ytclip server", "summary": "server to run ytclip"}),
    ];
    let shard = shard_with(
        &directory,
        vec![RankingRule::Words, RankingRule::AttributeRank],
        Some(vec!["name", "summary"]),
        &documents,
    );
    let order = ranked_ids(&shard, &query("\"server to\""));
    assert_eq!(order, [2, 1]);
}

/// A page smaller than the phrase's bucket: the attribute and word-position rules rank a
/// phrase by its first word wherever it occurs in a document holding the phrase (document 4
/// holds the phrase in `summary` but its first word in `name`), at every page size.
#[test]
fn a_phrase_ranks_by_its_first_word_at_every_page_size() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents = [
        json!({"id": 1, "name": "radio", "summary": "server to host radio"}),
        json!({"id": 2, "name": "ytclip server", "summary": "server to run ytclip"}),
        json!({"id": 3, "name": "tools", "summary": "a server to run things"}),
        json!({"id": 4, "name": "server", "summary": "an app served to users, server to go"}),
        json!({"id": 5, "name": "proxy", "summary": "simple http server to serve files"}),
        json!({"id": 6, "name": "server", "summary": "to server"}),
    ];
    let shard = shard_with(
        &directory,
        vec![
            RankingRule::Words,
            RankingRule::Typo,
            RankingRule::Proximity,
            RankingRule::AttributeRank,
            RankingRule::WordPosition,
        ],
        Some(vec!["name", "summary"]),
        &documents,
    );
    let page = query("\"server to\"");
    // `name` holds the first word of 2 (position 1, but position 0 in `summary`) and 4
    // (position 0); `summary` holds it for 1, 3 and 5 at positions 0, 1 and 2. Document 6
    // has both words, never in the phrase's order.
    let expected = [2, 4, 1, 3, 5];
    assert_order_at_every_page_size(&shard, page, &expected);
}

/// A page smaller than the bucket: proximity's best sub-bucket holds the documents with the
/// two words side by side and the one holding their n-gram (one occurrence standing for
/// both), ahead of reversed and farther pairs, at every page size.
#[test]
fn proximity_counts_an_ngram_as_side_by_side_at_every_page_size() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents = [
        json!({"id": 1, "title": "sun and a flower"}),
        json!({"id": 2, "title": "flower sun"}),
        json!({"id": 3, "title": "sunflower seeds"}),
        json!({"id": 4, "title": "sun big flower"}),
        json!({"id": 5, "title": "sun flower"}),
    ];
    let shard = shard_with(
        &directory,
        vec![RankingRule::Words, RankingRule::Proximity],
        None,
        &documents,
    );
    let mut page = query("sun flower");
    page.matching_strategy = MatchingStrategy::All;
    // Proximity 1 for 3 (the n-gram) and 5; 2 for 2 (reversed) and 4; 3 for 1.
    let expected = [3, 5, 2, 4, 1];
    assert_order_at_every_page_size(&shard, page, &expected);
}

#[test]
fn attribute_and_position_follow_the_occurrences_with_the_fewest_typos() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    // "gatway" matches both summaries exactly; document 2's name holds "gateway", one typo
    // away. The typo rule keeps the exact path, and the attribute rule then sees both in
    // `summary`: a tie, broken by storage order (document 1 first).
    let documents = [
        json!({"id": 1, "name": "checkout", "summary": "payment gatway module"}),
        json!({"id": 2, "name": "payment gateway", "summary": "payment gatway module"}),
    ];
    let shard = shard_with(
        &directory,
        vec![
            RankingRule::Words,
            RankingRule::Typo,
            RankingRule::AttributeRank,
            RankingRule::WordPosition,
        ],
        Some(vec!["name", "summary"]),
        &documents,
    );
    let hits = ranked(&shard, &query("gatway"));
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].0, 1);
    assert!((hits[0].1 - hits[1].1).abs() < 1e-12, "{hits:?}");
}

/// One term, ranked by field then position at every page size: the splits stop once the
/// page is ranked, and a document's cost comes from its best slot. `wor` is a prefix: document
/// 5 holds it in `body` at position 0 and in `title` at position 2, so the field rule puts it
/// with the other title matches, and the position rule then ranks it by its best position over
/// both fields (0).
#[test]
fn one_term_ranks_by_field_then_position_at_every_page_size() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![
            RankingRule::Words,
            RankingRule::AttributeRank,
            RankingRule::WordPosition,
        ],
        Some(vec!["title", "body"]),
        &[
            json!({"id": 1, "title": "hello there world", "body": "x"}),
            json!({"id": 2, "title": "x", "body": "world peace"}),
            json!({"id": 3, "title": "a b c d e f g h i j k l m n o p q r s worker", "body": "x"}),
            json!({"id": 4, "title": "the work", "body": "x"}),
            json!({"id": 5, "title": "a b word", "body": "words"}),
            json!({"id": 6, "title": "x", "body": "one two three four five wording"}),
            json!({"id": 7, "title": "nothing here", "body": "x"}),
        ],
    );
    // Title matches: 5 (best position 0, in body), 4 (1), 1 (2), 3 (19); then body
    // matches: 2 (0), 6 (5).
    assert_order_at_every_page_size(&shard, query("wor"), &[5, 4, 1, 3, 2, 6]);
}

/// One term with typo alternatives, at every page size: after the typo rule, the field rule
/// looks only at each document's fewest-typo occurrences (document 1's title holds a one-typo
/// form, its body the word itself: it ranks with the body matches).
#[test]
fn one_term_ranks_fields_by_its_fewest_typos_at_every_page_size() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![
            RankingRule::Words,
            RankingRule::Typo,
            RankingRule::AttributeRank,
        ],
        Some(vec!["title", "body"]),
        &[
            json!({"id": 1, "title": "wondrful", "body": "wonderful"}),
            json!({"id": 2, "title": "x", "body": "wonderful"}),
            json!({"id": 3, "title": "wonderful", "body": "x"}),
            json!({"id": 4, "title": "wondrful", "body": "x"}),
            json!({"id": 5, "title": "x", "body": "wondrful"}),
        ],
    );
    assert_order_at_every_page_size(&shard, query("wonderful "), &[3, 1, 2, 4, 5]);
}

/// Cities with their `_geo` points (one without), all holding the word `city`.
fn cities() -> Vec<Value> {
    vec![
        json!({"id": 1, "name": "berlin city", "_geo": {"lat": 52.52, "lng": 13.405}}),
        json!({"id": 2, "name": "lyon city", "_geo": {"lat": 45.764, "lng": 4.8357}}),
        json!({"id": 3, "name": "nowhere city"}),
        json!({"id": 4, "name": "london city", "_geo": {"lat": "51.5072", "lng": "-0.1276"}}),
        json!({"id": 5, "name": "paris city", "_geo": {"lat": 48.8566, "lng": 2.3522}}),
    ]
}

#[test]
fn geo_sort_orders_by_distance_with_pointless_documents_last() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = shard_with(
        &directory,
        vec![RankingRule::Words, RankingRule::Sort],
        None,
        &cities(),
    );
    shard
        .set_sortable_fields(&["_geo".to_owned()])
        .expect("set_sortable_fields succeeds");
    // From Paris: Paris 0 km, London ~344 km, Lyon ~392 km, Berlin ~878 km.
    let from_paris = |ascending: bool, q: Option<&str>| {
        let mut search = query("city");
        search.q = q.map(str::to_owned);
        search.sort = vec![SearchSort::Geo(GeoSort {
            point: [48.8566, 2.3522],
            ascending,
        })];
        ranked_ids(&shard, &search)
    };
    for q in [Some("city"), None] {
        assert_eq!(from_paris(true, q), [5, 4, 2, 1, 3], "q {q:?}");
        assert_eq!(from_paris(false, q), [1, 2, 4, 5, 3], "q {q:?}");
    }
    let mut search = query("city");
    search.sort = vec![SearchSort::Geo(GeoSort {
        point: [48.8566, 2.3522],
        ascending: true,
    })];
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(&search).expect("search succeeds");
    let details = details_json(&hits.hits[1].details, false);
    let geo = &details["_geoPoint(48.8566, 2.3522):asc"];
    assert_eq!(geo["value"], json!({"lat": 51.5072, "lng": -0.1276}));
    let distance = geo["distance"].as_f64().expect("London has a distance");
    assert!((340_000.0..350_000.0).contains(&distance), "{distance}");
    let last = details_json(&hits.hits[4].details, false);
    assert_eq!(last["_geoPoint(48.8566, 2.3522):asc"]["value"], Value::Null);
}

/// Exactness as the last rule with phrases: the documents that may match a field at its start
/// are bounded with every word of the phrase at its own position (not only the first), and
/// the bound must never leave out one that does. The decoys (more than one ranked chunk) have
/// the phrase's first word first in a field of the phrase's length, and hold the phrase
/// elsewhere; the documents that match are stored last.
#[test]
fn a_phrase_at_the_start_of_a_field_is_found_past_many_documents_starting_with_its_first_word() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut documents: Vec<Value> = (1..=150)
        .map(|id| {
            json!({"id": id, "name": format!("mcp tool{id}"), "summary": format!("an mcp server number{id}")})
        })
        .collect();
    // The phrase is the whole summary: an exact match.
    documents.push(json!({"id": 151, "name": "other151", "summary": "mcp server"}));
    // The phrase starts the summary, which holds more words.
    documents.push(json!({"id": 152, "name": "other152", "summary": "mcp server tools"}));
    // The second word right after the first, but in another field.
    documents.push(json!({"id": 153, "name": "mcp", "summary": "server mcp server"}));
    let shard = shard_with(
        &directory,
        vec![RankingRule::Exactness],
        Some(vec!["name", "summary"]),
        &documents,
    );
    let mut page = query("\"mcp server\"");
    page.limit = 3;
    // The exact match, the start of a field, then the lowest id holding the phrase elsewhere.
    let order = ranked_ids(&shard, &page);
    assert_eq!(order, [151, 152, 1]);

    // A phrase after a word: it must start at the query's second position.
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut documents: Vec<Value> = (1..=150)
        .map(|id| {
            json!({"id": id, "name": format!("quick brown dog{id}"), "summary": format!("quick and brown fox {id}")})
        })
        .collect();
    documents.push(json!({"id": 151, "name": "other", "summary": "quick brown fox"}));
    documents.push(json!({"id": 152, "name": "other", "summary": "quick brown fox runs"}));
    let shard = shard_with(
        &directory,
        vec![RankingRule::Exactness],
        Some(vec!["name", "summary"]),
        &documents,
    );
    let mut page = query("quick \"brown fox\"");
    page.matching_strategy = MatchingStrategy::All;
    page.limit = 3;
    let order = ranked_ids(&shard, &page);
    assert_eq!(order, [151, 152, 1]);
}

/// Exactness as the last rule with one word: the documents with the word at the start of a
/// field rank at the "start of a field" ceiling straight from the bitmaps, in id order, after
/// the exact match and before the documents holding it elsewhere, however many of those have
/// lower ids.
#[test]
fn one_word_at_the_start_of_a_field_ranks_before_lower_ids_holding_it_elsewhere() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut documents = vec![
        json!({"id": 1, "name": "other", "summary": "fox runs"}),
        json!({"id": 2, "name": "fox", "summary": "x"}),
        json!({"id": 3, "name": "the fox", "summary": "fox tail"}),
        json!({"id": 4, "name": "red fox", "summary": "a fox"}),
    ];
    documents.extend((5..=150).map(|id| json!({"id": id, "name": format!("red fox {id}")})));
    documents.push(json!({"id": 151, "name": "fox hunter"}));
    let shard = shard_with(
        &directory,
        vec![RankingRule::Exactness],
        Some(vec!["name", "summary"]),
        &documents,
    );
    let mut page = query("fox");
    page.limit = 6;
    let order = ranked_ids(&shard, &page);
    assert_eq!(order, [2, 1, 3, 151, 4, 5]);

    // Two words are not known to start a field from the bitmaps alone: document 1 has
    // `quick` first in `text` and `fox` second in `title`, each field holding both, yet no
    // field starts with both. It must be read, and ranks after document 2.
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents = [
        json!({"id": 1, "text": "quick brown fox", "title": "red fox quick"}),
        json!({"id": 2, "text": "quick fox jumps"}),
    ];
    let shard = shard_with(
        &directory,
        vec![RankingRule::Exactness],
        Some(vec!["text", "title"]),
        &documents,
    );
    let mut page = query("quick fox");
    page.matching_strategy = MatchingStrategy::All;
    page.limit = 1;
    let order = ranked_ids(&shard, &page);
    assert_eq!(order, [2]);
}

/// A shard holding 1,600 documents over a few words, so that common terms hold enough
/// documents for a commit to keep their postings (`search::term_postings`).
fn common_words_shard(directory: &tempfile::TempDir) -> Shard {
    const WORDS: [&str; 8] = [
        "python", "pythons", "pithon", "tool", "tools", "toolkit", "library", "client",
    ];
    let documents: Vec<Value> = (0..1_600_usize)
        .map(|id| {
            let first = WORDS[id % WORDS.len()];
            let second = WORDS[(id * 7 + 3) % WORDS.len()];
            let third = WORDS[(id * 13 + 5) % WORDS.len()];
            json!({
                "id": id,
                "title": format!("{first} {second} for {third}"),
                "text": format!("{third} and {first}"),
            })
        })
        .collect();
    shard_with(directory, RankingRule::defaults(), None, &documents)
}

/// Postings kept by the searches of a commit give its later searches, with candidates or
/// without, the hits and scores the same search gets as the first one of a fresh commit.
#[test]
fn kept_term_postings_give_the_hits_of_a_fresh_commit() {
    let candidates: roaring::RoaringBitmap = (0..1_600_u32).filter(|id| id % 3 == 0).collect();
    let searches: Vec<SearchQuery> = [
        "python tool",
        "pythn tools for",
        "library client",
        "for too",
    ]
    .into_iter()
    .flat_map(|q| {
        let mut filtered = query(q);
        filtered.limit = 20;
        filtered.candidates = Some(candidates.clone());
        let mut whole = query(q);
        whole.limit = 20;
        [whole, filtered]
    })
    .collect();
    let total = |shard: &Shard, search: &SearchQuery| {
        let snapshot = shard.read().expect("read succeeds");
        snapshot.search(search).expect("search succeeds").total
    };
    let fresh: Vec<(Vec<(i64, f64)>, u64)> = searches
        .iter()
        .map(|search| {
            let directory = tempfile::tempdir().expect("a temporary directory");
            let shard = common_words_shard(&directory);
            (ranked(&shard, search), total(&shard, search))
        })
        .collect();
    let directory = tempfile::tempdir().expect("a temporary directory");
    let reused = common_words_shard(&directory);
    for _ in 0..2 {
        for (search, (expected, expected_total)) in searches.iter().zip(&fresh) {
            assert!(!expected.is_empty(), "{:?}", search.q);
            assert_ranked(&ranked(&reused, search), expected);
            assert_eq!(total(&reused, search), *expected_total, "{:?}", search.q);
        }
    }
}
