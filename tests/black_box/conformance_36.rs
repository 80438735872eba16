//! What clients see where coresearch differed from Meilisearch 1.41 (issue 36, items 7, 9 and
//! 10), each answer checked against Meilisearch's source:
//! - item 7: with a distinct attribute, a document is dropped only when it shares a value with
//!   a document already kept, across shards as within one; `estimatedTotalHits`,
//!   `totalHits`, `facetDistribution` and facet-search counts describe what Meilisearch's
//!   bucket sort leaves (the matches minus the documents sharing a value with a kept one,
//!   plus the kept ones; exact counts go over every match by internal id);
//! - item 10: engine refusals carry the ``Index `uid`: `` prefix where Meilisearch 1.41's
//!   routes put it (search, and task errors: geo arguments found while evaluating a filter)
//!   and not where they do not (sort on the documents routes, facet distribution, facet
//!   search); lists are formatted, sorted and stripped of hidden attributes as Meilisearch's;
//!   document payload errors are positioned as Meilisearch positions them;
//! - item 9: a document array or NDJSON payload whose values Meilisearch's engine cannot read
//!   (a number out of `f64`'s range, a lone UTF-16 surrogate, a value nested 128 levels deep)
//!   is accepted and fails its task with code `internal` and the engine's message, positioned
//!   in the failing value's own text; a JSON payload that is one object is read whole and
//!   refused at upload; the nesting limit applies to each field's value.

use crate::common;

use common::{MASTER_KEY, Server};
use serde_json::{Value, json};

/// `POST /indexes/{index}/documents` with `body` sent as `content_type`.
fn post_documents(
    server: &Server,
    index: &str,
    content_type: &str,
    body: &str,
) -> common::HttpResponse {
    server.raw(&format!(
        "POST /indexes/{index}/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))
}

/// The finished task of an accepted request.
fn finished(server: &Server, response: &common::HttpResponse) -> Value {
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

/// `depth` arrays nested around `1`.
fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// Asserts that `task` failed as Meilisearch's engine fails a document whose value does not
/// parse, with serde_json's `detail`.
fn assert_value_failure(task: &Value, index: &str, detail: &str) {
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["error"],
        json!({
            "message": format!("Index `{index}`: internal: {detail}."),
            "code": "internal",
            "type": "internal",
            "link": "https://docs.meilisearch.com/errors#internal",
        }),
        "{task}"
    );
    assert_eq!(
        task["details"],
        json!({"receivedDocuments": 1, "indexedDocuments": 0})
    );
}

#[test]
fn values_the_engine_cannot_read_are_accepted_and_fail_the_task() {
    let server = Server::start();
    let cases = [
        (
            "range",
            r#"[{"id":1,"n":1e400}]"#.to_string(),
            "number out of range at line 1 column 5",
        ),
        (
            "nested_range",
            r#"[{"id":1,"n":{"b": -1e400}}]"#.to_string(),
            "number out of range at line 1 column 12",
        ),
        (
            "surrogate",
            r#"[{"id":1,"s":"\ud800"}]"#.to_string(),
            "unexpected end of hex escape at line 1 column 8",
        ),
        (
            "deep",
            format!(r#"[{{"id":1,"a":"fine","deep":{}}}]"#, nested(300)),
            "recursion limit exceeded at line 1 column 128",
        ),
    ];
    for (index, body, detail) in cases {
        let task = finished(
            &server,
            &post_documents(&server, index, "application/json", &body),
        );
        assert_value_failure(&task, index, detail);
        let listed = server
            .send("GET", &format!("/indexes/{index}/documents"), None)
            .json();
        assert_eq!(listed["total"], 0, "nothing was indexed: {listed}");
    }
    let ndjson = "{\"id\":1,\"n\":2}\n{\"id\":2,\"n\":1e999}\n";
    let task = finished(
        &server,
        &post_documents(&server, "lines", "application/x-ndjson", ndjson),
    );
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["error"]["message"],
        "Index `lines`: internal: number out of range at line 1 column 5."
    );
    assert_eq!(
        server.send("GET", "/indexes/lines/documents", None).json()["total"],
        0,
        "the batch changes nothing"
    );
}

#[test]
fn the_nesting_limit_applies_to_each_field_value() {
    let server = Server::start();
    // 127 arrays inside a field: the document nests 128 deep, each value stays within 128.
    let body = format!(r#"[{{"id":1,"deep":{}}}]"#, nested(127));
    let task = finished(
        &server,
        &post_documents(&server, "deep", "application/json", &body),
    );
    assert_eq!(task["status"], "succeeded", "{task}");
    let response = server.send("GET", "/indexes/deep/documents/1", None);
    assert_eq!(response.status, 200, "{}", response.text());
    let mut deep = json!(1);
    for _ in 0..127 {
        deep = json!([deep]);
    }
    let expected = json!({"id": 1, "deep": deep});
    assert_eq!(response.text(), expected.to_string());
}

#[test]
fn a_single_object_payload_is_read_whole_at_upload() {
    let server = Server::start();
    let response = post_documents(
        &server,
        "single",
        "application/json",
        r#"{"id":1,"n":1e400}"#,
    );
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "message": "The `json` payload provided is malformed. `Couldn't serialize document value: number out of range at line 1 column 17`.",
            "code": "malformed_payload",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#malformed_payload",
        })
    );
}

