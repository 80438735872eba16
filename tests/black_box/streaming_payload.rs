//! Document payloads streamed to the update file: every framing (`Content-Length`, chunked)
//! and every content coding (identity, gzip, deflate, br) is stored and indexed; a payload over
//! `--http-payload-size-limit` (announced, streamed, or only once decoded) answers 413
//! `payload_too_large` and leaves no task and no file; malformed and empty payloads keep
//! Meilisearch's request-time errors and leave no file either.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::{Options, Server, request};

/// The payload limit the servers of these tests run with.
const LIMIT_BYTES: usize = 4096;
/// Pieces a chunked body is cut into.
const CHUNK_BYTES: usize = 700;

/// Encodes a body for a `Content-Encoding`.
type Encoder = fn(&[u8]) -> Vec<u8>;

fn limited_server() -> Server {
    Server::start_with(Options {
        extra_arguments: vec!["--http-payload-size-limit".into(), LIMIT_BYTES.to_string()],
        ..Options::default()
    })
}

fn ndjson(first_id: usize, count: usize) -> Vec<u8> {
    (first_id..first_id + count)
        .map(|id| format!("{{\"id\":{id},\"title\":\"document number {id}\"}}\n"))
        .collect::<String>()
        .into_bytes()
}

/// A chunked `POST /indexes/streamed/documents` of `body`, sent with `encoding`.
fn chunked_request(body: &[u8], content_type: &str, encoding: Option<&str>) -> Vec<u8> {
    let encoding = encoding
        .map(|name| format!("Content-Encoding: {name}\r\n"))
        .unwrap_or_default();
    let mut request = format!(
        "POST /indexes/streamed/documents HTTP/1.1\r\nHost: t\r\nContent-Type: {content_type}\r\n{encoding}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    for piece in body.chunks(CHUNK_BYTES) {
        request.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        request.extend_from_slice(piece);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    request
}

fn send(server: &Server, bytes: &[u8]) -> common::HttpResponse {
    let mut connection = server.connect().expect("connect succeeds");
    connection.send(bytes);
    connection.read_response().expect("read_response succeeds")
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).expect("gzip takes bytes");
    encoder.finish().expect("gzip finishes")
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).expect("zlib takes bytes");
    encoder.finish().expect("zlib finishes")
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let mut output = Vec::new();
    {
        let mut encoder = brotli::CompressorWriter::new(&mut output, 4096, 5, 22);
        encoder.write_all(data).expect("brotli takes bytes");
    }
    output
}

fn wait_task(server: &Server, uid: u64) -> serde_json::Value {
    for _ in 0..1000 {
        let task = server
            .raw(&request("GET", &format!("/tasks/{uid}"), None))
            .json();
        if matches!(task["status"].as_str(), Some("succeeded" | "failed")) {
            return task;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("task {uid} did not finish");
}

/// The update files left in the data directory, after the server had time to remove the
/// ones it discards.
fn update_files(server: &Server) -> Vec<String> {
    std::thread::sleep(Duration::from_millis(200));
    let directory = server.data_directory.join("update_files");
    let mut names: Vec<String> = std::fs::read_dir(&directory)
        .expect("the update files directory exists")
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn task_total(server: &Server) -> serde_json::Value {
    server.raw(&request("GET", "/tasks?limit=1", None)).json()["total"].clone()
}

#[test]
fn every_framing_and_content_coding_is_streamed_and_indexed() {
    let server = limited_server();
    let mut expected = 0;
    let encodings: [(Option<&str>, Encoder); 4] = [
        (None, <[u8]>::to_vec),
        (Some("gzip"), gzip),
        (Some("deflate"), deflate),
        (Some("br"), brotli),
    ];
    for (round, (encoding, encode)) in encodings.into_iter().enumerate() {
        let documents = ndjson(round * 100, 40);
        assert!(documents.len() < LIMIT_BYTES);
        let body = encode(&documents);
        let response = send(
            &server,
            &chunked_request(&body, "application/x-ndjson", encoding),
        );
        assert_eq!(response.status, 202, "{encoding:?}: {}", response.text());
        let uid = response.json()["taskUid"].as_u64().expect("a task uid");
        let task = wait_task(&server, uid);
        assert_eq!(task["status"], "succeeded", "{encoding:?}: {task}");
        assert_eq!(task["details"]["receivedDocuments"], 40);
        expected += 40;
    }
    let json_array = br#"[{"id": "a", "n": 1}, {"id": "b", "n": 2}]"#;
    let response = server.raw(&format!(
        "POST /indexes/streamed/documents HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        json_array.len(),
        String::from_utf8_lossy(json_array)
    ));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = wait_task(&server, response.json()["taskUid"].as_u64().expect("uid"));
    assert_eq!(task["status"], "succeeded", "{task}");
    expected += 2;
    let listing = server
        .raw(&request("GET", "/indexes/streamed/documents?limit=1", None))
        .json();
    assert_eq!(listing["total"], expected);
    assert!(
        update_files(&server).is_empty(),
        "finished tasks keep no file"
    );
}

#[test]
fn payloads_over_the_limit_answer_413_and_leave_no_task_and_no_file() {
    let server = limited_server();
    let too_large = ndjson(0, 200);
    assert!(too_large.len() > LIMIT_BYTES);
    let message = format!(
        "The provided payload reached the size limit. The maximum accepted payload size is {}.",
        "4 KiB"
    );
    // Streamed (chunked): found while reading.
    let response = send(
        &server,
        &chunked_request(&too_large, "application/x-ndjson", None),
    );
    assert_eq!(response.status, 413, "{}", response.text());
    assert_eq!(response.json()["code"], "payload_too_large");
    assert_eq!(response.json()["message"], message);
    // Small on the wire, too large once decoded.
    let response = send(
        &server,
        &chunked_request(&gzip(&too_large), "application/x-ndjson", Some("gzip")),
    );
    assert_eq!(response.status, 413, "{}", response.text());
    assert_eq!(response.json()["code"], "payload_too_large");
    // Announced by Content-Length: refused before reading.
    let response = send(
        &server,
        format!(
            "POST /indexes/streamed/documents HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n",
            too_large.len()
        )
        .as_bytes(),
    );
    assert_eq!(response.status, 413, "{}", response.text());
    assert_eq!(response.json()["message"], message);
    assert_eq!(task_total(&server), 0);
    assert!(update_files(&server).is_empty(), "no upload is left behind");
}

#[test]
fn malformed_and_empty_streamed_payloads_keep_meilisearch_errors_and_leave_no_file() {
    let server = limited_server();
    let malformed = b"{\"id\": 1}\n{\"id\": 2,}\n".to_vec();
    let response = send(
        &server,
        &chunked_request(&malformed, "application/x-ndjson", None),
    );
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.json()["code"], "malformed_payload");
    assert_eq!(
        response.json()["message"],
        // Meilisearch scans each line as a raw value (serde's `ignore_value`), which reads the
        // comma as the start of a key.
        "The `ndjson` payload provided is malformed. `Couldn't serialize document value: key must be a string at line 2 column 10`."
    );
    let response = send(&server, &chunked_request(b"", "application/x-ndjson", None));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.json()["code"], "missing_payload");
    assert_eq!(response.json()["message"], "A ndjson payload is missing.");
    let response = send(
        &server,
        &chunked_request(b"not gzip at all", "application/x-ndjson", Some("gzip")),
    );
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(task_total(&server), 0);
    assert!(update_files(&server).is_empty(), "no upload is left behind");
}

/// Peak resident memory of process `pid`, in bytes (`VmHWM`).
fn peak_resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status readable");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM is reported");
    kib * 1024
}

