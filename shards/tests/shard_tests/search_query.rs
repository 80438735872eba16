//! Search on one shard: analysis of mixed text, query parsing (phrases, negation, prefix),
//! typo rules (sizes, first letter, disableOn*), prefix search, phrases, negative words and
//! phrases, matching strategies, attributesToSearchOn, candidates, synonyms, n-grams, stop
//! words.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::query;

use serde_json::{Value, json};
use shards::analysis::{Analyzer, RankingRule, TextSettings};
use shards::search::{MatchingStrategy, SearchQuery, TermKind, details_json, parse_query};
use shards::shard::Shard;

fn open(directory: &tempfile::TempDir) -> Shard {
    common::open_shard(directory, "shard.pages")
}

fn load(shard: &Shard, documents: &[Value]) {
    common::load(shard, documents);
}

/// External ids (the `id` field) of the hits, best first.
fn ids(shard: &Shard, query: &SearchQuery) -> Vec<i64> {
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(query).expect("search succeeds");
    hits.hits
        .iter()
        .map(|hit| {
            let document = snapshot
                .document_by_id(hit.id, None)
                .expect("document_by_id succeeds")
                .expect("the value exists");
            document["id"].as_i64().expect("as_i64 finds a value")
        })
        .collect()
}

fn sorted(mut values: Vec<i64>) -> Vec<i64> {
    values.sort_unstable();
    values
}

#[test]
fn mixed_text_is_normalized_and_positioned_like_meilisearch() {
    let analyzer = Analyzer::new(&TextSettings::default());
    let words: Vec<(String, u32)> = analyzer
        .words("Hello Wörld. Café crème 東京", 0)
        .into_iter()
        .map(|word| (word.word, word.position))
        .collect();
    let texts: Vec<&str> = words.iter().map(|(word, _)| word.as_str()).collect();
    assert_eq!(texts[..4], ["hello", "world", "cafe", "creme"]);
    // A soft separator (" ") adds 1, a hard one (". ") adds 8.
    assert_eq!(words[0].1, 0);
    assert_eq!(words[1].1, 1);
    assert_eq!(words[2].1, 9);
    assert_eq!(words[3].1, 10);
    assert!(words.len() >= 5, "the CJK text gives words: {words:?}");
    assert!(words[4].1 >= 11);
}

#[test]
fn stop_words_take_positions_but_are_not_words() {
    let settings = TextSettings {
        stop_words: ["The".to_owned()].into(),
        ..TextSettings::default()
    };
    let analyzer = Analyzer::new(&settings);
    let words: Vec<(String, u32)> = analyzer
        .words("the quick fox", 0)
        .into_iter()
        .map(|word| (word.word, word.position))
        .collect();
    assert_eq!(words, [("quick".to_owned(), 1), ("fox".to_owned(), 2)]);
}

#[test]
fn query_parsing_finds_phrases_negations_and_the_prefix() {
    let settings = TextSettings::default();
    let analyzer = Analyzer::new(&settings);
    let parsed = parse_query(
        &analyzer,
        &settings,
        "big \"red fox\" -cat -\"dog house\" jum",
        None,
    );
    assert_eq!(parsed.negative_words, ["cat"]);
    assert_eq!(
        parsed.negative_phrases,
        [vec![Some("dog".to_owned()), Some("house".to_owned())]]
    );
    assert_eq!(parsed.terms.len(), 3);
    assert!(
        matches!(&parsed.terms[0].kind, TermKind::Word { word, is_prefix: false, .. } if word == "big")
    );
    assert!(matches!(&parsed.terms[1].kind, TermKind::Phrase { words } if words.len() == 2));
    assert!(
        matches!(&parsed.terms[2].kind, TermKind::Word { word, is_prefix: true, .. } if word == "jum")
    );
    // A trailing space ends the prefix.
    let parsed = parse_query(&analyzer, &settings, "jum ", None);
    assert!(matches!(
        &parsed.terms[0].kind,
        TermKind::Word {
            is_prefix: false,
            ..
        }
    ));
    // A dash inside a word is no negation.
    let parsed = parse_query(&analyzer, &settings, "t-shirt", None);
    assert!(parsed.negative_words.is_empty());
}

