//! The `/logs/*` routes against the real binary: the `logsRoute` gate, Meilisearch's body
//! errors, a stream that carries the lines of requests and tasks as they happen (human,
//! JSON and profile modes, filtered by target), one stream at a time, the route freed when
//! a stream is deleted or its client leaves, and the stderr filter changed at run time.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{MASTER_KEY, Options, Server, json_request, request};
use serde_json::{Value, json};

/// How long a test waits for a line to arrive on a stream or in stderr.
const LINE_WAIT: Duration = Duration::from_secs(15);
/// How long one read of a stream waits before the test looks at what it has.
const READ_SLICE: Duration = Duration::from_millis(100);

fn server(enabled: bool) -> Server {
    let extra_arguments = if enabled {
        vec!["--experimental-enable-logs-route".to_owned()]
    } else {
        Vec::new()
    };
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments,
        ..Options::default()
    })
}

fn feature_not_enabled() -> Value {
    json!({
        "message": "Modifying logs through the `/logs/*` routes requires enabling the `logs route` experimental feature. See https://github.com/orgs/meilisearch/discussions/721",
        "code": "feature_not_enabled",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#feature_not_enabled"
    })
}

/// Text without its ANSI color escapes (the human mode colors its lines, as Meilisearch's).
fn plain(text: &str) -> String {
    let mut plain = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('\u{1b}') {
        plain.push_str(&rest[..start]);
        let end = rest[start..]
            .find('m')
            .map_or(rest.len(), |end| start + end + 1);
        rest = &rest[end..];
    }
    plain.push_str(rest);
    plain
}

/// A `/logs/stream` response being read: its head, then its chunks as they come.
struct LogReader {
    stream: TcpStream,
    buffer: Vec<u8>,
    body: Vec<u8>,
    ended: bool,
    head: String,
}

impl LogReader {
    /// Sends `POST /logs/stream` with `body`; `Err` holds the answer when it is not a
    /// stream (an error).
    fn open(server: &Server, body: &Value) -> Result<LogReader, common::HttpResponse> {
        let mut stream = TcpStream::connect(server.address).expect("connect succeeds");
        let raw = json_request("POST", "/logs/stream", Some(MASTER_KEY), &body.to_string());
        stream
            .write_all(raw.as_bytes())
            .expect("write_all succeeds");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("set_read_timeout succeeds");
        let mut buffer = Vec::new();
        let head_end = loop {
            if let Some(position) = find(&buffer, b"\r\n\r\n") {
                break position + 4;
            }
            let mut chunk = [0u8; 4096];
            let read = stream.read(&mut chunk).expect("the head arrives");
            assert!(read > 0, "closed before the head");
            buffer.extend_from_slice(&chunk[..read]);
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
        if !head.starts_with("HTTP/1.1 200") {
            return Err(error_answer(
                &mut stream,
                &head,
                buffer[head_end..].to_vec(),
            ));
        }
        stream
            .set_read_timeout(Some(READ_SLICE))
            .expect("set_read_timeout succeeds");
        Ok(LogReader {
            stream,
            buffer: buffer[head_end..].to_vec(),
            body: Vec::new(),
            ended: false,
            head,
        })
    }

    /// Reads what arrived within one slice and decodes the complete chunks.
    fn pump(&mut self) {
        let mut chunk = [0u8; 64 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => self.ended = true,
            Ok(read) => self.buffer.extend_from_slice(&chunk[..read]),
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(error) => panic!("reading the stream failed: {error}"),
        }
        while let Some(line_end) = find(&self.buffer, b"\r\n") {
            let size_text = String::from_utf8_lossy(&self.buffer[..line_end]).to_string();
            let size = usize::from_str_radix(size_text.trim(), 16).expect("a chunk size");
            if self.buffer.len() < line_end + 2 + size + 2 {
                return;
            }
            if size == 0 {
                self.ended = true;
                self.buffer.clear();
                return;
            }
            let start = line_end + 2;
            self.body
                .extend_from_slice(&self.buffer[start..start + size]);
            self.buffer.drain(..start + size + 2);
        }
    }

    /// The body so far as text.
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }

