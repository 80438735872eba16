//! Search through the official `meilisearch-sdk` client and raw HTTP, on two cores with four
//! shards per index: the expected hits are written from the documents and the settings (the
//! ranking rules, typo rules and filters as Meilisearch documents them), never copied from
//! this server's output.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::HashMap;

use common::{MASTER_KEY, Options, Server, json_request};
use meilisearch_sdk::client::Client;
use meilisearch_sdk::indexes::Index;
use meilisearch_sdk::search::{FederationOptions, MatchingStrategies, SearchResults};
use meilisearch_sdk::settings::Settings;
use serde_json::{Value, json};

/// Shards per index: more than the cores, so every search merges several shards per core.
const SHARDS_PER_INDEX: &str = "4";

fn server() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
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

fn books() -> Vec<Value> {
    vec![
        json!({"id": 1, "title": "The Lord of the Rings", "genre": "fantasy", "year": 1954, "series": "middle-earth"}),
        json!({"id": 2, "title": "Lord of the Flies", "genre": "drama", "year": 1954, "series": "none-1"}),
        json!({"id": 3, "title": "The Hobbit", "genre": "fantasy", "year": 1937, "series": "middle-earth"}),
        json!({"id": 4, "title": "The Silmarillion", "genre": "fantasy", "year": 1977, "series": "middle-earth"}),
        json!({"id": 5, "title": "Dune", "genre": "science fiction", "year": 1965, "series": "dune"}),
        json!({"id": 6, "title": "Dune Messiah", "genre": "science fiction", "year": 1969, "series": "dune"}),
        json!({"id": 7, "title": "Neuromancer", "genre": "science fiction", "year": 1984, "series": "sprawl"}),
        json!({"id": 8, "title": "Rings of Saturn", "genre": "essay", "year": 1995, "series": "none-2"}),
    ]
}

/// An index of [`books`] with `genre`, `year`, `series` filterable and `year` sortable.
async fn books_index(client: &Client) -> Index {
    let index = client.index("books");
    let settings = Settings::new()
        .with_filterable_attributes(["genre", "year", "series"])
        .with_sortable_attributes(["year"]);
    let task = index
        .set_settings(&settings)
        .await
        .expect("set_settings succeeds");
    task.wait_for_completion(client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    let task = index
        .add_documents(&books(), Some("id"))
        .await
        .expect("add_documents succeeds");
    let task = task
        .wait_for_completion(client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
    index
}

fn hit_ids(results: &SearchResults<Value>) -> Vec<u64> {
    results
        .hits
        .iter()
        .map(|hit| {
            hit.result["id"]
                .as_u64()
                .expect("as_u64 finds a value of that type")
        })
        .collect()
}

#[tokio::test]
async fn words_rule_ranks_documents_holding_every_query_word_first_across_shards() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    // `last` strategy: both words first (only book 1 has "lord" and "rings"), then "lord"
    // alone (book 2); "rings" alone (book 8) is never reached because words are dropped
    // from the end.
    let results = index
        .search()
        .with_query("lord rings")
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&results), vec![1, 2]);
    assert_eq!(results.estimated_total_hits, Some(2));
    // `all`: only the book holding both.
    let results = index
        .search()
        .with_query("lord rings")
        .with_matching_strategy(MatchingStrategies::ALL)
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&results), vec![1]);
}

#[tokio::test]
async fn a_typo_is_tolerated_in_words_of_five_letters_and_not_in_shorter_ones() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    // "hobit" has 5 letters: one typo allowed, it finds "hobbit".
    let results = index
        .search()
        .with_query("hobit")
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&results), vec![3]);
    // "dume" has 4 letters: no typo allowed, and as the last word it is only a prefix,
    // which "dune" does not start with.
    let results = index
        .search()
        .with_query("dume")
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert!(results.hits.is_empty());
    // The last word is a prefix: "neuro" finds "neuromancer".
    let results = index
        .search()
        .with_query("neuro")
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&results), vec![7]);
}