fn typo_corpus() -> Vec<Value> {
    vec![
        json!({"id": 1, "title": "hello"}),
        json!({"id": 2, "title": "jello"}),
        json!({"id": 3, "title": "hell"}),
        json!({"id": 4, "title": "wonderful"}),
        json!({"id": 5, "title": "ponderful"}),
        json!({"id": 6, "title": "wandrefil"}),
        json!({"id": 7, "title": "12345"}),
        json!({"id": 8, "title": "helicopter"}),
    ]
}

#[test]
fn typo_rules_follow_word_sizes_and_the_first_letter() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(&shard, &typo_corpus());
    // 5 letters: one typo, same first letter only ("jello" starts differently).
    assert_eq!(sorted(ids(&shard, &query("hallo "))), [1]);
    // 4 letters: no typo.
    assert_eq!(sorted(ids(&shard, &query("hall "))), Vec::<i64>::new());
    // 9 letters: two typos; a different first letter at one edit counts as two typos, and
    // the exact match ranks first.
    assert_eq!(ids(&shard, &query("wonderful ")), [4, 5]);
    assert_eq!(ids(&shard, &query("wonderfol ")), [4]);
    // 8 letters: one typo only.
    assert_eq!(ids(&shard, &query("wondrful ")), [4]);
    // Prefix: the last word also matches the words it starts.
    assert_eq!(sorted(ids(&shard, &query("hel"))), [1, 3, 8]);
    assert_eq!(ids(&shard, &query("hell"))[0], 3);
}

#[test]
fn typo_tolerance_settings_disable_typos() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(&shard, &typo_corpus());
    let mut settings = TextSettings::default();
    settings.typo_tolerance.enabled = false;
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    assert_eq!(sorted(ids(&shard, &query("hallo "))), Vec::<i64>::new());
    let mut settings = TextSettings::default();
    settings.typo_tolerance.disable_on_words = ["hallo".to_owned()].into();
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    assert_eq!(sorted(ids(&shard, &query("hallo "))), Vec::<i64>::new());
    let mut settings = TextSettings::default();
    settings.typo_tolerance.one_typo_characters_min = 4;
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    assert_eq!(sorted(ids(&shard, &query("hall "))), [3]);
    let mut settings = TextSettings::default();
    settings.typo_tolerance.disable_on_numbers = true;
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    assert_eq!(sorted(ids(&shard, &query("12346 "))), Vec::<i64>::new());
    shard
        .set_text_settings(TextSettings::default())
        .expect("set_text_settings succeeds");
    assert_eq!(sorted(ids(&shard, &query("12346 "))), [7]);
    let mut settings = TextSettings::default();
    settings.typo_tolerance.disable_on_attributes = ["title".to_owned()].into();
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    assert_eq!(sorted(ids(&shard, &query("hallo "))), Vec::<i64>::new());
    assert_eq!(sorted(ids(&shard, &query("hello "))), [1]);
}

fn fox_corpus() -> Vec<Value> {
    vec![
        json!({"id": 1, "title": "the quick brown fox", "body": "jumps"}),
        json!({"id": 2, "title": "the brown quick fox", "body": "sleeps"}),
        json!({"id": 3, "title": "a fox", "body": "quick"}),
        json!({"id": 4, "title": "dog house", "body": "quick brown dog"}),
    ]
}

#[test]
fn phrases_need_consecutive_words_and_negations_exclude() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(&shard, &fox_corpus());
    assert_eq!(sorted(ids(&shard, &query("\"quick brown\""))), [1, 4]);
    let mut all = query("\"quick brown\" fox");
    all.matching_strategy = MatchingStrategy::All;
    assert_eq!(sorted(ids(&shard, &all)), [1]);
    assert_eq!(sorted(ids(&shard, &query("quick -fox"))), [4]);
    assert_eq!(
        sorted(ids(&shard, &query("quick -\"brown dog\""))),
        [1, 2, 3]
    );
    // Only negations: every other document.
    assert_eq!(sorted(ids(&shard, &query("-dog"))), [1, 2, 3]);
}

#[test]
fn matching_strategies_drop_terms_as_meilisearch() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(&shard, &fox_corpus());
    let mut all = query("quick fox sleeps ");
    all.matching_strategy = MatchingStrategy::All;
    assert_eq!(ids(&shard, &all), [2]);
    let last = query("quick fox sleeps ");
    // All three, then "quick fox", then "quick".
    assert_eq!(ids(&shard, &last)[0], 2);
    assert_eq!(sorted(ids(&shard, &last)), [1, 2, 3, 4]);
    let mut frequency = query("dog quick ");
    frequency.matching_strategy = MatchingStrategy::Frequency;
    // "quick" is the most frequent: dropped first, so documents with "dog" only remain.
    assert_eq!(ids(&shard, &frequency), [4]);
    let mut last_words = query("dog quick ");
    last_words.matching_strategy = MatchingStrategy::Last;
    assert_eq!(ids(&shard, &last_words), [4]);
}

