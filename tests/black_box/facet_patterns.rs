//! `facets` as patterns, as Meilisearch 1.50 reads them: `info.*` selects the filterable
//! fields nested in `info`, `info` selects itself and everything nested in it, a pattern no
//! filterable rule meets is refused naming it first in order, and `*` still asks for every
//! filterable field as 1.41 did. Each expected answer was read from Meilisearch 1.50 given the
//! same documents and settings (its `*` refusal aside, see docs/compatibility.md).

use crate::common;

use common::Server;
use serde_json::{Value, json};

fn documents() -> Value {
    json!([
        {"id": 1, "genre": "a", "info": {"a": 1, "b": "x"}, "_geo": {"lat": 1, "lng": 2}, "color": "red"},
        {"id": 2, "genre": "b", "info": {"a": 2, "b": "y", "c": {"d": 3}}, "color": "blue"}
    ])
}

fn wait(server: &Server, response: &common::HttpResponse) {
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
}

fn server_with_index() -> Server {
    let server = Server::start();
    let added = server.send("POST", "/indexes/f/documents", Some(&documents()));
    wait(&server, &added);
    let settings = json!({"filterableAttributes": ["genre", "info", "_geo", "color"]});
    let set = server.send("PATCH", "/indexes/f/settings", Some(&settings));
    wait(&server, &set);
    server
}

fn distribution(server: &Server, facets: &Value) -> Value {
    let response = server.send(
        "POST",
        "/indexes/f/search",
        Some(&json!({"facets": facets, "limit": 0})),
    );
    assert_eq!(response.status, 200, "{facets}: {}", response.text());
    response.json()["facetDistribution"].clone()
}

#[test]
fn patterns_select_the_filterable_fields_they_match_and_what_is_nested_in_them() {
    let server = server_with_index();
    let nested = json!({
        "info.a": {"1": 1, "2": 1}, "info.b": {"x": 1, "y": 1}, "info.c": {}, "info.c.d": {"3": 1}
    });
    assert_eq!(distribution(&server, &json!(["info.*"])), nested);
    let mut with_info = nested.clone();
    with_info["info"] = json!({});
    assert_eq!(distribution(&server, &json!(["info"])), with_info);
    assert_eq!(
        distribution(&server, &json!(["info.c"])),
        json!({"info.c": {}, "info.c.d": {"3": 1}})
    );
    assert_eq!(
        distribution(&server, &json!(["_geo"])),
        json!({"_geo": {}, "_geo.lat": {"1": 1}, "_geo.lng": {"2": 1}})
    );
    let mut with_genre = nested.clone();
    with_genre["genre"] = json!({"a": 1, "b": 1});
    assert_eq!(
        distribution(&server, &json!(["genre", "info.*"])),
        with_genre
    );
    let every = distribution(&server, &json!(["*"]));
    let names: Vec<&str> = every
        .as_object()
        .expect("a distribution")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        names,
        [
            "_geo", "_geo.lat", "_geo.lng", "color", "genre", "info", "info.a", "info.b", "info.c",
            "info.c.d"
        ]
    );
    let get = server.send("GET", "/indexes/f/search?facets=info.*&limit=0", None);
    assert_eq!(get.json()["facetDistribution"], nested, "{}", get.text());
    let federated = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {"facetsByIndex": {"f": ["info.*"]}}, "queries": [{"indexUid": "f"}]})),
    );
    assert_eq!(
        federated.json()["facetsByIndex"]["f"]["distribution"],
        nested,
        "{}",
        federated.text()
    );
}

#[test]
fn the_first_pattern_no_filterable_rule_meets_is_refused() {
    let server = server_with_index();
    let available = "Available filterable attributes patterns are: `_geo, color, genre, info`.";
    for (facets, refused) in [
        (json!(["nope"]), "nope"),
        (json!(["nope", "zzz"]), "nope"),
        (json!(["genre", "zzz", "nope.*"]), "zzz"),
        (json!(["g*"]), "g*"),
        (json!(["*r"]), "*r"),
        (json!(["*o*"]), "*o*"),
    ] {
        let response = server.send(
            "POST",
            "/indexes/f/search",
            Some(&json!({"facets": facets})),
        );
        assert_eq!(response.status, 400, "{facets}");
        assert_eq!(
            response.json(),
            json!({
                "message": format!("Invalid facet distribution: Pattern `{refused}` is not filterable. {available}"),
                "code": "invalid_search_facets",
                "type": "invalid_request",
                "link": "https://docs.meilisearch.com/errors#invalid_search_facets"
            }),
            "{facets}"
        );
    }
    let federated = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {"facetsByIndex": {"f": ["x"]}}, "queries": [{"indexUid": "f"}, {"indexUid": "f", "q": "a"}]})),
    );
    assert_eq!(federated.status, 400, "{}", federated.text());
    assert_eq!(
        federated.json()["message"],
        format!(
            "Inside `.queries[0]`: Inside `.federation.facetsByIndex.f`: Invalid facet distribution: Pattern `x` is not filterable. {available}"
        )
    );
    assert_eq!(federated.json()["code"], "invalid_search_facets");
}
