//! Embedders against a real HTTP server: a std `TcpListener` on a thread that answers
//! every request with deterministic vectors (or a scripted failure) and records what it
//! received, so the request shapes, headers, batching, dimension inference and each
//! error's message are checked end to end. The messages of a refused connection, a
//! timeout, a 500 and malformed JSON were checked beside Meilisearch 1.50 (its logs).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::outgoing::{IpPolicy, OutgoingClient, SendOptions};

/// How long the test server waits for a connection before it stops.
const SERVER_IDLE_LIMIT: Duration = Duration::from_millis(1500);

/// One answer: status, body, and a pause before it.
struct Answer {
    status: u16,
    body: String,
    pause: Duration,
}

fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        body: body.to_string(),
        pause: Duration::ZERO,
    }
}

/// A request the server received: its head and its body.
#[derive(Debug, Clone)]
struct Received {
    head: String,
    body: Value,
}

/// The vector of a text: its length, its first byte, and 1.
fn vector_of(text: &Value) -> Value {
    let text = text.as_str().unwrap_or_default();
    let first = text.bytes().next().unwrap_or(0);
    json!([text.len(), first, 1])
}

type Handler = Box<dyn Fn(&Value) -> Answer + Send>;

/// Starts a server answering with `handler` until it sees no connection for a while;
/// joining it gives the requests it received.
fn serve(handler: Handler) -> (SocketAddr, JoinHandle<Vec<Received>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    listener.set_nonblocking(true).expect("non-blocking");
    let received = Arc::new(Mutex::new(Vec::new()));
    let handle = std::thread::spawn(move || {
        let mut last = Instant::now();
        while last.elapsed() < SERVER_IDLE_LIMIT {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let request = read_request(&mut stream);
                    let answer = handler(&request.body);
                    received.lock().expect("lock").push(request);
                    std::thread::sleep(answer.pause);
                    let _ = stream.write_all(
                        format!(
                            "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                            answer.status,
                            answer.body.len(),
                            answer.body
                        )
                        .as_bytes(),
                    );
                    last = Instant::now();
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        received.lock().expect("lock").clone()
    });
    (address, handle)
}

/// Reads one request: its head, then `Content-Length` bytes of body.
fn read_request(stream: &mut TcpStream) -> Received {
    stream.set_nonblocking(false).expect("blocking");
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let count = stream.read(&mut buffer).expect("read");
        bytes.extend_from_slice(&buffer[..count]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length = text
            .lines()
            .find_map(|line| line.strip_prefix("Content-Length: "))
            .map_or(0, |value| value.trim().parse().expect("length"));
        if bytes.len() >= end + 4 + length || count == 0 {
            return Received {
                head: text[..end].to_owned(),
                body: serde_json::from_slice(&bytes[end + 4..]).unwrap_or(Value::Null),
            };
        }
    }
}

/// Fast retries and short timeouts.
fn quick_options() -> SendOptions {
    SendOptions {
        connect_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_millis(800),
        max_attempts: 2,
        first_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(50),
        ..SendOptions::default()
    }
}

/// What one embedding run gave: the embeddings (or the error message) and the inferred
/// dimensions.
type Outcome = (Result<Vec<Vec<f32>>, String>, Option<usize>);

/// Builds the embedder of `settings` on a fresh core and embeds `texts`.
fn embed_on_core(settings: Value, texts: Vec<String>) -> Outcome {
    crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let policy = IpPolicy::parse(["127.0.0.0/8"]).expect("valid");
        let client = Rc::new(OutgoingClient::new(policy, readiness));
        let Value::Object(map) = settings else {
            panic!("an object")
        };
        let settings = EmbedderSettings::from_map(&map).expect("settings");
        let embedder = Embedder::new(&settings.config, client)
            .expect("embedder")
            .with_options(quick_options());
        let embedded = embedder
            .embed(&texts)
            .await
            .map_err(|error| error.to_response_error().message);
        (embedded, embedder.dimensions())
    })
}

fn texts(count: usize) -> Vec<String> {
    (0..count)
        .map(|index| format!("text number {index}"))
        .collect()
}

fn expected(texts: &[String]) -> Vec<Vec<f32>> {
    texts
        .iter()
        .map(|text| vec![text.len() as f32, f32::from(text.as_bytes()[0]), 1.0])
        .collect()
}