#[test]
fn a_key_that_is_no_string_is_refused_where_it_stands_in_its_document() {
    let server = Server::start();
    for (content_type, format, body) in [
        (
            "application/json",
            "json",
            r#"[{"id":1},{"id":2,"\ud800":1}]"#,
        ),
        (
            "application/x-ndjson",
            "ndjson",
            "{\"id\":1}\n{\"id\":2,\"\\ud800\":1}\n",
        ),
    ] {
        let response = post_documents(&server, "keys", content_type, body);
        assert_eq!(response.status, 400, "{}", response.text());
        assert_eq!(
            response.json()["message"],
            format!(
                "The `{format}` payload provided is malformed. `Couldn't serialize document value: unexpected end of hex escape at line 1 column 16`."
            )
        );
    }
}

/// Runs `method path body` and waits for its task to succeed.
fn run(server: &Server, method: &str, path: &str, body: &Value) {
    let task = finished(server, &server.send(method, path, Some(body)));
    assert_eq!(task["status"], "succeeded", "{task}");
}

/// `POST path body`, answered 200.
fn post(server: &Server, path: &str, body: &Value) -> Value {
    let response = server.send("POST", path, Some(body));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

fn hit_ids(answer: &Value) -> Vec<Value> {
    answer["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|hit| hit["id"].clone())
        .collect()
}

/// Groups of three documents over several shards: `a` holds `b`, `b` holds `b` and `c`, `c`
/// holds `c`, ranked a, b, c. `a` is kept, `b` shares `b` with it and is dropped, and `c`
/// shares `c` only with the dropped `b`: it is kept. Sixteen groups put, for some of them,
/// `a` on one shard and `b` and `c` on another, where `b` alone would exclude `c`.
#[test]
fn a_document_sharing_values_only_with_dropped_documents_is_kept() {
    let server = Server::start_with(common::Options {
        extra_arguments: vec![
            "--shards-per-index".into(),
            "4".into(),
            "--documents-per-shard".into(),
            "0".into(),
        ],
        ..common::Options::default()
    });
    let mut documents = Vec::new();
    let mut expected = Vec::new();
    for group in 0..16 {
        documents.push(json!({"id": format!("g{group}a"), "rank": group * 10 + 1, "tags": [format!("b{group}")]}));
        documents.push(json!({"id": format!("g{group}b"), "rank": group * 10 + 2, "tags": [format!("b{group}"), format!("c{group}")]}));
        documents.push(json!({"id": format!("g{group}c"), "rank": group * 10 + 3, "tags": [format!("c{group}")]}));
        expected.push(json!(format!("g{group}a")));
        expected.push(json!(format!("g{group}c")));
    }
    run(
        &server,
        "PATCH",
        "/indexes/chains/settings",
        &json!({"sortableAttributes": ["rank"], "distinctAttribute": "tags"}),
    );
    run(
        &server,
        "POST",
        "/indexes/chains/documents",
        &json!(documents),
    );
    let answer = post(
        &server,
        "/indexes/chains/search",
        &json!({"sort": ["rank:asc"], "limit": 100}),
    );
    assert_eq!(hit_ids(&answer), expected);
    assert_eq!(answer["estimatedTotalHits"], 32, "{answer}");
    // A page in the middle: the pass stops at its last hit's bucket.
    let answer = post(
        &server,
        "/indexes/chains/search",
        &json!({"sort": ["rank:asc"], "offset": 2, "limit": 2}),
    );
    assert_eq!(hit_ids(&answer), expected[2..4].to_vec());
    assert_eq!(
        answer["estimatedTotalHits"], 46,
        "4 kept, 2 dropped of 48: {answer}"
    );
}

/// Documents 0..49, two per product (`2k` and `2k + 1` are product `k`), even ones red and
/// odd ones blue, the distinct attribute `product` and `color` faceted.
fn products(server: &Server) {
    let documents: Vec<Value> = (0..50)
        .map(|id| {
            json!({
                "id": id,
                "product": format!("p{}", id / 2),
                "color": if id % 2 == 0 { "red" } else { "blue" },
            })
        })
        .collect();
    let filterable = json!([{
        "attributePatterns": ["color"],
        "features": {"facetSearch": true, "filter": {"equality": true, "comparison": false}},
    }]);
    run(
        server,
        "PATCH",
        "/indexes/products/settings",
        &json!({"filterableAttributes": filterable, "distinctAttribute": "product"}),
    );
    run(
        server,
        "POST",
        "/indexes/products/documents",
        &json!(documents),
    );
}

#[test]
fn totals_and_facet_counts_describe_what_distinct_leaves() {
    let server = Server::start();
    products(&server);
    let search = |body: Value| post(&server, "/indexes/products/search", &body);
    // The first 20 products are ranked: their second documents leave the count; the last
    // five products are not reached and both of their documents stay.
    let answer = search(json!({"facets": ["color"]}));
    assert_eq!(answer["hits"].as_array().map(Vec::len), Some(20));
    assert_eq!(answer["estimatedTotalHits"], 30, "{answer}");
    assert_eq!(
        answer["facetDistribution"],
        json!({"color": {"blue": 5, "red": 25}})
    );
    // One hit asked: only product 0 is ranked.
    let answer = search(json!({"facets": ["color"], "limit": 1}));
    assert_eq!(answer["estimatedTotalHits"], 49, "{answer}");
    assert_eq!(
        answer["facetDistribution"],
        json!({"color": {"blue": 24, "red": 25}})
    );
    // No hit asked: nothing is ranked, every match counts.
    let answer = search(json!({"facets": ["color"], "limit": 0}));
    assert_eq!(answer["estimatedTotalHits"], 50, "{answer}");
    // An exact count goes over every match.
    let answer = search(json!({"facets": ["color"], "hitsPerPage": 20}));
    assert_eq!(answer["totalHits"], 25, "{answer}");
    assert_eq!(answer["totalPages"], 2, "{answer}");
    assert_eq!(answer["facetDistribution"], json!({"color": {"red": 25}}));
    // The facet search runs its search for 20 hits, or counts exactly when asked to.
    let facet_search = |body: Value| post(&server, "/indexes/products/facet-search", &body);
    let answer = facet_search(json!({"facetName": "color"}));
    assert_eq!(
        answer["facetHits"],
        json!([{"value": "blue", "count": 5}, {"value": "red", "count": 25}])
    );
    let answer = facet_search(json!({"facetName": "color", "exhaustiveFacetCount": true}));
    assert_eq!(answer["facetHits"], json!([{"value": "red", "count": 25}]));
    // A federated search counts and describes what each query's distinct left.
    let answer = post(
        &server,
        "/multi-search",
        &json!({
            "federation": {"facetsByIndex": {"products": ["color"]}},
            "queries": [{"indexUid": "products"}],
        }),
    );
    assert_eq!(answer["estimatedTotalHits"], 30, "{answer}");
    assert_eq!(
        answer["facetsByIndex"]["products"]["distribution"],
        json!({"color": {"blue": 5, "red": 25}})
    );
}

/// An index with `_geo` and `color` filterable, `price` and `size` sortable, and
/// `displayedAttributes` hiding `_geo` and `size`.
fn hidden_fields_index(server: &Server) {
    run(
        server,
        "PATCH",
        "/indexes/geo/settings",
        &json!({
            "filterableAttributes": ["_geo", "color"],
            "sortableAttributes": ["price", "size"],
            "displayedAttributes": ["id", "color", "price"],
        }),
    );
    run(
        server,
        "POST",
        "/indexes/geo/documents",
        &json!([{"id": 1, "_geo": {"lat": 1, "lng": 2}, "color": "red", "price": 3, "size": 4}]),
    );
}

/// `method path body` answered 400 with `code` and `message`.
fn refused(server: &Server, method: &str, path: &str, body: &Value, code: &str, message: &str) {
    let response = server.send(method, path, Some(body));
    assert_eq!(
        response.status,
        400,
        "{method} {path} {body}: {}",
        response.text()
    );
    let error = response.json();
    assert_eq!(error["code"], code, "{error}");
    assert_eq!(error["message"], message, "{error}");
}

#[test]
fn search_refusals_are_worded_as_meilisearch_words_them() {
    let server = Server::start();
    hidden_fields_index(&server);
    let search = "/indexes/geo/search";
    refused(
        &server,
        "POST",
        search,
        &json!({"filter": "_geoRadius(100, 2, 10)"}),
        "invalid_search_filter",
        "Index `geo`: Bad latitude `100`. Latitude must be contained between -90 and 90 degrees.\n12:15 _geoRadius(100, 2, 10)",
    );
    refused(
        &server,
        "POST",
        search,
        &json!({"filter": "_geoBoundingBox([1, 2], [3, 4])"}),
        "invalid_search_filter",
        "Index `geo`: The top latitude `1` is below the bottom latitude `3`.\n29:30 _geoBoundingBox([1, 2], [3, 4])",
    );
    refused(
        &server,
        "POST",
        search,
        &json!({"sort": ["title:asc"]}),
        "invalid_search_sort",
        "Index `geo`: Attribute `title` is not sortable. Available sortable attributes are: `price, <..hidden-attributes>`.",
    );
    refused(
        &server,
        "POST",
        search,
        &json!({"distinct": "price"}),
        "invalid_search_distinct",
        "Index `geo`: Attribute `price` is not filterable and thus, cannot be used as distinct attribute. Available filterable attributes patterns are: `color, <..hidden-attributes>`.",
    );
    refused(
        &server,
        "POST",
        search,
        &json!({"facets": ["size", "price", "color"]}),
        "invalid_search_facets",
        "Invalid facet distribution: Pattern `size` is not filterable. Available filterable attributes patterns are: `_geo, color`.",
    );
    refused(
        &server,
        "POST",
        search,
        &json!({"facets": ["price"]}),
        "invalid_search_facets",
        "Invalid facet distribution: Pattern `price` is not filterable. Available filterable attributes patterns are: `_geo, color`.",
    );
    refused(
        &server,
        "POST",
        "/multi-search",
        &json!({"federation": {"facetsByIndex": {"geo": ["price"]}}, "queries": [{"indexUid": "geo"}]}),
        "invalid_search_facets",
        "Inside `.queries[0]`: Inside `.federation.facetsByIndex.geo`: Invalid facet distribution: Pattern `price` is not filterable. Available filterable attributes patterns are: `_geo, color`.",
    );
}

#[test]
fn facet_search_and_documents_refusals_carry_no_index_prefix() {
    let server = Server::start();
    hidden_fields_index(&server);
    refused(
        &server,
        "POST",
        "/indexes/geo/facet-search",
        &json!({"facetName": "price"}),
        "invalid_facet_search_facet_name",
        "Attribute `price` is not facet-searchable. Available facet-searchable attributes patterns are: `color, <..hidden-attributes>`. To make it facet-searchable add it to the `filterableAttributes` index settings.",
    );
    refused(
        &server,
        "POST",
        "/indexes/geo/facet-search",
        &json!({"facetName": "color", "filter": "price = 3"}),
        "invalid_search_filter",
        "Attribute `price` is not filterable. Available filterable attribute patterns are: `_geo`, `color`.\n1:6 price = 3",
    );
    refused(
        &server,
        "POST",
        "/indexes/geo/documents/fetch",
        &json!({"sort": ["color:asc"]}),
        "invalid_document_sort",
        "Attribute `color` is not sortable. Available sortable attributes are: `price, size`.",
    );
    let response = server.send("GET", "/indexes/geo/documents?sort=color:asc", None);
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json()["message"],
        "Attribute `color` is not sortable. Available sortable attributes are: `price, size`."
    );
}

#[test]
fn a_task_filter_refused_while_evaluated_names_its_index() {
    let server = Server::start();
    hidden_fields_index(&server);
    let response = server.send(
        "POST",
        "/indexes/geo/documents/delete",
        Some(&json!({"filter": "_geoRadius(1, 200, 10)"})),
    );
    let task = finished(&server, &response);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["error"],
        json!({
            "message": "Index `geo`: Bad longitude `200`. Longitude must be contained between -180 and 180 degrees. Hint: try using `-160` instead.\n15:18 _geoRadius(1, 200, 10)",
            "code": "invalid_document_filter",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#invalid_document_filter",
        })
    );
}