    /// Reads until `wanted` holds for the (color-free) text; panics after [`LINE_WAIT`].
    fn wait_for(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let text = plain(&self.text());
            if wanted(&text) {
                return text;
            }
            assert!(
                !self.ended && started.elapsed() < LINE_WAIT,
                "{what} never came: {text}"
            );
            self.pump();
        }
    }

    /// Reads until the last chunk; panics after [`LINE_WAIT`].
    fn wait_for_end(&mut self) {
        let started = Instant::now();
        while !self.ended {
            assert!(started.elapsed() < LINE_WAIT, "the stream did not end");
            self.pump();
        }
    }
}

/// The rest of an answer that is not a stream: its body, by its `content-length`.
fn error_answer(stream: &mut TcpStream, head: &str, mut body: Vec<u8>) -> common::HttpResponse {
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .expect("a status");
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .and_then(|length| length.trim().parse().ok())
        .expect("an error answer has a content-length");
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let read = stream.read(&mut chunk).expect("the body arrives");
        assert!(read > 0, "closed before the body");
        body.extend_from_slice(&chunk[..read]);
    }
    common::HttpResponse {
        status,
        headers: Vec::new(),
        body,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn create_index(server: &Server, uid: &str) {
    let response = server.send("POST", "/indexes", Some(&json!({"uid": uid})));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
}

#[test]
fn every_logs_route_needs_the_feature() {
    let server = server(false);
    let gated = [
        json_request("POST", "/logs/stream", Some(MASTER_KEY), "{}"),
        request("DELETE", "/logs/stream", Some(MASTER_KEY)),
        json_request("POST", "/logs/stderr", Some(MASTER_KEY), "{}"),
    ];
    for raw in &gated {
        let response = server.raw(raw);
        assert_eq!(response.status, 400, "{raw}");
        assert_eq!(response.json(), feature_not_enabled(), "{raw}");
    }
    let features = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"logsRoute": true})),
    );
    assert_eq!(features.json()["logsRoute"], true);
    let deleted = server.raw(&gated[1]);
    assert_eq!(deleted.status, 204, "{}", deleted.text());
    let stderr = server.raw(&json_request(
        "POST",
        "/logs/stderr",
        Some(MASTER_KEY),
        r#"{"target": "coresearch=warn"}"#,
    ));
    assert_eq!(stderr.status, 204, "{}", stderr.text());
    let mut reader = LogReader::open(&server, &json!({})).expect("a stream once enabled");
    assert!(
        reader.head.contains("transfer-encoding: chunked"),
        "{}",
        reader.head
    );
    assert!(
        reader.head.contains("x-accel-buffering: no"),
        "{}",
        reader.head
    );
    server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"logsRoute": false})),
    );
    for raw in &gated {
        assert_eq!(server.raw(raw).json(), feature_not_enabled(), "{raw}");
    }
    reader.pump();
}

#[test]
fn bodies_are_refused_as_meilisearch_refuses_them_before_the_feature_check() {
    let server = server(false);
    let cases = [
        (
            json!({"target": true}),
            "Invalid value type at `.target`: expected a string, but found a boolean: `true`",
            "bad_request",
        ),
        (
            json!({"target": []}),
            "Invalid value type at `.target`: expected a string, but found an array: `[]`",
            "bad_request",
        ),
        (
            json!({"target": ""}),
            "Invalid value at `.target`: Empty string is not a valid target. If you want to get no logs use `OFF`. Usage: `info`, `meilisearch=info`, or you can write multiple filters in one target: `index_scheduler=info,milli=trace`",
            "bad_request",
        ),
        (
            json!({"target": "=="}),
            "Invalid value at `.target`: invalid filter directive: too many '=' in filter directive, expected 0 or 1",
            "bad_request",
        ),
        (
            json!({"mode": true}),
            "Invalid value type at `.mode`: expected a string, but found a boolean: `true`",
            "bad_request",
        ),
        (
            json!({"mode": "tamo"}),
            "Unknown value `tamo` at `.mode`: expected one of `human`, `json`, `profile`",
            "bad_request",
        ),
        (
            json!({"profileMemory": "tamo"}),
            "Invalid value type at `.profileMemory`: expected a boolean, but found a string: `\"tamo\"`",
            "bad_request",
        ),
        (
            json!({"profileMemory": ["hello", "kefir"]}),
            "Invalid value type at `.profileMemory`: expected a boolean, but found an array: `[\"hello\",\"kefir\"]`",
            "bad_request",
        ),
        (
            json!({"profileMemory": true}),
            "Invalid value: `profile_memory` can only be used while profiling code and is not compatible with the Human mode.",
            "invalid_settings_typo_tolerance",
        ),
        (
            json!({"mode": "json", "profileMemory": true}),
            "Invalid value: `profile_memory` can only be used while profiling code and is not compatible with the Json mode.",
            "invalid_settings_typo_tolerance",
        ),
        (
            json!({"mode": "fmt", "profileMemory": true}),
            "Unknown value `fmt` at `.mode`: expected one of `human`, `json`, `profile`",
            "bad_request",
        ),
        (
            json!({"targets": "info"}),
            "Unknown field `targets`: did you mean `target`? expected one of `target`, `mode`, `profileMemory`",
            "bad_request",
        ),
    ];
    for (body, message, code) in cases {
        let response = server.send("POST", "/logs/stream", Some(&body));
        assert_eq!(response.status, 400, "{body}");
        assert_eq!(
            response.json(),
            json!({
                "message": message,
                "code": code,
                "type": "invalid_request",
                "link": format!("https://docs.meilisearch.com/errors#{code}"),
            }),
            "{body}"
        );
    }
    let response = server.send("POST", "/logs/stderr", Some(&json!({"target": "=="})));
    assert_eq!(response.status, 400);
    assert_eq!(
        response.json()["message"],
        "Invalid value at `.target`: invalid filter directive: too many '=' in filter directive, expected 0 or 1"
    );
    let response = server.send("POST", "/logs/stderr", Some(&json!({"mode": "json"})));
    assert_eq!(
        response.json()["message"],
        "Unknown field `mode`: expected one of `target`"
    );
    // A valid body passes the decoding and meets the gate.
    let response = server.send(
        "POST",
        "/logs/stream",
        Some(&json!({"mode": "profile", "profileMemory": true})),
    );
    assert_eq!(response.json(), feature_not_enabled());
}

