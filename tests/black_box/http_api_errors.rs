//! Raw-HTTP black-box tests of the server skeleton: routing, authentication with a master
//! key, JSON body errors, body framing and encodings, connection handling and CORS.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::io::Write;

use common::{MASTER_KEY, Options, Server, json_request, request};

fn server_with_master_key() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    })
}

#[test]
fn health_answers_available_without_a_key() {
    let server = server_with_master_key();
    let response = server.raw(&request("GET", "/health", None));
    assert_eq!(response.status, 200);
    assert_eq!(response.json(), serde_json::json!({"status": "available"}));
    assert!(
        response
            .header("content-type")
            .expect("header succeeds")
            .starts_with("application/json")
    );
}

#[test]
fn version_reports_the_meilisearch_api_version() {
    let server = server_with_master_key();
    let response = server.raw(&request("GET", "/version", Some(MASTER_KEY)));
    assert_eq!(response.status, 200);
    let body = response.json();
    assert_eq!(body["pkgVersion"], "1.41.0");
    assert!(body["commitSha"].is_string());
    assert!(body["commitDate"].is_string());
    let keys: Vec<&String> = body
        .as_object()
        .expect("as_object finds a value of that type")
        .keys()
        .collect();
    assert_eq!(keys, ["commitSha", "commitDate", "pkgVersion"]);
}

#[test]
fn missing_authorization_header_is_401_with_meilisearch_message() {
    let server = server_with_master_key();
    let response = server.raw(&request("GET", "/version", None));
    assert_eq!(response.status, 401);
    assert_eq!(
        response.text(),
        r#"{"message":"The Authorization header is missing. It must use the bearer authorization method.","code":"missing_authorization_header","type":"auth","link":"https://docs.meilisearch.com/errors#missing_authorization_header"}"#
    );
}

#[test]
fn wrong_key_is_403_invalid_api_key() {
    let server = server_with_master_key();
    let response = server.raw(&request(
        "GET",
        "/experimental-features",
        Some("not-the-key"),
    ));
    assert_eq!(response.status, 403);
    assert_eq!(
        response.json(),
        serde_json::json!({
            "message": "The provided API key is invalid.",
            "code": "invalid_api_key",
            "type": "auth",
            "link": "https://docs.meilisearch.com/errors#invalid_api_key"
        })
    );
}

#[test]
fn without_master_key_every_route_is_open() {
    let server = Server::start();
    let response = server.raw(&request("GET", "/experimental-features", None));
    assert_eq!(response.status, 200);
}

#[test]
fn unknown_path_is_404_and_wrong_method_is_405_with_empty_bodies() {
    let server = Server::start();
    let not_found = server.raw(&request("GET", "/no-such-route", None));
    assert_eq!(not_found.status, 404);
    assert!(not_found.body.is_empty());
    let not_allowed = server.raw(&request("DELETE", "/health", None));
    assert_eq!(not_allowed.status, 405);
    assert!(not_allowed.body.is_empty());
}

#[test]
fn trailing_slash_is_ignored() {
    let server = Server::start();
    let response = server.raw(&request("GET", "/health/", None));
    assert_eq!(response.status, 200);
}

#[test]
fn auth_is_checked_before_the_body() {
    let server = server_with_master_key();
    let response = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        "{oops",
    ));
    assert_eq!(response.status, 401);
}

#[test]
fn malformed_json_is_malformed_payload() {
    let server = Server::start();
    let response = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        "{oops",
    ));
    assert_eq!(response.status, 400);
    let body = response.json();
    assert_eq!(body["code"], "malformed_payload");
    assert!(
        body["message"]
            .as_str()
            .expect("as_str finds a value of that type")
            .starts_with("The json payload provided is malformed. `")
    );
}

#[test]
fn empty_body_is_missing_payload() {
    let server = Server::start();
    let response = server.raw(&json_request("PATCH", "/experimental-features", None, ""));
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["code"], "missing_payload");
    assert_eq!(response.json()["message"], "A json payload is missing.");
}

#[test]
fn missing_and_wrong_content_types_are_415() {
    let server = Server::start();
    let missing = server
        .raw("PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(missing.status, 415);
    assert_eq!(missing.json()["code"], "missing_content_type");
    assert_eq!(
        missing.json()["message"],
        "A Content-Type header is missing. Accepted values for the Content-Type header are: `application/json`"
    );
    let wrong = server.raw(
        "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}",
    );
    assert_eq!(wrong.status, 415);
    assert_eq!(wrong.json()["code"], "invalid_content_type");
    assert_eq!(
        wrong.json()["message"],
        "The Content-Type `text/plain` is invalid. Accepted values for the Content-Type header are: `application/json`"
    );
}

#[test]
fn unknown_field_and_wrong_type_are_bad_request() {
    let server = Server::start();
    let wrong_type = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"metrics": "doggo"}"#,
    ));
    assert_eq!(wrong_type.status, 400);
    assert_eq!(
        wrong_type.json()["message"],
        "Invalid value type at `.metrics`: expected a boolean, but found a string: `\"doggo\"`"
    );
    assert_eq!(wrong_type.json()["code"], "bad_request");
    let unknown = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"doggo": true}"#,
    ));
    assert_eq!(unknown.status, 400);
    assert_eq!(unknown.json()["code"], "bad_request");
    assert!(
        unknown.json()["message"]
            .as_str()
            .expect("as_str finds a value of that type")
            .starts_with("Unknown field `doggo`: expected one of `metrics`, `logsRoute`")
    );
}