/// With `_geo` filterable or sortable, a document whose `_geo` is no point fails its batch
/// as Meilisearch's engine fails it; without, `_geo` is an ordinary field.
#[test]
fn a_geo_field_that_is_no_point_fails_the_task() {
    let server = Server::start();
    run(
        &server,
        "PATCH",
        "/indexes/points/settings",
        &json!({"filterableAttributes": ["_geo"]}),
    );
    let cases = [
        (
            json!({"id": 11, "_geo": "foobar"}),
            "The `_geo` field in the document with the id: `\"11\"` is not an object. Was expecting an object with the `_geo.lat` and `_geo.lng` fields but instead got `\"foobar\"`.",
        ),
        (
            json!({"id": 11, "_geo": {"lat": 1}}),
            "Could not find longitude in the document with the id: `\"11\"`. Was expecting a `_geo.lng` field.",
        ),
        (
            json!({"id": 11, "_geo": {"lat": "doggo", "lng": "doggo"}}),
            "Could not parse latitude nor longitude in the document with the id: `\"11\"`. Was expecting finite numbers but instead got `\"doggo\"` and `\"doggo\"`.",
        ),
    ];
    for (document, message) in cases {
        let response = server.send(
            "POST",
            "/indexes/points/documents",
            Some(&json!([document])),
        );
        let task = finished(&server, &response);
        assert_eq!(task["status"], "failed", "{task}");
        assert_eq!(
            task["error"],
            json!({
                "message": format!("Index `points`: {message}"),
                "code": "invalid_document_geo_field",
                "type": "invalid_request",
                "link": "https://docs.meilisearch.com/errors#invalid_document_geo_field",
            })
        );
    }
    run(
        &server,
        "POST",
        "/indexes/plain/documents",
        &json!([{"id": 11, "_geo": "foobar"}]),
    );
}