#[test]
fn attributes_to_search_on_and_candidates_restrict_the_search() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(&shard, &fox_corpus());
    let mut on_body = query("quick ");
    on_body.attributes_to_search_on = Some(vec!["body".to_owned()]);
    assert_eq!(sorted(ids(&shard, &on_body)), [3, 4]);
    let snapshot = shard.read().expect("read succeeds");
    let internal = snapshot
        .internal_id("3")
        .expect("internal_id succeeds")
        .expect("the value exists");
    let mut filtered = query("quick ");
    filtered.candidates = Some([internal].into_iter().collect());
    assert_eq!(ids(&shard, &filtered), [3]);
}

#[test]
fn searchable_attributes_limit_the_indexed_fields() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(&shard, &fox_corpus());
    let settings = TextSettings {
        searchable_attributes: Some(vec!["body".to_owned()]),
        ..TextSettings::default()
    };
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    assert_eq!(sorted(ids(&shard, &query("fox "))), Vec::<i64>::new());
    assert_eq!(sorted(ids(&shard, &query("quick "))), [3, 4]);
}

#[test]
fn synonyms_stop_words_separators_and_dictionary_apply() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(
        &shard,
        &[
            json!({"id": 1, "title": "a tiny cat"}),
            json!({"id": 2, "title": "new york city"}),
            json!({"id": 3, "title": "snake_case and C++ rocks"}),
        ],
    );
    let mut settings = TextSettings {
        ranking_rules: RankingRule::defaults(),
        ..TextSettings::default()
    };
    settings
        .synonyms
        .insert("small".to_owned(), vec!["tiny".to_owned()]);
    settings
        .synonyms
        .insert("nyc".to_owned(), vec!["New York".to_owned()]);
    shard
        .set_text_settings(settings.clone())
        .expect("set_text_settings succeeds");
    assert_eq!(ids(&shard, &query("small ")), [1]);
    assert_eq!(ids(&shard, &query("nyc ")), [2]);
    // One way only.
    assert_eq!(ids(&shard, &query("tiny ")), [1]);
    assert!(ids(&shard, &query("york ")).contains(&2));

    settings.stop_words = ["city".to_owned()].into();
    shard
        .set_text_settings(settings.clone())
        .expect("set_text_settings succeeds");
    // A stop word is no term unless it ends the query; it is no longer indexed either.
    assert_eq!(ids(&shard, &query("city")), Vec::<i64>::new());
    assert_eq!(ids(&shard, &query("york city ")), [2]);

    settings.separator_tokens = ["_".to_owned()].into();
    shard
        .set_text_settings(settings.clone())
        .expect("set_text_settings succeeds");
    assert_eq!(ids(&shard, &query("case ")), [3]);

    settings.dictionary = ["C++".to_owned()].into();
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    assert_eq!(ids(&shard, &query("C++ ")), [3]);
}

#[test]
fn adjacent_words_match_their_concatenation_and_multi_word_synonyms() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(
        &shard,
        &[
            json!({"id": 1, "title": "a sunflower field"}),
            json!({"id": 2, "title": "the sun and a flower"}),
            json!({"id": 3, "title": "nyc at night"}),
        ],
    );
    let mut all = query("sun flower ");
    all.matching_strategy = MatchingStrategy::All;
    // Both match. Meilisearch gives an n-gram a typo cost of one per word it joins, so the
    // typo rule puts the separate, exact words (document 2) before "sunflower" (document 1).
    assert_eq!(ids(&shard, &all), [2, 1]);
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(&all).expect("search succeeds");
    assert!(hits.hits[0].score > hits.hits[1].score);
    assert_eq!(hits.hits[0].matched_words, ["flower", "sun"]);
    assert_eq!(hits.hits[1].matched_words, ["sunflower"]);

    let mut settings = TextSettings::default();
    settings
        .synonyms
        .insert("New York".to_owned(), vec!["NYC".to_owned()]);
    shard
        .set_text_settings(settings)
        .expect("set_text_settings succeeds");
    let mut all = query("new york ");
    all.matching_strategy = MatchingStrategy::All;
    assert_eq!(ids(&shard, &all), [3]);
}