#[tokio::test]
async fn filter_sort_and_page_mode_combine_over_every_shard() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    // Fantasy books sorted by year, newest first: 4 (1977), 1 (1954), 3 (1937).
    let results = index
        .search()
        .with_filter("genre = fantasy")
        .with_sort(&["year:desc"])
        .with_hits_per_page(2)
        .with_page(1)
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&results), vec![4, 1]);
    assert_eq!(results.total_hits, Some(3));
    assert_eq!(results.total_pages, Some(2));
    let second = index
        .search()
        .with_filter("genre = fantasy")
        .with_sort(&["year:desc"])
        .with_hits_per_page(2)
        .with_page(2)
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&second), vec![3]);
    // A placeholder search without sort lists documents in insertion order.
    let all = index
        .search()
        .with_offset(2)
        .with_limit(3)
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&all), vec![3, 4, 5]);
    assert_eq!(all.estimated_total_hits, Some(8));
}

#[tokio::test]
async fn facet_distribution_and_stats_count_every_matching_document() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    let results = index
        .search()
        .with_filter("year > 1950")
        .with_facets(meilisearch_sdk::search::Selectors::Some(&["genre", "year"]))
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    // Books after 1950: 1, 2, 4, 5, 6, 7, 8.
    let distribution = results
        .facet_distribution
        .expect("facet_distribution succeeds");
    let genres: HashMap<String, usize> = [
        ("fantasy", 2),
        ("drama", 1),
        ("science fiction", 3),
        ("essay", 1),
    ]
    .into_iter()
    .map(|(genre, count)| (genre.to_string(), count))
    .collect();
    assert_eq!(distribution["genre"], genres);
    assert_eq!(distribution["year"]["1954"], 2);
    assert_eq!(distribution["year"].len(), 6);
    let stats = results.facet_stats.expect("facet_stats succeeds");
    assert_eq!(stats["year"].min, 1954.0);
    assert_eq!(stats["year"].max, 1995.0);
    assert!(!stats.contains_key("genre"));
}

#[tokio::test]
async fn distinct_keeps_the_best_document_of_each_series_across_shards() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    // Placeholder order is insertion order; the first book of each series stays.
    let results = index
        .search()
        .with_distinct("series")
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(hit_ids(&results), vec![1, 2, 5, 7, 8]);
}

#[tokio::test]
async fn multi_search_answers_each_query_and_federation_merges_by_weighted_score() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    let movies = client.index("movies");
    let task = movies
        .add_documents(
            &[
                json!({"id": 10, "title": "Dune"}),
                json!({"id": 11, "title": "Alien"}),
            ],
            Some("id"),
        )
        .await
        .expect("add_documents succeeds");
    task.wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    let mut books_query = index.search();
    books_query.with_query("dune");
    let mut movies_query = movies.search();
    movies_query.with_query("alien");
    let response = client
        .multi_search()
        .with_search_query(books_query.clone())
        .with_search_query(movies_query.clone())
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert_eq!(response.results.len(), 2);
    assert_eq!(hit_ids(&response.results[0]), vec![5, 6]);
    assert_eq!(response.results[0].index_uid.as_deref(), Some("books"));
    assert_eq!(hit_ids(&response.results[1]), vec![11]);
    // Federated: the movie query weighs 3, so its exact one-word match outranks the books.
    let mut multi = client.multi_search();
    multi
        .with_search_query(books_query)
        .with_search_query_and_weight(movies_query, 3.0);
    let federated = multi
        .with_federation(FederationOptions::default())
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    let order: Vec<(String, u64)> = federated
        .hits
        .iter()
        .map(|hit| {
            let federation = hit
                .federation
                .as_ref()
                .expect("as_ref finds a value of that type");
            (
                federation.index_uid.clone(),
                hit.result["id"]
                    .as_u64()
                    .expect("as_u64 finds a value of that type"),
            )
        })
        .collect();
    assert_eq!(order[0], ("movies".to_string(), 11));
    assert_eq!(order.len(), 3);
    assert_eq!(federated.estimated_total_hits, 3);
}

