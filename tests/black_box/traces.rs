//! Traces over OTLP/HTTP, black-box: the test runs its own OTLP receiver on loopback (a small
//! HTTP server taking `POST /v1/traces` with JSON), starts two instances in a network that
//! export to it, sends a networked search with a `traceparent`, and checks the tree of
//! spans across both instances. Also: without the endpoint flag nothing is sent, and an
//! unreachable endpoint leaves the server serving and says so in its log.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::network::{network_options, start_network_instance};
use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// The trace the test's search belongs to, and the span it names as its parent.
const INCOMING_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const INCOMING_PARENT_ID: &str = "00f067aa0ba902b7";
/// How long the test waits for spans to arrive.
const SPANS_WAIT: Duration = Duration::from_secs(30);
/// How long the test waits to be sure nothing arrives (several export intervals).
const QUIET_WAIT: Duration = Duration::from_secs(2);

/// One span as received, with the `service.name` of its resource.
#[derive(Debug, Clone)]
struct ReceivedSpan {
    service: String,
    span: Value,
}

impl ReceivedSpan {
    fn text(&self, field: &str) -> &str {
        self.span[field].as_str().unwrap_or_default()
    }

    fn attribute(&self, key: &str) -> Option<&Value> {
        self.span["attributes"]
            .as_array()?
            .iter()
            .find(|attribute| attribute["key"] == key)
            .map(|attribute| &attribute["value"])
    }
}

/// A loopback OTLP/HTTP receiver that keeps every span posted to it.
struct Receiver {
    address: std::net::SocketAddr,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    posts: Arc<Mutex<usize>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let address = listener.local_addr().expect("the bound address");
        let spans = Arc::new(Mutex::new(Vec::new()));
        let posts = Arc::new(Mutex::new(0));
        let (kept, counted) = (spans.clone(), posts.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(body) = read_post(stream) {
                    *counted.lock().expect("the receiver's lock is not poisoned") += 1;
                    kept.lock()
                        .expect("the receiver's lock is not poisoned")
                        .extend(spans_of(&body));
                }
            }
        });
        Receiver {
            address,
            spans,
            posts,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans
            .lock()
            .expect("the receiver's lock is not poisoned")
            .clone()
    }

    fn posts(&self) -> usize {
        *self
            .posts
            .lock()
            .expect("the receiver's lock is not poisoned")
    }

    /// The spans once `done` holds for them; panics after [`SPANS_WAIT`].
    fn wait_for(&self, done: impl Fn(&[ReceivedSpan]) -> bool) -> Vec<ReceivedSpan> {
        let started = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(
                started.elapsed() < SPANS_WAIT,
                "spans still missing after {SPANS_WAIT:?}: {spans:#?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Reads one `POST /v1/traces` with a JSON body and answers 200; `None` for anything else.
fn read_post(stream: TcpStream) -> Option<Value> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let is_traces = line.starts_with("POST /v1/traces ");
    let mut length = 0;
    let mut json = false;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "content-type" => json = value.trim() == "application/json",
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let status = if is_traces && json {
        "200 OK"
    } else {
        "400 Bad Request"
    };
    let mut stream = stream;
    let _ = stream.write_all(
        format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}").as_bytes(),
    );
    (is_traces && json)
        .then(|| serde_json::from_slice(&body).ok())
        .flatten()
}

/// Every span of an export request, with its resource's `service.name`.
fn spans_of(request: &Value) -> Vec<ReceivedSpan> {
    let mut found = Vec::new();
    for resource in request["resourceSpans"].as_array().into_iter().flatten() {
        let service = resource["resource"]["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|attribute| attribute["key"] == "service.name")
            .and_then(|attribute| attribute["value"]["stringValue"].as_str())
            .unwrap_or_default()
            .to_owned();
        for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
            for span in scope["spans"].as_array().into_iter().flatten() {
                found.push(ReceivedSpan {
                    service: service.clone(),
                    span: span.clone(),
                });
            }
        }
    }
    found
}