/// One figure of one rule's `_rankingScoreDetails` per hit, best first (`rule.key`, read as
/// `T`).
fn hit_details<T>(
    shard: &Shard,
    query: &SearchQuery,
    rule: &str,
    key: &str,
    read: fn(&Value) -> Option<T>,
) -> Vec<T> {
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(query).expect("search succeeds");
    hits.hits
        .iter()
        .map(|hit| {
            let details = details_json(&hit.details, hits.attribute_unified);
            read(&details[rule][key]).expect("every hit has the rule's details")
        })
        .collect()
}

/// Typo counts of the hits, best first, from their `typo` details.
fn hit_typos(shard: &Shard, query: &SearchQuery) -> Vec<u64> {
    hit_details(shard, query, "typo", "typoCount", Value::as_u64)
}

#[test]
fn ngrams_derive_with_typos_and_as_the_prefix_like_a_word() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(
        &shard,
        &[
            json!({"id": 1, "title": "standard in place"}),
            json!({"id": 2, "title": "standardin"}),
            json!({"id": 3, "title": "standardon"}),
            json!({"id": 4, "title": "standardxyz"}),
            json!({"id": 5, "title": "ploneformgen"}),
            json!({"id": 6, "title": "plonefor"}),
        ],
    );
    // `standardin` (10 characters: 2 typos, less 1 for the word it adds) matches
    // `standardon` at one typo; an n-gram costs one typo per word it joins, so the typo counts
    // are 0 (the two words), 2 (the n-gram) and 3 (the n-gram with one typo).
    let mut all = query("standard in ");
    all.matching_strategy = MatchingStrategy::All;
    assert_eq!(ids(&shard, &all), [1, 2, 3]);
    assert_eq!(hit_typos(&shard, &all), [0, 2, 3]);
    // As the query's prefix, the n-gram matches every word it starts, at its base cost.
    let mut prefix = query("plone for");
    prefix.matching_strategy = MatchingStrategy::All;
    let mut found = ids(&shard, &prefix);
    found.sort_unstable();
    assert_eq!(found, [5, 6]);
    assert_eq!(hit_typos(&shard, &prefix), [2, 2]);
    // Not a prefix: only the whole word.
    let mut whole = query("plone for ");
    whole.matching_strategy = MatchingStrategy::All;
    assert_eq!(ids(&shard, &whole), [6]);
}

#[test]
fn an_ngram_word_position_counts_from_its_first_query_word_each_later_word_one_further() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    // Inserted first, so insertion order alone would put it first.
    load(
        &shard,
        &[
            json!({"id": 1, "title": "bayesian spatiotemporal"}),
            json!({"id": 2, "title": "spatiotemporal genes"}),
        ],
    );
    let mut all = query("spatio temporal ");
    all.matching_strategy = MatchingStrategy::All;
    // Meilisearch prices the n-gram at document position p as cost(p) + cost(p + 1): 0 + 1
    // at position 0, 1 + 2 at position 1 (out of 2 x 10, so ranks 20/21 and 18/21).
    assert_eq!(ids(&shard, &all), [2, 1]);
    let positions = hit_details(&shard, &all, "wordPosition", "score", Value::as_f64);
    assert_eq!(positions, [20.0 / 21.0, 18.0 / 21.0]);
}

#[test]
fn an_ngram_is_never_an_exact_match() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(
        &shard,
        &[
            json!({"id": 1, "title": "vectorstore vectors"}),
            json!({"id": 2, "title": "vector stores vectorstore"}),
        ],
    );
    // Both hold the n-gram `vectorstore`. Meilisearch's exactness leaves n-grams out:
    // document 1 counts no exact word (it matches through the n-gram only), document 2 one
    // (`vector`; `stores` is a prefix match). Document 2 comes first by typos already (0
    // through its separate words, against the n-gram's 2).
    let mut all = query("vector store");
    all.matching_strategy = MatchingStrategy::All;
    let exact_words = hit_details(&shard, &all, "exactness", "matchingWords", Value::as_u64);
    assert_eq!(ids(&shard, &all), [2, 1]);
    assert_eq!(exact_words, [1, 0]);
}