#[tokio::test]
async fn facet_search_finds_values_by_prefix_and_typo_among_the_search_matches() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    let response = index
        .facet_search("genre")
        .with_facet_query("scien")
        .execute()
        .await
        .expect("execute succeeds");
    assert_eq!(response.facet_hits.len(), 1);
    assert_eq!(response.facet_hits[0].value, "science fiction");
    assert_eq!(response.facet_hits[0].count, 3);
    // "fantazy" (7 bytes) allows one typo: it still finds "fantasy", counted among the
    // books matching `q`.
    let response = index
        .facet_search("genre")
        .with_facet_query("fantazy")
        .with_search_query("lord")
        .execute()
        .await
        .expect("execute succeeds");
    assert_eq!(response.facet_hits.len(), 1);
    assert_eq!(response.facet_hits[0].count, 1);
}

/// The values of a facet search, in order, as `(value, count)`.
fn facet_hits(server: &Server, body: &str) -> Vec<(String, u64)> {
    let response = server.raw(&json_request(
        "POST",
        "/indexes/labels/facet-search",
        Some(MASTER_KEY),
        body,
    ));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["facetHits"]
        .as_array()
        .expect("facetHits is an array")
        .iter()
        .map(|hit| {
            let value = hit["value"].as_str().expect("a string value").to_owned();
            (value, hit["count"].as_u64().expect("a count"))
        })
        .collect()
}

