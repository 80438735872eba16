//! Relevance as Meilisearch 1.41 ranks, black-box, on an index split over several shards:
//! small crafted datasets where one shard alone would rank correctly but the merge of several
//! shards (or a shard-local quantity leaking into a rank) would not. Every expected order is
//! derived from the documents and Meilisearch's ranking rules (words, typo, proximity,
//! attributeRank, sort, wordPosition, exactness; ties by insertion order), never copied from
//! this server's output.

use crate::common;

use common::{Options, Server};
use serde_json::{Value, json};

/// Shards per index: enough that a word held by one document lives in one shard only.
const SHARDS_PER_INDEX: &str = "4";

fn server() -> Server {
    Server::start_with(Options {
        extra_arguments: vec![
            "--shards-per-index".to_string(),
            SHARDS_PER_INDEX.to_string(),
            // Every index holds its shards from the start, however few its documents.
            "--documents-per-shard".to_string(),
            "0".to_string(),
        ],
        ..Options::default()
    })
}

/// Applies `settings` to index `uid`, adds `documents`, and waits for both tasks.
fn fill(server: &Server, uid: &str, settings: &Value, documents: &[Value]) {
    let response = server.send("PATCH", &format!("/indexes/{uid}/settings"), Some(settings));
    assert_eq!(response.status, 202, "{:?}", response.json());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    let response = server.send(
        "POST",
        &format!("/indexes/{uid}/documents?primaryKey=id"),
        Some(&Value::Array(documents.to_vec())),
    );
    assert_eq!(response.status, 202, "{:?}", response.json());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
}

/// The hits of `body` on index `uid`, with their ranking scores.
fn search(server: &Server, uid: &str, body: &Value) -> Value {
    let response = server.send("POST", &format!("/indexes/{uid}/search"), Some(body));
    assert_eq!(response.status, 200, "{:?}", response.json());
    response.json()
}

fn ids(answer: &Value) -> Vec<u64> {
    answer["hits"]
        .as_array()
        .expect("hits is an array")
        .iter()
        .map(|hit| hit["id"].as_u64().expect("every id is a number"))
        .collect()
}

fn scores(answer: &Value) -> Vec<f64> {
    answer["hits"]
        .as_array()
        .expect("hits is an array")
        .iter()
        .map(|hit| {
            hit["_rankingScore"]
                .as_f64()
                .expect("every hit has a score")
        })
        .collect()
}

/// Fails unless the scores never increase down the list.
fn assert_scores_never_increase(answer: &Value) {
    let scores = scores(answer);
    assert!(
        scores.windows(2).all(|pair| pair[0] >= pair[1]),
        "scores out of order: {scores:?} for {:?}",
        ids(answer)
    );
}

/// Documents holding `blue monkey` in their title (ids 100..) or in their summary (ids
/// 200..), a one-typo match of the query's `monkeys`, and one document whose only word is the
/// concatenation `bluemonkeys`: with several shards, that n-gram exists in one shard only.
fn monkeys() -> Vec<Value> {
    let mut documents = Vec::new();
    for index in 0..12u64 {
        documents.push(json!({"id": 100 + index, "title": "blue monkey", "summary": "a toy"}));
        documents.push(json!({"id": 200 + index, "title": "a toy", "summary": "blue monkey"}));
    }
    documents.push(json!({"id": 300, "title": "bluemonkeys", "summary": "a toy"}));
    documents
}

#[test]
fn a_typo_ranks_the_same_in_every_shard_whether_or_not_it_holds_an_ngram_of_the_query() {
    let server = server();
    let settings = json!({"searchableAttributes": ["title", "summary"]});
    fill(&server, "monkeys", &settings, &monkeys());
    // `blue` (4 letters) takes no typo, `monkeys` one: every `blue monkey` document has one
    // typo, words 2/2 and proximity 1, so `attributeRank` puts the 12 title documents before
    // the 12 summary documents, each group in insertion order. The n-gram `bluemonkeys`
    // matches both words for two typos (one per word it joins): it comes last.
    let answer = search(
        &server,
        "monkeys",
        &json!({"q": "blue monkeys", "limit": 30, "showRankingScore": true}),
    );
    let mut expected: Vec<u64> = (100..112).collect();
    expected.extend(200..212);
    expected.push(300);
    assert_eq!(ids(&answer), expected);
    assert_scores_never_increase(&answer);
}