#[test]
fn looked_up_and_scanned_occurrences_agree() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    let documents: Vec<Value> = (0..40)
        .map(|id| json!({"id": id, "title": format!("fox number {id}"), "body": "brown fox"}))
        .collect();
    load(&shard, &documents);
    let snapshot = shard.read().expect("read succeeds");
    let everything = snapshot.search(&query("fox ")).expect("search succeeds");
    for id in [0, 17, 39] {
        let internal = snapshot
            .internal_id(&id.to_string())
            .expect("internal_id succeeds")
            .expect("the value exists");
        let mut narrow = query("fox ");
        // One wanted document among forty: looked up, not scanned.
        narrow.candidates = Some([internal].into_iter().collect());
        let hits = snapshot.search(&narrow).expect("search succeeds");
        assert_eq!(hits.total, 1);
        let full = everything
            .hits
            .iter()
            .find(|hit| hit.id == internal)
            .expect("find finds a value");
        assert_eq!(&hits.hits[0], full);
    }
}

#[test]
fn a_short_prefix_finds_every_word_it_starts() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    let documents: Vec<Value> = (0..300)
        .map(|id| json!({"id": id, "title": format!("pre{id:03}x and more")}))
        .collect();
    load(&shard, &documents);
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(&query("pr")).expect("search succeeds");
    assert_eq!(hits.total, 300);
    assert_eq!(hits.query_words, [vec!["pr".to_owned()]]);
    // Four letters: no typo, exactly the hundred words starting "pre2".
    let hits = snapshot.search(&query("pre2")).expect("search succeeds");
    assert_eq!(hits.total, 100);
}

#[test]
fn disabled_prefix_search_makes_the_last_word_match_only_itself() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(
        &shard,
        &[
            json!({"id": 1, "text": "quick fox"}),
            json!({"id": 2, "text": "quickly foxes"}),
        ],
    );
    assert_eq!(sorted(ids(&shard, &query("quick"))), vec![1, 2]);
    shard
        .set_text_settings(TextSettings {
            prefix_search: false,
            ..TextSettings::default()
        })
        .expect("set_text_settings succeeds");
    assert_eq!(ids(&shard, &query("quick")), vec![1]);
}

#[test]
fn typo_derivations_see_the_words_of_every_new_commit() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    load(&shard, &[json!({"id": 1, "title": "turbulence models"})]);
    let typo = common::query("turbulanse");
    assert_eq!(ids(&shard, &typo), vec![1]);
    // A second batch adds a word: the cached dictionary of the first commit must not hide it.
    let operations = vec![shards::shard::Operation::Replace {
        external_id: "2".to_owned(),
        document: json!({"id": 2, "title": "avalanche forecasts"})
            .as_object()
            .expect("test documents are objects")
            .clone(),
    }];
    shard.apply(2, operations).expect("the batch applies");
    assert_eq!(ids(&shard, &common::query("avalanshe")), vec![2]);
    // The words of the first commit are still there in the second one's dictionary.
    assert_eq!(ids(&shard, &typo), vec![1]);
}

/// Enough documents holding both words apart that the phrase's position-bucket pre-filter
/// runs (it applies from 4,096 candidates): it must keep phrases far into a field, phrases
/// across the exact-position bound, and drop neighbours that sit in different fields.
#[test]
fn phrase_pre_filter_keeps_every_phrase_and_drops_words_apart() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory);
    let mut documents: Vec<Value> = (1..=4200)
        .map(|id| json!({"id": id, "title": format!("red is a fox number{id}")}))
        .collect();
    let filler = |count: usize| vec!["word"; count].join(" ");
    documents.extend([
        json!({"id": 5001, "title": "red fox"}),
        json!({"id": 5002, "title": format!("{} red fox", filler(20))}),
        json!({"id": 5003, "title": format!("{} red fox", filler(15))}),
        json!({"id": 5004, "title": "one two three red", "summary": "a b c d fox"}),
        json!({"id": 5005, "title": format!("{} red fox", filler(70))}),
    ]);
    load(&shard, &documents);
    let phrase = query("\"red fox\"");
    assert_eq!(sorted(ids(&shard, &phrase)), [5001, 5002, 5003, 5005]);
    let snapshot = shard.read().expect("read succeeds");
    let total = snapshot.search(&phrase).expect("search succeeds").total;
    assert_eq!(total, 4);
}