#[tokio::test]
async fn facet_queries_are_compared_without_diacritics_and_in_the_facets_locales() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = client.index("labels");
    let rules = vec![meilisearch_sdk::settings::LocalizedAttributes {
        locales: vec!["swe".to_string()],
        attribute_patterns: vec!["city".to_string()],
    }];
    let settings = Settings::new()
        .with_filterable_attributes(["genre", "city", "place"])
        .with_localized_attributes(rules);
    let task = index
        .set_settings(&settings)
        .await
        .expect("set_settings succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
    let documents = vec![
        json!({"id": 1, "genre": "École", "city": "Ålesund", "place": "Ålesund"}),
        json!({"id": 2, "genre": "ecole", "city": "Alingsås"}),
        json!({"id": 3, "genre": "Écoles", "city": "Ålesund"}),
        json!({"id": 4, "genre": "drama"}),
    ];
    let task = index
        .add_documents(&documents, Some("id"))
        .await
        .expect("add_documents succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
    // "eco" (3 bytes, no typo) is a prefix of every form: diacritics and case are dropped.
    // Values stay apart by their normalized spelling ("ecole" sorts before "e\u{301}cole",
    // both of form "ecole"), then "ecoles".
    assert_eq!(
        facet_hits(&server, r#"{"facetName": "genre", "facetQuery": "eco"}"#),
        vec![
            ("ecole".to_owned(), 1),
            ("École".to_owned(), 1),
            ("Écoles".to_owned(), 1)
        ]
    );
    // "ÉCOLES" forms "ecoles": six bytes allow one typo, which reaches "ecole" too.
    assert_eq!(
        facet_hits(&server, r#"{"facetName": "genre", "facetQuery": "ÉCOLES"}"#),
        vec![
            ("ecole".to_owned(), 1),
            ("École".to_owned(), 1),
            ("Écoles".to_owned(), 1)
        ]
    );
    assert_eq!(
        facet_hits(&server, r#"{"facetName": "genre", "facetQuery": "DRÂ"}"#),
        vec![("drama".to_owned(), 1)]
    );
    // `place` has no locale: "Å" folds to "a" on both sides.
    assert_eq!(
        facet_hits(&server, r#"{"facetName": "place", "facetQuery": "ale"}"#),
        vec![("Ålesund".to_owned(), 1)]
    );
    // `city` is Swedish: "Å" is a letter of its own there, so "ale" (3 bytes, no typo) is
    // no prefix of "ålesund", and "åle" is.
    assert_eq!(
        facet_hits(&server, r#"{"facetName": "city", "facetQuery": "ale"}"#),
        Vec::<(String, u64)>::new()
    );
    assert_eq!(
        facet_hits(&server, r#"{"facetName": "city", "facetQuery": "åle"}"#),
        vec![("Ålesund".to_owned(), 2)]
    );
    assert_eq!(
        facet_hits(
            &server,
            r#"{"facetName": "city", "facetQuery": "åle", "locales": ["swe"]}"#
        ),
        vec![("Ålesund".to_owned(), 2)]
    );
    // Request `locales` that leave none of the field's languages form the query without
    // Swedish rules: "åle" becomes "ale", no prefix of the Swedish form.
    assert_eq!(
        facet_hits(
            &server,
            r#"{"facetName": "city", "facetQuery": "åle", "locales": ["fra"]}"#
        ),
        Vec::<(String, u64)>::new()
    );
}

#[tokio::test]
async fn get_search_gives_the_same_hits_as_post_search() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    books_index(&client).await;
    let post = server.raw(&json_request(
        "POST",
        "/indexes/books/search",
        Some(MASTER_KEY),
        r#"{"q": "the", "filter": "year < 1960", "sort": ["year:asc"], "attributesToRetrieve": ["id", "title"]}"#,
    ));
    let get = server.raw(&common::request(
        "GET",
        "/indexes/books/search?q=the&filter=year%20%3C%201960&sort=year:asc&attributesToRetrieve=id,title",
        Some(MASTER_KEY),
    ));
    assert_eq!(post.status, 200, "{}", post.text());
    assert_eq!(get.status, 200, "{}", get.text());
    assert_eq!(post.json()["hits"], get.json()["hits"]);
    // "the" titles before 1960, oldest first: The Hobbit (1937), then the two of 1954 in
    // ranking order; only `id` and `title` are retrieved.
    let hits = post.json()["hits"].clone();
    assert_eq!(hits[0], json!({"id": 3, "title": "The Hobbit"}));
    assert_eq!(
        hits.as_array()
            .expect("as_array finds a value of that type")
            .len(),
        3
    );
}

#[tokio::test]
async fn bad_search_parameters_are_refused_with_their_codes() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    books_index(&client).await;
    let cases = [
        (
            r#"{"sort": ["genre:asc"]}"#,
            "invalid_search_sort",
            "Index `books`: Attribute `genre` is not sortable. Available sortable attributes are: `year`.",
        ),
        (
            r#"{"facets": ["title"]}"#,
            "invalid_search_facets",
            "Invalid facet distribution: Pattern `title` is not filterable. Available filterable attributes patterns are: `genre, series, year`.",
        ),
        (r#"{"filter": "title = Dune"}"#, "invalid_search_filter", ""),
        (r#"{"limit": "ten"}"#, "invalid_search_limit", ""),
        (
            r#"{"rankingScoreThreshold": 1.5}"#,
            "invalid_search_ranking_score_threshold",
            "Invalid value at `.rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`.",
        ),
        (
            r#"{"matchingStrategy": "some"}"#,
            "invalid_search_matching_strategy",
            "",
        ),
        (r#"{"unknown": 1}"#, "bad_request", ""),
    ];
    for (body, code, message) in cases {
        let response = server.raw(&json_request(
            "POST",
            "/indexes/books/search",
            Some(MASTER_KEY),
            body,
        ));
        assert_eq!(response.status, 400, "{body}: {}", response.text());
        let error = response.json();
        assert_eq!(error["code"], code, "{body}: {error}");
        if !message.is_empty() {
            assert_eq!(error["message"], message, "{body}");
        }
    }
    let missing = server.raw(&json_request(
        "POST",
        "/indexes/nope/search",
        Some(MASTER_KEY),
        "{}",
    ));
    assert_eq!(missing.status, 404);
    let inside_multi = server.raw(&json_request(
        "POST",
        "/multi-search",
        Some(MASTER_KEY),
        r#"{"queries": [{"indexUid": "books"}, {"indexUid": "nope"}]}"#,
    ));
    assert_eq!(inside_multi.status, 400);
    assert_eq!(
        inside_multi.json()["message"],
        "Inside `.queries[1]`: Index `nope` not found."
    );
    let pagination_in_federated = server.raw(&json_request(
        "POST",
        "/multi-search",
        Some(MASTER_KEY),
        r#"{"federation": {}, "queries": [{"indexUid": "books", "limit": 2}]}"#,
    ));
    assert_eq!(pagination_in_federated.status, 400);
    assert_eq!(
        pagination_in_federated.json()["code"],
        "invalid_multi_search_query_pagination"
    );
}

#[tokio::test]
async fn ranking_scores_are_returned_on_request_and_order_the_hits() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    let results = index
        .search()
        .with_query("lord of the rings")
        .with_show_ranking_score(true)
        .with_show_ranking_score_details(true)
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    let scores: Vec<f64> = results
        .hits
        .iter()
        .map(|hit| hit.ranking_score.expect("ranking_score succeeds"))
        .collect();
    assert_eq!(hit_ids(&results)[0], 1);
    assert!(
        scores.windows(2).all(|pair| pair[0] >= pair[1]),
        "{scores:?}"
    );
    assert!(scores.iter().all(|score| (0.0..=1.0).contains(score)));
    let details = results.hits[0]
        .ranking_score_details
        .as_ref()
        .expect("as_ref finds a value of that type");
    assert_eq!(details["words"]["matchingWords"], 4);
    assert_eq!(details["words"]["maxMatchingWords"], 4);
}

#[tokio::test]
async fn hits_are_highlighted_cropped_and_located_as_asked() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    let results = index
        .search()
        .with_query("rings")
        .with_attributes_to_highlight(meilisearch_sdk::search::Selectors::Some(&["title"]))
        .with_attributes_to_crop(meilisearch_sdk::search::Selectors::Some(&[(
            "genre",
            Some(1),
        )]))
        .with_crop_marker("~")
        .with_show_matches_position(true)
        .with_filter("genre = fantasy")
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    let hit = &results.hits[0];
    let formatted = hit
        .formatted_result
        .as_ref()
        .expect("as_ref finds a value of that type");
    assert_eq!(formatted["title"], "The Lord of the <em>Rings</em>");
    // A one-word crop of a one-word value cuts nothing, so no marker.
    assert_eq!(formatted["genre"], "fantasy");
    // Every number becomes a string inside `_formatted`.
    assert_eq!(formatted["id"], "1");
    assert_eq!(formatted["year"], "1954");
    let positions = hit
        .matches_position
        .as_ref()
        .expect("as_ref finds a value of that type");
    // "Rings" starts at byte 16 of "The Lord of the Rings" and is 5 bytes long.
    assert_eq!(positions["title"][0].start, 16);
    assert_eq!(positions["title"][0].length, 5);
}

/// Cities holding the word `city`, with `_geo` points (London's as strings, one without).
fn cities() -> Vec<Value> {
    vec![
        json!({"id": 1, "name": "berlin city", "_geo": {"lat": 52.52, "lng": 13.405}}),
        json!({"id": 2, "name": "lyon city", "_geo": {"lat": 45.764, "lng": 4.8357}}),
        json!({"id": 3, "name": "nowhere city"}),
        json!({"id": 4, "name": "london city", "_geo": {"lat": "51.5072", "lng": "-0.1276"}}),
        json!({"id": 5, "name": "paris city", "_geo": {"lat": 48.8566, "lng": 2.3522}}),
    ]
}

/// Great-circle distance in meters on a sphere of radius 6,371 km (written here from the
/// haversine formula, independently of the server).
fn haversine_meters(from: [f64; 2], to: [f64; 2]) -> f64 {
    let (from_latitude, to_latitude) = (from[0].to_radians(), to[0].to_radians());
    let half_latitude = ((to_latitude - from_latitude) / 2.0).sin();
    let half_longitude = ((to[1] - from[1]).to_radians() / 2.0).sin();
    let inner = half_latitude * half_latitude
        + from_latitude.cos() * to_latitude.cos() * half_longitude * half_longitude;
    2.0 * 6_371_000.0 * inner.sqrt().asin()
}

#[tokio::test]
async fn geo_point_sort_orders_by_distance_and_writes_geo_distance() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = client.index("cities");
    let settings = Settings::new().with_sortable_attributes(["_geo"]);
    index
        .set_settings(&settings)
        .await
        .expect("set_settings succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    let task = index
        .add_documents(&cities(), Some("id"))
        .await
        .expect("add_documents succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
    let paris = [48.8566, 2.3522];
    for q in ["", "city"] {
        let nearest = index
            .search()
            .with_query(q)
            .with_sort(&["_geoPoint(48.8566, 2.3522):asc"])
            .execute::<Value>()
            .await
            .expect("execute succeeds");
        // Paris, London (~344 km), Lyon (~392 km), Berlin (~878 km), then the one without `_geo`.
        assert_eq!(hit_ids(&nearest), vec![5, 4, 2, 1, 3], "q {q:?}");
        for hit in &nearest.hits {
            let geo = &hit.result["_geo"];
            let distance = hit.result.get("_geoDistance");
            if geo.is_null() {
                assert_eq!(distance, None, "a document without `_geo` has no distance");
                continue;
            }
            let coordinate = |value: &Value| {
                value
                    .as_f64()
                    .or_else(|| value.as_str().and_then(|text| text.parse().ok()))
                    .expect("test coordinates are numbers or numeric strings")
            };
            let expected =
                haversine_meters(paris, [coordinate(&geo["lat"]), coordinate(&geo["lng"])]);
            let written = distance
                .and_then(Value::as_f64)
                .expect("`_geoDistance` is a number");
            assert!(
                (written - expected.round()).abs() <= 1.0,
                "{written} vs {expected}"
            );
        }
        let farthest = index
            .search()
            .with_query(q)
            .with_sort(&["_geoPoint(48.8566, 2.3522):desc"])
            .execute::<Value>()
            .await
            .expect("execute succeeds");
        assert_eq!(hit_ids(&farthest), vec![1, 2, 4, 5, 3], "q {q:?}");
    }
    // Without `_geo` among the retrieved attributes, no distance is written.
    let reduced = index
        .search()
        .with_sort(&["_geoPoint(48.8566, 2.3522):asc"])
        .with_attributes_to_retrieve(meilisearch_sdk::search::Selectors::Some(&["id"]))
        .execute::<Value>()
        .await
        .expect("execute succeeds");
    assert!(reduced.hits[0].result.get("_geoDistance").is_none());
    let refusals = [
        (
            r#"{"sort": ["_geoPoint(91, 2):asc"]}"#,
            "Bad latitude `91`. Latitude must be contained between -90 and 90 degrees.",
        ),
        (
            r#"{"sort": ["_geo:asc"]}"#,
            "`_geo` is a reserved keyword and thus can't be used as a sort expression. Use the _geoPoint(latitude, longitude) built-in rule to sort on _geo field coordinates.",
        ),
        (
            r#"{"sort": ["_geoPoint(1 2):asc"]}"#,
            "Invalid syntax for the geo parameter: expected expression formated like `_geoPoint(latitude, longitude)` and ending by `:asc` or `:desc`, found `_geoPoint(1 2)`.",
        ),
    ];
    for (body, message) in refusals {
        let response = server.raw(&json_request(
            "POST",
            "/indexes/cities/search",
            Some(MASTER_KEY),
            body,
        ));
        assert_eq!(response.status, 400, "{body}: {}", response.text());
        let answer = response.json();
        assert_eq!(answer["code"], "invalid_search_sort", "{body}");
        assert_eq!(answer["message"], message, "{body}");
    }
    books_index(&client).await;
    let response = server.raw(&json_request(
        "POST",
        "/indexes/books/search",
        Some(MASTER_KEY),
        r#"{"sort": ["_geoPoint(1, 2):asc"]}"#,
    ));
    assert_eq!(response.status, 400);
    assert_eq!(
        response.json()["message"],
        "Index `books`: Attribute `_geo` is not sortable. Available sortable attributes are: `year`."
    );
}

/// German compound words: charabia splits them only when it analyses the text as German.
fn german_documents() -> Vec<Value> {
    vec![
        json!({"id": 1, "title_de": "Lebensversicherungsgesellschaft"}),
        json!({"id": 2, "title": "Gesellschaft und Versicherung"}),
        json!({"id": 3, "title_de": "Lebensversicherungsgesellschaft Hundehütte"}),
    ]
}

async fn search_ids(index: &Index, q: &str, locales: Option<&[&str]>) -> Vec<u64> {
    let mut query = index.search();
    query.with_query(q);
    if let Some(locales) = locales {
        query.with_locales(locales);
    }
    let mut ids = hit_ids(&query.execute::<Value>().await.expect("execute succeeds"));
    ids.sort_unstable();
    ids
}

#[tokio::test]
async fn localized_attributes_analyse_their_fields_and_queries_in_their_languages() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = client.index("german");
    let task = index
        .add_documents(&german_documents(), Some("id"))
        .await
        .expect("add_documents succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
    // Without rules, charabia does not recognise one long word as German: it stays whole.
    assert_eq!(search_ids(&index, "gesellschaft", None).await, vec![2]);
    let rules = vec![meilisearch_sdk::settings::LocalizedAttributes {
        locales: vec!["de".to_string()],
        attribute_patterns: vec!["*_de".to_string()],
    }];
    let task = index
        .set_localized_attributes(&rules)
        .await
        .expect("set_localized_attributes succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
    // The settings task re-analysed `title_de` as German: its compounds are split.
    assert_eq!(
        search_ids(&index, "gesellschaft", None).await,
        vec![1, 2, 3]
    );
    assert_eq!(search_ids(&index, "hütte", None).await, vec![3]);
    // The query is analysed in the searched fields' languages, or in `locales` when given.
    let compound = "Lebensversicherungsgesellschaft";
    assert_eq!(search_ids(&index, compound, None).await, vec![1, 3]);
    assert_eq!(
        search_ids(&index, compound, Some(&["deu"])).await,
        vec![1, 3]
    );
    assert_eq!(
        search_ids(&index, compound, Some(&["fra"])).await,
        Vec::<u64>::new()
    );
    // Highlighting tokenizes each field in its languages, unless the query gives `locales`.
    let highlighted = |q: &'static str, locales: Option<&'static [&'static str]>| {
        let index = index.clone();
        async move {
            let mut query = index.search();
            query
                .with_query(q)
                .with_attributes_to_highlight(meilisearch_sdk::search::Selectors::All)
                .with_filter("id = 1")
                .with_limit(1);
            if let Some(locales) = locales {
                query.with_locales(locales);
            }
            let results = query.execute::<Value>().await;
            results.expect("execute succeeds").hits[0]
                .formatted_result
                .clone()
                .expect("a highlighted hit has `_formatted`")["title_de"]
                .clone()
        }
    };
    let filterable = index
        .set_filterable_attributes(["id"])
        .await
        .expect("set_filterable_attributes succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(filterable.is_success(), "{filterable:?}");
    assert_eq!(
        highlighted("gesellschaft", None).await,
        "Lebensversicherungs<em>gesellschaft</em>"
    );
    assert_eq!(
        highlighted("versicherungs", Some(&["fra"])).await,
        "Lebensversicherungsgesellschaft"
    );
    // Unknown locales are refused in the body and in the query string.
    let body = server.raw(&json_request(
        "POST",
        "/indexes/german/search",
        Some(MASTER_KEY),
        r#"{"q": "a", "locales": ["en", "xx"]}"#,
    ));
    assert_eq!(body.status, 400, "{}", body.text());
    let error = body.json();
    assert_eq!(error["code"], "invalid_search_locales");
    assert!(
        error["message"]
            .as_str()
            .expect("the message is a string")
            .starts_with("Unknown value `xx` at `.locales[1]`: expected one of `af`, `ak`"),
        "{error}"
    );
    let query_string = server.send("GET", "/indexes/german/search?q=a&locales=en,xx", None);
    assert_eq!(query_string.status, 400, "{}", query_string.text());
    let error = query_string.json();
    assert_eq!(error["code"], "invalid_search_locales");
    assert!(
        error["message"]
            .as_str()
            .expect("the message is a string")
            .starts_with(
                "Invalid value in parameter `locales`: Unsupported locale `xx`, expected one of af, ak, am, ar, az, be, bg, bn,"
            ),
        "{error}"
    );
}

#[tokio::test]
async fn past_the_search_cutoff_hits_come_unranked_with_skipped_details() {
    let server = server();
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = books_index(&client).await;
    let set_cutoff = |cutoff: Option<u64>| {
        let index = index.clone();
        let client = &client;
        async move {
            let task = index
                .set_search_cutoff_ms(cutoff)
                .await
                .expect("set_search_cutoff_ms succeeds")
                .wait_for_completion(client, None, None)
                .await
                .expect("wait_for_completion succeeds");
            assert!(task.is_success(), "{task:?}");
        }
    };
    let ranked = || {
        let index = index.clone();
        async move {
            index
                .search()
                .with_query("rings lord")
                .with_show_ranking_score(true)
                .with_show_ranking_score_details(true)
                .execute::<Value>()
                .await
                .expect("execute succeeds")
        }
    };
    // A budget of 0 ms is spent before the first rule: every matching document (those holding
    // `rings`, as `matchingStrategy: last` keeps) comes back, none ranked.
    set_cutoff(Some(0)).await;
    let degraded = ranked().await;
    let mut ids = hit_ids(&degraded);
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 8]);
    assert_eq!(degraded.estimated_total_hits, Some(2));
    for hit in &degraded.hits {
        assert_eq!(hit.ranking_score, Some(0.0), "{hit:?}");
        assert_eq!(
            hit.ranking_score_details
                .as_ref()
                .map(|details| Value::Object(details.clone().into_iter().collect())),
            Some(json!({"skipped": {"order": 0}})),
            "{hit:?}"
        );
    }
    // The full ranking (here for `distinct`) stops the same way.
    let distinct = server.send(
        "POST",
        "/indexes/books/search",
        Some(&json!({"q": "rings lord", "distinct": "series", "showRankingScoreDetails": true})),
    );
    assert_eq!(distinct.status, 200, "{}", distinct.text());
    let answer = distinct.json();
    let hits = answer["hits"].as_array().expect("hits is an array");
    assert_eq!(hits.len(), 2, "{answer}");
    for hit in hits {
        assert_eq!(
            hit["_rankingScoreDetails"],
            json!({"skipped": {"order": 0}})
        );
    }
    // With the default budget the same query is ranked rule by rule.
    set_cutoff(None).await;
    let full = ranked().await;
    assert_eq!(hit_ids(&full), vec![1, 8]);
    let details = full.hits[0]
        .ranking_score_details
        .as_ref()
        .expect("details were asked for");
    assert_eq!(details["words"]["matchingWords"], 2, "{details:?}");
    assert!(!details.contains_key("skipped"), "{details:?}");
}

/// Searches `q` on `connection` (kept open, so it stays on the core it was balanced to):
/// the status and the hits' ids.
fn search_on(connection: &mut common::Connection, q: &str) -> (u16, Vec<u64>) {
    let body = json!({ "q": q }).to_string();
    connection
        .send(json_request("POST", "/indexes/books/search", Some(MASTER_KEY), &body).as_bytes());
    let response = connection.read_response().expect("read_response succeeds");
    let ids = response.json()["hits"]
        .as_array()
        .map(|hits| hits.iter().filter_map(|hit| hit["id"].as_u64()).collect())
        .unwrap_or_default();
    (response.status, ids)
}

/// An index of one shard is read by the core each connection is on, not only its owner:
/// two connections open at once are balanced onto both cores, and each sees the same hits,
/// the newest commit after a write, and the index gone after its deletion.
#[tokio::test]
async fn a_single_shard_index_is_searched_on_every_core() {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec!["--shards-per-index".to_string(), "1".to_string()],
        ..Options::default()
    });
    let added = server.send("POST", "/indexes/books/documents", Some(&json!(books())));
    assert_eq!(
        server.wait_task(added.json()["taskUid"].clone())["status"],
        "succeeded"
    );
    let mut connections = [
        server.connect().expect("connect succeeds"),
        server.connect().expect("connect succeeds"),
    ];
    // Book 2 holds "lord" as its first word, book 1 as its second (`wordPosition`).
    for connection in &mut connections {
        assert_eq!(search_on(connection, "lord"), (200, vec![2, 1]));
    }
    let later = json!([{"id": 9, "title": "Lord Foul's Bane", "genre": "fantasy"}]);
    let added = server.send("POST", "/indexes/books/documents", Some(&later));
    assert_eq!(
        server.wait_task(added.json()["taskUid"].clone())["status"],
        "succeeded"
    );
    for connection in &mut connections {
        let (status, mut ids) = search_on(connection, "lord");
        ids.sort_unstable();
        assert_eq!((status, ids), (200, vec![1, 2, 9]));
    }
    let deleted = server.send("DELETE", "/indexes/books", None);
    assert_eq!(
        server.wait_task(deleted.json()["taskUid"].clone())["status"],
        "succeeded"
    );
    for connection in &mut connections {
        assert_eq!(search_on(connection, "lord"), (404, Vec::new()));
    }
}