#[test]
fn a_rest_embedder_infers_dimensions_then_sends_batches_of_ten_with_its_headers() {
    let (address, server) = serve(Box::new(|body| {
        let items = body["inputs"].as_array().cloned().unwrap_or_default();
        let data: Vec<Value> = items
            .iter()
            .map(|text| json!({"vector": vector_of(text)}))
            .collect();
        ok(json!({"data": data}))
    }));
    let settings = json!({
        "source": "rest", "url": format!("http://{address}/embed"), "apiKey": "secret",
        "request": {"inputs": ["{{text}}", "{{..}}"], "model": "tiny"},
        "response": {"data": [{"vector": "{{embedding}}"}, "{{..}}"]},
        "headers": {"X-Custom": "yes"}
    });
    let sent = texts(12);
    let (embedded, dimensions) = embed_on_core(settings, sent.clone());
    assert_eq!(embedded.expect("embedded"), expected(&sent));
    assert_eq!(dimensions, Some(3));
    let received = server.join().expect("server");
    let batches: Vec<usize> = received
        .iter()
        .map(|request| request.body["inputs"].as_array().map_or(0, Vec::len))
        .collect();
    // The test text first, then both batches (in flight together, so in either order).
    assert_eq!(batches[0], 1);
    let mut rest = batches[1..].to_vec();
    rest.sort_unstable();
    assert_eq!(rest, [2, 10]);
    assert_eq!(
        received[0].body,
        json!({"inputs": ["test"], "model": "tiny"})
    );
    let head = &received[2].head;
    assert!(head.starts_with("POST /embed HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("Authorization: Bearer secret\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: application/json\r\n"),
        "{head}"
    );
    assert!(head.contains("X-Custom: yes"), "{head}");
}

#[test]
fn an_openai_embedder_sends_model_and_dimensions_without_a_test_request() {
    let (address, server) = serve(Box::new(|body| {
        let items = body["input"].as_array().cloned().unwrap_or_default();
        let data: Vec<Value> = items
            .iter()
            .map(|text| json!({"embedding": vector_of(text), "object": "embedding"}))
            .collect();
        ok(json!({"object": "list", "data": data}))
    }));
    let settings = json!({
        "source": "openAi", "url": format!("http://{address}/v1/embeddings"),
        "apiKey": "sk-test", "dimensions": 3
    });
    let sent = texts(3);
    let (embedded, dimensions) = embed_on_core(settings, sent.clone());
    assert_eq!(embedded.expect("embedded"), expected(&sent));
    assert_eq!(dimensions, Some(3));
    let received = server.join().expect("server");
    assert_eq!(received.len(), 1);
    assert_eq!(
        received[0].body,
        json!({"model": "text-embedding-3-small", "input": sent, "dimensions": 3})
    );
    assert!(
        received[0]
            .head
            .contains("Authorization: Bearer sk-test\r\n")
    );
}

#[test]
fn an_ollama_embedder_uses_api_embed_and_reads_embeddings() {
    let (address, server) = serve(Box::new(|body| {
        let items = body["input"].as_array().cloned().unwrap_or_default();
        let embeddings: Vec<Value> = items.iter().map(vector_of).collect();
        ok(json!({"model": "m", "embeddings": embeddings}))
    }));
    let settings =
        json!({"source": "ollama", "url": format!("http://{address}/api/embed"), "model": "m"});
    let sent = texts(2);
    let (embedded, dimensions) = embed_on_core(settings, sent.clone());
    assert_eq!(embedded.expect("embedded"), expected(&sent));
    assert_eq!(dimensions, Some(3));
    let received = server.join().expect("server");
    assert_eq!(received[0].body, json!({"model": "m", "input": ["test"]}));
    assert_eq!(received[1].body, json!({"model": "m", "input": sent}));
    assert!(!received[1].head.contains("Authorization"));
}

/// A one-text REST embedder of 3 dimensions at `address`.
fn single_rest(address: SocketAddr) -> Value {
    json!({
        "source": "rest", "url": format!("http://{address}/"), "dimensions": 3,
        "request": {"text": "{{text}}"}, "response": {"embedding": "{{embedding}}"}
    })
}

fn failure(answer: fn() -> Answer) -> String {
    let (address, server) = serve(Box::new(move |_| answer()));
    let (embedded, _) = embed_on_core(single_rest(address), texts(1));
    server.join().expect("server");
    embedded.expect_err("fails")
}

#[test]
fn a_500_is_retried_then_reported_with_its_body() {
    let message = failure(|| Answer {
        status: 500,
        body: "model exploded".to_owned(),
        pause: Duration::ZERO,
    });
    assert_eq!(
        message,
        "Error while generating embeddings: runtime error: received internal error HTTP 500 from embedding server\n  - server replied with `model exploded`"
    );
}

#[test]
fn a_slow_server_is_a_timeout() {
    let message = failure(|| Answer {
        status: 200,
        body: json!({"embedding": [1, 2, 3]}).to_string(),
        pause: Duration::from_millis(1200),
    });
    assert_eq!(
        message,
        "Error while generating embeddings: runtime error: could not reach embedding server:\n  - timeout: global"
    );
}

#[test]
fn a_malformed_answer_and_a_wrong_shape_are_reported() {
    let message = failure(|| Answer {
        status: 200,
        body: "{\"embedding\": [1, 2".to_owned(),
        pause: Duration::ZERO,
    });
    assert_eq!(
        message,
        "Error while generating embeddings: runtime error: error deserializing the response body as JSON:\n  - json: EOF while parsing a list at line 1 column 19"
    );
    let message = failure(|| ok(json!({"embeddings": [1, 2, 3]})));
    assert_eq!(
        message,
        "Error while generating embeddings: runtime error: error extracting embeddings from the response:\n  - in `response`, while extracting a single \"{{embedding}}\", configuration expects key \"embedding\", which is missing in response\n  - Hint: `response` has key `embeddings`, did you mean `response.embeddings` in embedder configuration?"
    );
}

#[test]
fn wrong_dimensions_are_reported() {
    let message = failure(|| ok(json!({"embedding": [1, 2]})));
    assert_eq!(
        message,
        "Error while generating embeddings: runtime error: was expecting embeddings of dimension `3`, got embeddings of dimensions `2`"
    );
}

#[test]
fn a_refused_connection_is_reported() {
    let address = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let (embedded, _) = embed_on_core(single_rest(address), texts(1));
    assert_eq!(
        embedded.expect_err("refused"),
        "Error while generating embeddings: runtime error: could not reach embedding server:\n  - io: Connection refused"
    );
}

#[test]
fn a_failed_inference_is_a_dimension_error_and_a_missing_ollama_model_is_named() {
    let (address, server) = serve(Box::new(|_| Answer {
        status: 404,
        body: "{\"error\":\"model \\\"m\\\" not found\"}".to_owned(),
        pause: Duration::ZERO,
    }));
    let settings =
        json!({"source": "ollama", "url": format!("http://{address}/api/embed"), "model": "m"});
    let (embedded, _) = embed_on_core(settings, texts(1));
    server.join().expect("server");
    assert_eq!(
        embedded.expect_err("not found"),
        "Error while generating embeddings: user error: model not found. Meilisearch will not automatically download models from the Ollama library, please pull the model manually\n  - server replied with `{\"error\":\"model \\\"m\\\" not found\"}`"
    );
}

#[test]
fn a_user_provided_embedder_refuses_texts() {
    let (embedded, dimensions) = embed_on_core(
        json!({"source": "userProvided", "dimensions": 2}),
        vec!["hello".to_owned()],
    );
    assert_eq!(dimensions, Some(2));
    assert_eq!(
        embedded.expect_err("manual"),
        "Error while generating embeddings: user error: attempt to embed the following text in a configuration where embeddings must be user provided:\n  - `hello`"
    );
}

#[test]
fn a_composite_embedder_indexes_with_one_side_and_searches_with_the_other() {
    let (address, server) = serve(Box::new(|body| {
        ok(json!({"embedding": vector_of(&body["text"])}))
    }));
    let side = |path: &str| {
        json!({
            "source": "rest", "url": format!("http://{address}/{path}"), "dimensions": 3,
            "request": {"text": "{{text}}"}, "response": {"embedding": "{{embedding}}"}
        })
    };
    let settings = json!({"source": "composite", "searchEmbedder": side("search"), "indexingEmbedder": side("index")});
    let (indexed, searched) = crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let policy = IpPolicy::parse(["127.0.0.0/8"]).expect("valid");
        let client = Rc::new(OutgoingClient::new(policy, readiness));
        let Value::Object(map) = settings else {
            panic!("an object")
        };
        let config = EmbedderConfig::from_map(&map).expect("config");
        let embedder = Embedder::new(&config, client).expect("embedder");
        assert_eq!(embedder.infer_dimensions().await.expect("dimensions"), 3);
        let indexed = embedder.embed(&["doc".to_owned()]).await.expect("indexed");
        let searched = embedder.embed_search("query").await.expect("searched");
        (indexed, searched)
    });
    assert_eq!(indexed, vec![vec![3.0, f32::from(b'd'), 1.0]]);
    assert_eq!(searched, vec![5.0, f32::from(b'q'), 1.0]);
    let paths: Vec<String> = server
        .join()
        .expect("server")
        .iter()
        .map(|request| request.head.lines().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(paths, ["POST /index HTTP/1.1", "POST /search HTTP/1.1"]);
}

#[test]
fn a_failed_dimension_inference_names_the_test_embedding() {
    let address = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let settings = json!({
        "source": "rest", "url": format!("http://{address}/"),
        "request": {"text": "{{text}}"}, "response": {"embedding": "{{embedding}}"}
    });
    let message = crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let policy = IpPolicy::parse(["127.0.0.0/8"]).expect("valid");
        let client = Rc::new(OutgoingClient::new(policy, readiness));
        let Value::Object(map) = settings else {
            panic!("an object")
        };
        let config = EmbedderConfig::from_map(&map).expect("config");
        let embedder = Embedder::new(&config, client)
            .expect("embedder")
            .with_options(quick_options());
        let error = embedder.infer_dimensions().await.expect_err("refused");
        error.to_response_error().message
    });
    assert_eq!(
        message,
        "Error while generating embeddings: runtime error: could not determine model dimensions:\n  - test embedding failed with runtime error: could not reach embedding server:\n  - io: Connection refused"
    );
}