#[test]
fn oversized_body_without_content_length_is_413() {
    let server = Server::start_with(Options {
        extra_arguments: vec!["--http-payload-size-limit".into(), "1000".into()],
        ..Options::default()
    });
    let mut connection = server.connect().expect("connect succeeds");
    let chunk = "a".repeat(600);
    let request = format!(
        "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len(),
        chunk.len()
    );
    connection.send(request.as_bytes());
    let response = connection.read_response().expect("read_response succeeds");
    assert_eq!(response.status, 413);
    assert_eq!(response.json()["code"], "payload_too_large");
    assert_eq!(
        response.json()["message"],
        "JSON payload has exceeded limit (1000 bytes)."
    );
}

#[test]
fn oversized_body_with_content_length_is_refused_without_being_read() {
    let server = Server::start_with(Options {
        extra_arguments: vec!["--http-payload-size-limit".into(), "1000".into()],
        ..Options::default()
    });
    let mut connection = server.connect().expect("connect succeeds");
    connection.send(
        b"PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n",
    );
    let response = connection.read_response().expect("read_response succeeds");
    // A known oversized length is a 413 `payload_too_large`, worded as actix words it.
    assert_eq!(response.status, 413);
    assert_eq!(response.json()["code"], "payload_too_large");
    assert_eq!(
        response.json()["message"],
        "JSON payload (5000 bytes) is larger than allowed (limit: 1000 bytes)."
    );
}

#[test]
fn chunked_body_is_decoded() {
    let server = Server::start();
    let body = r#"{"metrics": true}"#;
    let (first, second) = body.split_at(7);
    let request = format!(
        "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n{:x}\r\n{second}\r\n0\r\n\r\n",
        first.len(),
        second.len()
    );
    let response = server.raw(&request);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["metrics"], true);
}

#[test]
fn pipelined_requests_are_answered_in_order_on_one_connection() {
    let server = Server::start();
    let mut connection = server.connect().expect("connect succeeds");
    let pipelined = format!(
        "{}{}{}",
        request("GET", "/health", None),
        request("GET", "/no-such-route", None),
        request("GET", "/experimental-features", None)
    );
    connection.send(pipelined.as_bytes());
    let first = connection.read_response().expect("read_response succeeds");
    let second = connection.read_response().expect("read_response succeeds");
    let third = connection.read_response().expect("read_response succeeds");
    assert_eq!((first.status, second.status, third.status), (200, 404, 200));
    assert_eq!(third.json()["metrics"], false);
}

#[test]
fn keep_alive_connection_serves_many_requests() {
    let server = Server::start();
    let mut connection = server.connect().expect("connect succeeds");
    for _ in 0..50 {
        connection.send(request("GET", "/health", None).as_bytes());
        let response = connection.read_response().expect("read_response succeeds");
        assert_eq!(response.status, 200);
    }
}

#[test]
fn gzip_request_body_is_decompressed() {
    use flate2::Compression;
    use flate2::write::GzEncoder;
    let server = Server::start();
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder
        .write_all(br#"{"network": true}"#)
        .expect("write_all succeeds");
    let compressed = encoder.finish().expect("finish succeeds");
    let mut connection = server.connect().expect("connect succeeds");
    let head = format!(
        "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        compressed.len()
    );
    connection.send(head.as_bytes());
    connection.send(&compressed);
    let response = connection.read_response().expect("read_response succeeds");
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["network"], true);
}