/// Documents matching `uploader` exactly in their name (ids 1000..1200) or with one typo
/// (`uploadgram`, ids 2000..2003), none holding `rank`, and documents holding `rank` that do
/// not match.
fn uploaders() -> Vec<Value> {
    let mut documents = Vec::new();
    for index in 0..200u64 {
        documents.push(json!({"id": 1000 + index, "name": format!("uploader tool{index}")}));
    }
    for index in 0..3u64 {
        documents.push(json!({"id": 2000 + index, "name": "uploadgram"}));
    }
    for index in 0..50u64 {
        documents.push(json!({"id": 3000 + index, "name": "other", "rank": index}));
    }
    documents
}

#[test]
fn a_sort_on_a_field_no_match_holds_keeps_the_rules_before_it_and_fills_the_page() {
    let server = server();
    let settings =
        json!({"searchableAttributes": ["name"], "sortableAttributes": ["rank", "stars"]});
    fill(&server, "uploaders", &settings, &uploaders());
    // No match holds `rank` (nor `stars`): the sort leaves the order of the rules before it
    // (typo: the 200 exact matches before the 3 with one typo) and after it (word position,
    // exactness: equal), so the page is the first exact matches in insertion order.
    for sort in ["rank:asc", "rank:desc", "stars:asc"] {
        let answer = search(
            &server,
            "uploaders",
            &json!({"q": "uploader", "limit": 20, "sort": [sort], "showRankingScore": true}),
        );
        let expected: Vec<u64> = (1000..1020).collect();
        assert_eq!(ids(&answer), expected, "{sort}");
        assert_eq!(answer["estimatedTotalHits"], 203, "{sort}");
        assert_scores_never_increase(&answer);
    }
}