/// Found by sending the same requests to coresearch and a Meilisearch 1.41 binary: the index
/// update lists only its two fields, a renamed index's bad uid names no field, the batch
/// deletion reads its body as serde does (positions included), an unknown `GET` search
/// parameter lists the parameters in Meilisearch's order, and a federated query's refusals
/// name the query by its position.
#[test]
fn refusals_found_by_a_side_by_side_comparison_are_worded_as_1_41() {
    let server = Server::start_with(common::Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..common::Options::default()
    });
    run(&server, "POST", "/indexes", &json!({"uid": "movies"}));
    refused(
        &server,
        "PATCH",
        "/indexes/movies",
        &json!({"foo": 1}),
        "bad_request",
        "Unknown field `foo`: expected one of `primaryKey`, `uid`",
    );
    refused(
        &server,
        "PATCH",
        "/indexes/movies",
        &json!({"createdAt": 1}),
        "immutable_index_created_at",
        "Immutable field `createdAt`: expected one of `primaryKey`, `uid`",
    );
    refused(
        &server,
        "PATCH",
        "/indexes/movies",
        &json!({"uid": "bad uid"}),
        "invalid_index_uid",
        "`bad uid` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
    );
    refused(
        &server,
        "POST",
        "/indexes/movies/documents/delete-batch",
        &json!({"ids": [1]}),
        "bad_request",
        "Json deserialize error: invalid type: map, expected a sequence at line 1 column 0",
    );
    let response = server.send("GET", "/indexes/movies/search?foo=1", None);
    assert_eq!(response.status, 400, "{}", response.text());
    let message = response.json()["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    assert!(
        message.starts_with("Unknown parameter `foo`: expected one of `q`, `offset`, `limit`, `page`, `hitsPerPage`, `attributesToRetrieve`, `attributesToCrop`")
            && message.ends_with("`showRankingScore`, `showRankingScoreDetails`, `showPerformanceDetails`"),
        "{message}"
    );
    refused(
        &server,
        "POST",
        "/multi-search",
        &json!({"federation": {}, "queries": [{"indexUid": "movies"}, {"indexUid": "movies", "limit": 3}]}),
        "invalid_multi_search_query_pagination",
        "Inside `.queries[1]`: Using pagination options is not allowed in federated queries.\n - Hint: remove `limit` from the query or remove `federation` from the request\n - Hint: pass `federation.limit` and `federation.offset` for pagination in federated search",
    );
    refused(
        &server,
        "POST",
        "/multi-search",
        &json!({"queries": [{"indexUid": "movies", "federationOptions": {"weight": 1}}]}),
        "invalid_multi_search_federation_options",
        "Inside `.queries[0]`: Using `federationOptions` is not allowed in a non-federated search.\n - Hint: remove `federationOptions` from the query or add `federation` to the request.",
    );
}