/// Whether `span` descends from the span `ancestor_id` (following parents within `spans`).
fn descends_from(spans: &[ReceivedSpan], span: &ReceivedSpan, ancestor_id: &str) -> bool {
    let mut parent = span.text("parentSpanId").to_owned();
    for _ in 0..spans.len() {
        if parent == ancestor_id {
            return true;
        }
        match spans
            .iter()
            .find(|candidate| candidate.text("spanId") == parent)
        {
            Some(next) => parent = next.text("parentSpanId").to_owned(),
            None => return false,
        }
    }
    false
}

/// The options of a traced network instance named `service`, with two shards per index on
/// two cores so that a search crosses the core mesh.
fn traced_options(receiver: &Receiver, service: &str) -> Options {
    let mut options = network_options(2);
    options.extra_arguments.extend(
        [
            "--experimental-otlp-traces-endpoint",
            &receiver.endpoint(),
            "--experimental-otlp-traces-service-name",
            service,
            "--shards-per-index",
            "2",
            "--documents-per-shard",
            "0",
        ]
        .map(str::to_owned),
    );
    options
}

fn add_documents(server: &Server, documents: Value) {
    let response = server.send("POST", "/indexes/movies/documents", Some(&documents));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(response.json()["taskUid"].as_u64().expect("a task uid"));
    assert_eq!(task["status"], "succeeded", "{task}");
}