#[test]
fn a_query_word_also_matches_its_two_halves_side_by_side_for_one_typo() {
    let server = server();
    let settings = json!({"searchableAttributes": ["name", "summary"]});
    let mut documents = vec![json!({"id": 1, "name": "jsonld", "summary": "a tool"})];
    for id in 2..=6u64 {
        documents.push(json!({"id": id, "name": "tool", "summary": "Add JSON-LD to pages"}));
    }
    // `json` and `ld` in one field but not side by side: no match.
    documents.push(json!({"id": 7, "name": "tool", "summary": "json and ld"}));
    fill(&server, "split", &settings, &documents);
    // `jsonld` itself (no typo) first, then its split `json ld` (one typo), in insertion order.
    let answer = search(
        &server,
        "split",
        &json!({"q": "jsonld", "showRankingScore": true, "showRankingScoreDetails": true}),
    );
    assert_eq!(ids(&answer), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(answer["estimatedTotalHits"], 6);
    assert_scores_never_increase(&answer);
    let typos: Vec<&Value> = answer["hits"]
        .as_array()
        .expect("hits is an array")
        .iter()
        .map(|hit| &hit["_rankingScoreDetails"]["typo"]["typoCount"])
        .collect();
    assert_eq!(
        typos,
        [
            &json!(0),
            &json!(1),
            &json!(1),
            &json!(1),
            &json!(1),
            &json!(1)
        ]
    );
}

#[test]
fn a_word_splits_where_its_halves_follow_each_other_in_the_most_documents_the_first_cut_on_a_tie() {
    // One shard: the split is chosen from its pair counts.
    let server = Server::start_with(Options {
        extra_arguments: vec!["--shards-per-index".to_string(), "1".to_string()],
        ..Options::default()
    });
    let settings = json!({"searchableAttributes": ["title"]});
    let documents = vec![
        json!({"id": 1, "title": "a bcd"}),
        json!({"id": 2, "title": "ab cd"}),
        json!({"id": 3, "title": "ab cd"}),
        json!({"id": 4, "title": "abc d"}),
        json!({"id": 5, "title": "abc d"}),
    ];
    fill(&server, "cuts", &settings, &documents);
    // `a bcd` follows in one document, `ab cd` and `abc d` in two each: the first of the two
    // most frequent cuts, `ab cd`, is the split, and only it matches (a split is never a
    // prefix, though `abcd` is the query's last word).
    let answer = search(&server, "cuts", &json!({"q": "abcd"}));
    assert_eq!(ids(&answer), vec![2, 3]);
    assert_eq!(answer["estimatedTotalHits"], 2);
}

#[test]
fn a_cached_prefix_counts_its_longer_words_for_proximity_only_after_the_word_before() {
    // One shard: whether a prefix is in Meilisearch's prefix cache depends on the words of
    // the index (at least 100 starting with it), counted here by the shard.
    let server = Server::start_with(Options {
        extra_arguments: vec!["--shards-per-index".to_string(), "1".to_string()],
        ..Options::default()
    });
    let settings = json!({"searchableAttributes": ["title"]});
    let pair = vec![
        // `astro` (a word `as` starts) right before `provider`: proximity 2 backwards.
        json!({"id": 1, "title": "astro provider"}),
        // `astro` three words after `provider`: proximity 3 forwards.
        json!({"id": 2, "title": "provider one two astro"}),
    ];
    // Without the cache (two words start with `as`), both directions count: 1 before 2.
    fill(&server, "few", &settings, &pair);
    let answer = search(&server, "few", &json!({"q": "provider as"}));
    assert_eq!(ids(&answer), vec![1, 2]);
    // With 120 more words starting with `as`, `as` is in the cache: `astro` before
    // `provider` no longer counts, so 1 is as far as it gets and 2 comes first.
    let mut documents = pair;
    documents.extend(
        (0..120u64).map(|index| json!({"id": 100 + index, "title": format!("as{index:03}")})),
    );
    fill(&server, "many", &settings, &documents);
    let answer = search(
        &server,
        "many",
        &json!({"q": "provider as", "showRankingScore": true}),
    );
    assert_eq!(ids(&answer), vec![2, 1]);
    assert_scores_never_increase(&answer);
}

#[test]
fn a_word_found_alone_keeps_its_attribute_when_its_split_also_occurs() {
    let server = server();
    let settings = json!({"searchableAttributes": ["name", "summary"]});
    let documents = vec![
        // Summary first in insertion order, so only the attribute rank can put 2 first.
        json!({"id": 1, "name": "tool", "summary": "addon"}),
        // `addon` in the name, and its split `add on` in the summary.
        json!({"id": 2, "name": "addon tool", "summary": "add on for x"}),
    ];
    fill(&server, "addons", &settings, &documents);
    // Both match `addon` without a typo; 2 holds it in the first attribute.
    let answer = search(
        &server,
        "addons",
        &json!({"q": "addon", "showRankingScore": true}),
    );
    assert_eq!(ids(&answer), vec![2, 1]);
    assert_scores_never_increase(&answer);
}

#[test]
fn an_ngram_matches_with_typos_and_as_the_prefix_the_same_in_every_shard() {
    let server = server();
    let settings = json!({"searchableAttributes": ["title"]});
    let mut documents = Vec::new();
    // Twelve documents holding the two words, so the shards hold them, and one each for the
    // n-gram itself, the n-gram one typo away, and a word the n-gram starts.
    for index in 0..12u64 {
        documents.push(json!({"id": 100 + index, "title": "standard in place"}));
    }
    documents.push(json!({"id": 200, "title": "standardin"}));
    documents.push(json!({"id": 201, "title": "standardon"}));
    documents.push(json!({"id": 202, "title": "standardinterface"}));
    documents.push(json!({"id": 203, "title": "standardxyz"}));
    fill(&server, "ngrams", &settings, &documents);
    // `in` is the prefix: the n-gram `standardin` (2 typos for 10 characters, less 1 for the
    // word it adds) matches itself and `standardinterface` (a word it starts) at its base cost
    // of two typos, and `standardon` at three; `standardxyz` is three edits away.
    let answer = search(
        &server,
        "ngrams",
        &json!({"q": "standard in", "limit": 30, "matchingStrategy": "all",
                "showRankingScore": true}),
    );
    let found = ids(&answer);
    let mut expected: Vec<u64> = (100..112).collect();
    assert_eq!(found[..12], expected[..], "the two words first: {found:?}");
    let mut base_cost = found[12..14].to_vec();
    base_cost.sort_unstable();
    assert_eq!(
        base_cost,
        [200, 202],
        "then the n-gram and the word it starts: {found:?}"
    );
    expected = vec![201];
    assert_eq!(
        found[14..],
        expected[..],
        "the n-gram with a typo last: {found:?}"
    );
    assert_scores_never_increase(&answer);
}