/// Zeros that decode to `decoded_bytes`, as `coding` encodes them (a few kB on the wire).
fn bomb(coding: &str, decoded_bytes: usize) -> Vec<u8> {
    let zeros = vec![0u8; 1 << 20];
    let mut output = Vec::new();
    match coding {
        "br" => {
            let mut encoder = brotli::CompressorWriter::new(&mut output, 4096, 5, 24);
            for _ in 0..decoded_bytes / zeros.len() {
                encoder.write_all(&zeros).expect("brotli takes bytes");
            }
        }
        _ => {
            let mut encoder =
                flate2::write::GzEncoder::new(&mut output, flate2::Compression::best());
            for _ in 0..decoded_bytes / zeros.len() {
                encoder.write_all(&zeros).expect("gzip takes bytes");
            }
            encoder.finish().expect("gzip finishes");
        }
    }
    output
}

/// Decompression bombs (issue 36, item 2): a body of a few kB that inflates to 512 MiB is
/// refused with 413 at the payload limit, whether streamed into an upload (documents) or read
/// whole (a search), and the server never holds the inflated body: its peak memory stays far
/// below the bomb's size.
#[test]
fn decompression_bombs_stop_at_the_limit_without_inflating_in_memory() {
    const BOMB_DECODED_BYTES: usize = 512 << 20;
    /// Far below the bomb's size, far above the server's own needs.
    const PEAK_RESIDENT_BYTES_MAX: u64 = 160 << 20;
    let server = Server::start_with(Options {
        extra_arguments: vec!["--http-payload-size-limit".into(), "1MB".into()],
        ..Options::default()
    });
    for coding in ["br", "gzip"] {
        let body = bomb(coding, BOMB_DECODED_BYTES);
        assert!(body.len() < 1 << 20, "{coding}: {} bytes", body.len());
        let streamed = chunked_request(&body, "application/x-ndjson", Some(coding));
        let response = send(&server, &streamed);
        assert_eq!(response.status, 413, "{coding}: {}", response.text());
        assert_eq!(response.json()["code"], "payload_too_large");
        let mut whole = format!(
            "POST /indexes/streamed/search HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        whole.extend_from_slice(&body);
        let response = send(&server, &whole);
        assert_eq!(response.status, 413, "{coding}: {}", response.text());
        assert_eq!(response.json()["code"], "payload_too_large");
    }
    let peak = peak_resident_bytes(server.pid());
    assert!(
        peak < PEAK_RESIDENT_BYTES_MAX,
        "peak resident memory {} MiB",
        peak >> 20
    );
    assert_eq!(task_total(&server), 0);
    assert!(update_files(&server).is_empty(), "no upload is left behind");
}

/// A document payload whose compression does not decode is answered as Meilisearch 1.50
/// answers it on the document routes, a payload cut short, whether it is streamed or sent
/// whole, and leaves no task and no upload.
#[test]
fn a_corrupt_compressed_document_payload_is_an_incomplete_payload() {
    let server = limited_server();
    let garbage = b"garbage, not compressed at all".to_vec();
    for coding in ["gzip", "br", "deflate"] {
        let streamed = chunked_request(&garbage, "application/x-ndjson", Some(coding));
        let mut whole = format!(
            "POST /indexes/streamed/documents HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            garbage.len()
        )
        .into_bytes();
        whole.extend_from_slice(&garbage);
        for request in [streamed, whole] {
            let response = send(&server, &request);
            assert_eq!(response.status, 400, "{coding}: {}", response.text());
            let error = response.json();
            assert_eq!(error["code"], "bad_request", "{coding}: {error}");
            assert_eq!(
                error["message"], "The provided payload is incomplete and cannot be parsed",
                "{coding}"
            );
        }
    }
    assert_eq!(task_total(&server), 0);
    assert!(update_files(&server).is_empty(), "no upload is left behind");
}