#[test]
fn a_stream_carries_request_and_task_lines_until_deleted_and_one_runs_at_a_time() {
    let server = server(true);
    let mut reader =
        LogReader::open(&server, &json!({"mode": "human", "target": "info"})).expect("a stream");
    assert!(
        reader.head.contains("transfer-encoding: chunked"),
        "{}",
        reader.head
    );
    create_index(&server, "movies");
    let text = reader.wait_for("the batch and request lines", |text| {
        text.contains("batch finished") && text.contains("path=/indexes ")
    });
    assert!(
        text.contains(" INFO coresearch::routes: request core="),
        "{text}"
    );
    assert!(
        text.contains("method=POST path=/indexes status=202"),
        "{text}"
    );
    assert!(
        !text.contains("DEBUG"),
        "the target keeps INFO and above: {text}"
    );

    let second = LogReader::open(&server, &json!({}))
        .err()
        .expect("a second stream is refused");
    assert_eq!(second.status, 400);
    assert_eq!(
        second.json(),
        json!({
            "message": "The `/logs/stream` route is currently in use by someone else.",
            "code": "bad_request",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#bad_request"
        })
    );

    let deleted = server.send("DELETE", "/logs/stream", None);
    assert_eq!(deleted.status, 204);
    reader.wait_for_end();

    // The route is free again; a client that leaves frees it too.
    let leaving = LogReader::open(&server, &json!({})).expect("the route is free after DELETE");
    drop(leaving);
    let started = Instant::now();
    let mut last = loop {
        match LogReader::open(&server, &json!({"target": "coresearch::routes=info"})) {
            Ok(reader) => break reader,
            Err(response) => {
                assert!(
                    started.elapsed() < LINE_WAIT,
                    "the route stayed taken after its client left: {}",
                    response.text()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    server.send("GET", "/indexes/movies", None);
    let text = last.wait_for("the request line", |text| {
        text.contains("path=/indexes/movies status=200")
    });
    assert!(!text.contains("batch"), "{text}");
}

#[test]
fn a_json_stream_keeps_only_the_targets_it_asked_for() {
    let server = server(true);
    let mut reader = LogReader::open(
        &server,
        &json!({"mode": "json", "target": "coresearch::tasks=info"}),
    )
    .expect("a stream");
    create_index(&server, "books");
    reader.wait_for("the batch lines", |text| text.contains("batch finished"));
    server.send("DELETE", "/logs/stream", None);
    reader.wait_for_end();
    let text = reader.text();
    for line in text.lines() {
        let event: Value = serde_json::from_str(line).expect("one JSON object per line");
        let target = event["target"].as_str().expect("a target");
        assert!(target.starts_with("coresearch::tasks"), "{line}");
        assert!(["INFO", "WARN", "ERROR"].contains(&event["level"].as_str().unwrap_or("")));
    }
    assert!(
        text.lines()
            .any(|line| line.contains("\"message\":\"batch finished\"")),
        "{text}"
    );
}

#[test]
fn a_profile_stream_sends_trace_entries_that_trace_tools_read() {
    let server = server(true);
    let mut reader = LogReader::open(
        &server,
        &json!({"mode": "profile", "target": "coresearch=trace"}),
    )
    .expect("a stream");
    create_index(&server, "profiled");
    reader.wait_for("an event entry", |text| text.contains("{\"Event\":"));
    server.send("DELETE", "/logs/stream", None);
    reader.wait_for_end();
    let text = reader.text();
    let entries: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("back-to-back JSON entries");
    let kind = |entry: &Value| {
        entry
            .as_object()
            .and_then(|object| object.keys().next().cloned())
            .unwrap_or_default()
    };
    let callsites: Vec<&Value> = entries
        .iter()
        .filter_map(|entry| entry.get("NewCallsite"))
        .collect();
    for event in entries.iter().filter_map(|entry| entry.get("Event")) {
        assert!(
            callsites
                .iter()
                .any(|callsite| callsite["call_id"] == event["call_id"]),
            "every event names an announced callsite: {event}"
        );
        assert!(event["time"]["secs"].is_u64() && event["time"]["nanos"].is_u64());
    }
    assert!(entries.iter().any(|entry| kind(entry) == "NewThread"));
    assert!(
        callsites
            .iter()
            .any(|callsite| callsite["target"] == "coresearch::tasks::scheduler")
    );
}

#[test]
fn the_stderr_filter_changes_at_run_time() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let log_path = scratch.path().join("stderr.log");
    let log_file = std::fs::File::create(&log_path).expect("create succeeds");
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .args(["--http-addr", &address, "--db-path"])
        .arg(scratch.path().join("data.ms"))
        .args(["--cores", "2", "--no-analytics", "--log-level", "WARN"])
        .arg("--experimental-enable-logs-route")
        .env_remove("MEILI_MASTER_KEY")
        .env_remove("MEILI_LOG_LEVEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .expect("spawn succeeds");
    let send = |raw: &str| {
        let started = Instant::now();
        loop {
            if let Some(response) = common::raw_to(&address, raw) {
                return response;
            }
            assert!(started.elapsed() < LINE_WAIT, "the server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let log_after = |what: &str, wanted: &dyn Fn(&str) -> bool| {
        let started = Instant::now();
        loop {
            let log = std::fs::read_to_string(&log_path).expect("read_to_string succeeds");
            if wanted(&log) {
                return log;
            }
            assert!(started.elapsed() < LINE_WAIT, "{what} never came: {log}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // Until every core serves, `/health` answers 503 `starting`: wait as a balancer would.
    let started = Instant::now();
    while send(&request("GET", "/health", None)).status != 200 {
        assert!(
            started.elapsed() < LINE_WAIT,
            "the server never became ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let change = |target: &str| {
        let body = json!({"target": target}).to_string();
        let response = send(&json_request("POST", "/logs/stderr", None, &body));
        assert_eq!(response.status, 204, "{}", response.text());
    };
    change("info");
    assert_eq!(send(&request("GET", "/version", None)).status, 200);
    let log = log_after("the request line", &|log| {
        log.contains(" INFO coresearch::routes: request core=")
            && log.contains("method=GET path=/version status=200")
    });
    assert!(
        !log.contains("path=/health"),
        "WARN kept the request lines out: {log}"
    );

    change("coresearch::tasks=info");
    let response = send(&json_request(
        "POST",
        "/indexes",
        None,
        r#"{"uid": "films"}"#,
    ));
    assert_eq!(response.status, 202);
    assert_eq!(send(&request("GET", "/stats", None)).status, 200);
    let log = log_after("the batch line", &|log| log.contains("batch finished"));
    std::thread::sleep(Duration::from_millis(300));
    let log = std::fs::read_to_string(&log_path).unwrap_or(log);
    assert!(
        !log.contains("path=/stats"),
        "the routes' lines are filtered out: {log}"
    );
    assert!(!log.contains("path=/indexes"), "{log}");
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().expect("wait succeeds").success());
}
