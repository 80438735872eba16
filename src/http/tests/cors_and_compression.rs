//! CORS (preflight and simple requests) and response compression negotiation.

use std::io::Read;

use super::*;
use crate::http::cors::CORS_VARY;

fn one_answer(request: &str) -> (Answer, RecordingHandler) {
    let handler = RecordingHandler::default();
    let served = serve(vec![send(request)], &handler);
    let mut answers = served.answers();
    assert_eq!(answers.len(), 1, "{request}");
    (answers.remove(0), handler)
}

#[test]
fn preflight_is_answered_without_the_handler() {
    let (answer, handler) = one_answer(
        "OPTIONS /indexes/movies/search HTTP/1.1\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\n\r\n",
    );
    assert_eq!(answer.status, 200);
    assert!(answer.body.is_empty());
    assert_eq!(answer.header("content-length"), Some("0"));
    assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        answer.header("access-control-allow-headers"),
        Some("authorization, content-type")
    );
    assert_eq!(answer.header("access-control-max-age"), Some("86400"));
    assert!(
        answer
            .header("access-control-allow-methods")
            .expect("header succeeds")
            .contains("POST")
    );
    assert_eq!(answer.header("vary"), Some(CORS_VARY));
    assert!(handler.seen.borrow().is_empty());
}

#[test]
fn options_without_requested_method_reaches_the_handler() {
    let (answer, handler) = one_answer("OPTIONS /x HTTP/1.1\r\nOrigin: http://a\r\n\r\n");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
    assert_eq!(handler.seen.borrow()[0].method, Method::Options);
}

#[test]
fn simple_requests_get_the_wildcard_origin_only_with_an_origin() {
    let (with_origin, _) = one_answer("GET /h HTTP/1.1\r\nOrigin: https://app.example\r\n\r\n");
    assert_eq!(with_origin.header("access-control-allow-origin"), Some("*"));
    assert_eq!(with_origin.header("vary"), Some(CORS_VARY));
    let (without_origin, _) = one_answer("GET /h HTTP/1.1\r\n\r\n");
    assert_eq!(without_origin.header("access-control-allow-origin"), None);
    assert_eq!(without_origin.header("vary"), Some(CORS_VARY));
}

fn decode(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut decoded = Vec::new();
    match coding {
        "gzip" => flate2::read::GzDecoder::new(body).read_to_end(&mut decoded),
        "deflate" => flate2::read::ZlibDecoder::new(body).read_to_end(&mut decoded),
        "br" => brotli::Decompressor::new(body, 4096).read_to_end(&mut decoded),
        other => panic!("unexpected coding {other}"),
    }
    .expect("the value is present");
    decoded
}

#[test]
fn answers_are_compressed_with_the_negotiated_coding() {
    let cases = [
        ("gzip", "gzip"),
        ("gzip, deflate, br", "br"),
        ("deflate", "deflate"),
        ("br;q=0.2, gzip;q=0.9", "gzip"),
        ("zstd, deflate;q=0.5", "deflate"),
    ];
    for (accept, expected) in cases {
        let (answer, _) = one_answer(&format!(
            "GET /large/500 HTTP/1.1\r\nAccept-Encoding: {accept}\r\n\r\n"
        ));
        assert_eq!(
            answer.header("content-encoding"),
            Some(expected),
            "{accept}"
        );
        assert_eq!(answer.header_values("vary"), [CORS_VARY, "accept-encoding"]);
        assert_eq!(
            answer.header("content-length"),
            Some(answer.body.len().to_string().as_str())
        );
        assert_eq!(decode(expected, &answer.body), vec![b'a'; 500], "{accept}");
    }
}

#[test]
fn identity_answers_are_left_alone() {
    for request in [
        "GET /large/500 HTTP/1.1\r\n\r\n",
        "GET /large/500 HTTP/1.1\r\nAccept-Encoding: identity\r\n\r\n",
        "GET /large/500 HTTP/1.1\r\nAccept-Encoding: *\r\n\r\n",
        "GET /image HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
        "DELETE /no-content HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
        "GET /empty HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
    ] {
        let (answer, _) = one_answer(request);
        assert_eq!(answer.header("content-encoding"), None, "{request}");
        assert_eq!(answer.header_values("vary"), [CORS_VARY], "{request}");
    }
}

#[test]
fn no_acceptable_coding_is_answered_406_without_the_handler() {
    let (answer, handler) = one_answer(
        "GET /large/10 HTTP/1.1\r\nAccept-Encoding: identity;q=0\r\nOrigin: http://a\r\n\r\n",
    );
    assert_eq!(answer.status, 406);
    assert_eq!(answer.body, b"br, gzip, deflate");
    assert_eq!(answer.header_values("vary"), ["Accept-Encoding"]);
    assert_eq!(answer.header("access-control-allow-origin"), None);
    assert!(handler.seen.borrow().is_empty());
}

#[test]
fn head_answers_announce_the_compressed_length() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "HEAD /large/500 HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\nGET /large/500 HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
        )],
        &handler,
    );
    let answers = parse_answers(&served.output, &[0]);
    assert!(answers[0].body.is_empty());
    assert_eq!(
        answers[0].header("content-length"),
        answers[1].header("content-length")
    );
    assert_eq!(answers[0].header("content-encoding"), Some("gzip"));
}