/// A body its `Content-Encoding` cannot decode gets Meilisearch 1.50's words, the decoder's
/// error shown as Rust's `Debug` shows it (each read from 1.50 given the same bytes).
#[test]
fn an_undecodable_body_is_refused_with_meilisearch_words() {
    use flate2::Compression;
    use flate2::write::GzEncoder;
    let server = Server::start();
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder
        .write_all(br#"{"q": "a", "attributesToRetrieve": ["id", "genre", "color"]}"#)
        .expect("write_all succeeds");
    let gzip = encoder.finish().expect("finish succeeds");
    let prefix = "Error that occur during reading payload: payload reached EOF before completing: ";
    for (coding, body, detail) in [
        (
            "gzip",
            b"not gzip at all".to_vec(),
            r#"Some(Custom { kind: InvalidInput, error: "invalid gzip header" })"#,
        ),
        (
            "br",
            b"not gzip at all".to_vec(),
            r#"Some(Custom { kind: InvalidData, error: "Invalid Data" })"#,
        ),
        (
            "deflate",
            b"not gzip at all".to_vec(),
            r#"Some(Custom { kind: InvalidInput, error: "corrupt deflate stream" })"#,
        ),
        (
            "gzip",
            gzip[..gzip.len() / 2].to_vec(),
            r#"Some(Custom { kind: InvalidInput, error: "corrupt gzip stream does not have a matching checksum" })"#,
        ),
    ] {
        let mut connection = server.connect().expect("connect succeeds");
        let head = format!(
            "POST /indexes/any/search HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        connection.send(head.as_bytes());
        connection.send(&body);
        let response = connection.read_response().expect("read_response succeeds");
        assert_eq!(response.status, 400, "{coding}: {}", response.text());
        assert_eq!(
            response.json(),
            serde_json::json!({
                "message": format!("{prefix}{detail}"),
                "code": "bad_request",
                "type": "invalid_request",
                "link": "https://docs.meilisearch.com/errors#bad_request"
            }),
            "{coding}"
        );
    }
}

#[test]
fn gzip_response_when_the_client_accepts_it() {
    use std::io::Read;
    let server = Server::start();
    let response = server
        .raw("GET /experimental-features HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-encoding"), Some("gzip"));
    let mut decoded = String::new();
    flate2::read::GzDecoder::new(&response.body[..])
        .read_to_string(&mut decoded)
        .expect("read_to_string succeeds");
    let body: serde_json::Value = serde_json::from_str(&decoded).expect("from_str succeeds");
    assert_eq!(
        body.as_object()
            .expect("as_object finds a value of that type")
            .len(),
        15
    );
}

#[test]
fn cors_preflight_allows_any_origin_method_and_header() {
    let server = server_with_master_key();
    let response = server.raw(
        "OPTIONS /indexes/movies/search HTTP/1.1\r\nHost: t\r\nOrigin: https://example.com\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\n\r\n",
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert_eq!(response.header("access-control-max-age"), Some("86400"));
    let allowed_methods = response
        .header("access-control-allow-methods")
        .expect("header succeeds")
        .to_ascii_uppercase();
    assert!(allowed_methods.contains("POST"));
    let allowed_headers = response
        .header("access-control-allow-headers")
        .expect("header succeeds")
        .to_ascii_lowercase();
    assert!(allowed_headers.contains("authorization"));
}

#[test]
fn cors_headers_on_a_simple_request_with_origin() {
    let server = Server::start();
    let response =
        server.raw("GET /health HTTP/1.1\r\nHost: t\r\nOrigin: https://example.com\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
}

#[test]
fn expect_continue_gets_100_before_the_body() {
    let server = Server::start();
    let mut connection = server.connect().expect("connect succeeds");
    let body = r#"{"multimodal": true}"#;
    let head = format!(
        "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    connection.send(head.as_bytes());
    let interim = connection.read_response().expect("read_response succeeds");
    assert_eq!(interim.status, 100);
    connection.send(body.as_bytes());
    let response = connection.read_response().expect("read_response succeeds");
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["multimodal"], true);
}

#[test]
fn production_without_a_long_master_key_refuses_to_start() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .args(["--env", "production", "--master-key", "short", "--db-path"])
        .arg(scratch.path().join("data.ms"))
        .args(["--http-addr", "127.0.0.1:0"])
        .env_remove("MEILI_MASTER_KEY")
        .output()
        .expect("output succeeds");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("16 bytes"), "{stderr}");
}

/// `HEAD` is no `GET`: Meilisearch's routes are guarded by method, so a `HEAD` on any
/// route's path is 405 with an empty body, and on an unknown path 404.
#[test]
fn head_on_a_route_is_method_not_allowed() {
    let server = Server::start();
    for path in [
        "/health",
        "/version",
        "/indexes",
        "/indexes/movies/documents",
    ] {
        let response = server.raw(&format!(
            "HEAD {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        ));
        assert_eq!(response.status, 405, "HEAD {path}");
        assert!(response.body.is_empty(), "HEAD {path}");
    }
    let response = server.raw("HEAD /nowhere HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(response.status, 404);
}

/// An unknown `Content-Encoding` is read as identity, as actix reads it for Meilisearch: the
/// body is decoded as sent (here a search reaching the index look-up).
#[test]
fn an_unknown_content_encoding_is_read_as_identity() {
    let server = Server::start();
    for coding in ["zstd", "foo"] {
        let body = r#"{"q": "carol"}"#;
        let response = server.raw(&format!(
            "POST /indexes/missing/search HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        assert_eq!(response.status, 404, "{coding}: {}", response.text());
        assert_eq!(response.json()["code"], "index_not_found", "{coding}");
    }
}