/// `POST /indexes/movies/search` with `body` and a `traceparent` header.
fn traced_search(server: &Server, body: &Value) -> common::HttpResponse {
    let body = body.to_string();
    server.raw(&format!(
        "POST /indexes/movies/search HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\ntraceparent: 00-{INCOMING_TRACE_ID}-{INCOMING_PARENT_ID}-01\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))
}

/// Two traced instances `a` and `b` with a `movies` index each, `a` naming both as remotes.
fn traced_pair(receiver: &Receiver) -> (Server, Server) {
    let a = start_network_instance(&traced_options(receiver, "trace-a"));
    let b = start_network_instance(&traced_options(receiver, "trace-b"));
    add_documents(
        &a,
        json!([{"id": 1, "title": "Carol"}, {"id": 2, "title": "Carol in Paris"}]),
    );
    add_documents(&b, json!([{"id": 10, "title": "Carol at sea"}]));
    let response = a.send(
        "PATCH",
        "/network",
        Some(&json!({"self": "a", "remotes": {
            "a": {"url": a.url()},
            "b": {"url": b.url(), "searchApiKey": MASTER_KEY}}})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    (a, b)
}

/// The spans of the test's trace from `service` of OTLP kind `kind`.
fn in_trace(spans: &[ReceivedSpan], service: &str, kind: u64) -> Vec<ReceivedSpan> {
    spans
        .iter()
        .filter(|span| {
            span.service == service
                && span.text("traceId") == INCOMING_TRACE_ID
                && span.span["kind"] == kind
        })
        .cloned()
        .collect()
}

#[test]
fn a_networked_search_is_one_trace_across_both_instances() {
    let receiver = Receiver::start();
    let (a, _b) = traced_pair(&receiver);
    let response = traced_search(&a, &json!({"q": "carol", "useNetwork": true}));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.json()["hits"]
            .as_array()
            .expect("an array of hits")
            .len(),
        3
    );

    let spans = receiver.wait_for(|spans| {
        in_trace(spans, "trace-b", 2).len() == 1
            && in_trace(spans, "trace-b", 1).len() >= 2
            && in_trace(spans, "trace-a", 1).len() >= 2
            && in_trace(spans, "trace-a", 3).len() == 1
            && in_trace(spans, "trace-a", 2).len() == 1
    });

    // The request's span: a child of the incoming traceparent, named by its route.
    let request = &in_trace(&spans, "trace-a", 2)[0];
    assert_eq!(
        request.text("parentSpanId"),
        INCOMING_PARENT_ID,
        "{request:?}"
    );
    assert_eq!(request.text("name"), "POST /indexes/{index_uid}/search");
    assert_eq!(
        request.attribute("http.response.status_code"),
        Some(&json!({"intValue": "200"}))
    );
    assert_eq!(
        request.attribute("http.route"),
        Some(&json!({"stringValue": "/indexes/{index_uid}/search"}))
    );
    let request_id = request.text("spanId");

    // The call to the remote: a client span under the request.
    let call = &in_trace(&spans, "trace-a", 3)[0];
    assert_eq!(call.text("name"), "POST /multi-search");
    assert!(descends_from(&spans, call, request_id), "{call:?}");

    // The remote's span: its parent is the client span, so the traceparent travelled.
    let remote = &in_trace(&spans, "trace-b", 2)[0];
    assert_eq!(
        remote.text("parentSpanId"),
        call.text("spanId"),
        "{remote:?}"
    );
    assert_eq!(remote.text("name"), "POST /multi-search");
    check_shards_and_batches(&spans, request_id, remote.text("spanId"));
}

/// The shard commands sit under each instance's request span (`request_id` on `a`,
/// `remote_id` on `b`), and the document additions ran as root spans of task batches.
fn check_shards_and_batches(spans: &[ReceivedSpan], request_id: &str, remote_id: &str) {
    // The shard commands: under each instance's request, on both cores of `a` (the context
    // crossed the core mesh in the invocation).
    let shard_cores: std::collections::BTreeSet<String> = in_trace(spans, "trace-a", 1)
        .iter()
        .filter(|shard| descends_from(spans, shard, request_id))
        .filter_map(|shard| shard.attribute("coresearch.core").map(Value::to_string))
        .collect();
    assert_eq!(shard_cores.len(), 2, "{spans:#?}");
    let remote_shards = in_trace(spans, "trace-b", 1)
        .into_iter()
        .filter(|shard| descends_from(spans, shard, remote_id))
        .count();
    assert!(remote_shards >= 2, "{spans:#?}");

    // The document additions ran as task batches: root spans with their shard commands.
    let batches: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|span| span.text("name") == "task batch" && span.service == "trace-a")
        .collect();
    assert!(!batches.is_empty(), "{spans:#?}");
    assert!(
        batches
            .iter()
            .all(|batch| batch.text("parentSpanId").is_empty())
    );
}

#[test]
fn without_the_endpoint_nothing_is_sent_and_an_unreachable_one_is_logged() {
    let receiver = Receiver::start();
    let untraced = Server::start_with(Options {
        cores: Some(1),
        ..Options::default()
    });
    let response = untraced.send("GET", "/indexes", None);
    assert_eq!(response.status, 200);
    std::thread::sleep(QUIET_WAIT);
    assert_eq!(receiver.posts(), 0);

    let closed = common::free_address();
    let server = Server::start_with(Options {
        cores: Some(1),
        extra_arguments: vec![
            "--experimental-otlp-traces-endpoint".to_owned(),
            format!("http://{closed}"),
            "--experimental-enable-metrics".to_owned(),
        ],
        ..Options::default()
    });
    for _ in 0..3 {
        assert_eq!(server.send("GET", "/indexes", None).status, 200);
    }
    let metrics = server.send("GET", "/metrics", None);
    assert_eq!(metrics.status, 200, "{}", metrics.text());
    assert!(
        metrics
            .text()
            .contains("coresearch_trace_spans_dropped_total 0"),
        "{}",
        metrics.text()
    );
    if std::env::var_os("CORESEARCH_TEST_SERVER_LOGS").is_some() {
        return;
    }
    let log_path = server.data_directory.with_extension("stderr.log");
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if log.contains("could not export traces") {
            break;
        }
        assert!(started.elapsed() < SPANS_WAIT, "nothing logged:\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.send("GET", "/health", None).status, 200);
}
