//! An index uid in a path that no index could have answers 400 `invalid_index_uid` on every
//! route naming an index, before the index is looked up (as Meilisearch checks it in each
//! handler), while a valid uid of a missing index answers 404 `index_not_found`; and a swap
//! of no index succeeds (issue 36, item 8).

use crate::common;

use common::{Server, json_request, request};
use serde_json::{Value, json};

const INVALID: &str = "in%20valid";

fn invalid_uid_error() -> Value {
    json!({
        "message": "`in valid` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
        "code": "invalid_index_uid",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#invalid_index_uid",
    })
}

#[test]
fn an_invalid_uid_in_a_path_is_invalid_index_uid_on_every_index_route() {
    let server = Server::start();
    let reads = [
        "",
        "/stats",
        "/settings",
        "/settings/filterable-attributes",
        "/documents",
        "/documents/1",
        "/search",
    ];
    for suffix in reads {
        let path = format!("/indexes/{INVALID}{suffix}");
        let response = server.raw(&request("GET", &path, None));
        assert_eq!(response.status, 400, "GET {path}: {}", response.text());
        assert_eq!(response.json(), invalid_uid_error(), "GET {path}");
        let valid = format!("/indexes/valid{suffix}");
        let response = server.raw(&request("GET", &valid, None));
        assert_eq!(response.status, 404, "GET {valid}: {}", response.text());
        assert_eq!(response.json()["code"], "index_not_found", "GET {valid}");
    }
    for (suffix, body) in [
        ("/search", "{}"),
        ("/facet-search", r#"{"facetName": "genre"}"#),
        ("/documents/fetch", "{}"),
        ("/fields", "{}"),
    ] {
        let path = format!("/indexes/{INVALID}{suffix}");
        let response = server.raw(&json_request("POST", &path, None, body));
        assert_eq!(response.status, 400, "POST {path}: {}", response.text());
        assert_eq!(response.json(), invalid_uid_error(), "POST {path}");
    }
    // A malformed body is found before the uid, as Meilisearch's extractors run first.
    let path = format!("/indexes/{INVALID}/search");
    let response = server.raw(&json_request("POST", &path, None, "{"));
    assert_eq!(response.status, 400);
    assert_eq!(
        response.json()["code"],
        "malformed_payload",
        "{}",
        response.text()
    );
}

#[test]
fn a_swap_of_no_index_succeeds() {
    let server = Server::start();
    let response = server.send("POST", "/swap-indexes", Some(&json!([])));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["details"], json!({"swaps": []}), "{task}");
}

/// An index uid of a swap that is no index uid is refused as Meilisearch 1.50 refuses it:
/// `invalid_swap_indexes`, at the swap's position and the uid's side.
#[test]
fn a_swap_names_its_invalid_uid_by_position_and_side() {
    let server = Server::start();
    for (body, location, uid) in [
        (json!([{"indexes": ["a", "b c"]}]), "[0].indexes[1]", "b c"),
        (
            json!([{"indexes": ["a", "b"]}, {"indexes": ["c d", "e"]}]),
            "[1].indexes[0]",
            "c d",
        ),
    ] {
        let response = server.send("POST", "/swap-indexes", Some(&body));
        assert_eq!(response.status, 400, "{body}: {}", response.text());
        let error = response.json();
        assert_eq!(error["code"], "invalid_swap_indexes", "{error}");
        assert_eq!(
            error["message"],
            format!(
                "Invalid value at `{location}`: `{uid}` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes."
            )
        );
    }
    assert_eq!(server.send("GET", "/tasks", None).json()["total"], 0);
}

/// `GET /documents?ids=` checks each id as `POST /documents/fetch` does, before the index is
/// looked up: 400 `invalid_document_ids` naming the first invalid one by position.
#[test]
fn invalid_ids_of_a_listing_are_invalid_document_ids() {
    let server = Server::start();
    let expected = |position: usize, id: &str| {
        json!({
            "message": format!("In `.ids[{position}]`: Document identifier `\"{id}\"` is invalid. A document identifier can be of type integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes."),
            "code": "invalid_document_ids",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#invalid_document_ids",
        })
    };
    let response = server.raw(&request(
        "GET",
        "/indexes/missing/documents?ids=a,b%20c",
        None,
    ));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.json(), expected(1, "b c"));
    let body = r#"{"ids": ["ok", "no/slash"]}"#;
    let response = server.raw(&json_request(
        "POST",
        "/indexes/missing/documents/fetch",
        None,
        body,
    ));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.json(), expected(1, "no/slash"));
    // Valid ids reach the index look-up.
    let response = server.raw(&request("GET", "/indexes/missing/documents?ids=a,12", None));
    assert_eq!(response.status, 404, "{}", response.text());
}
