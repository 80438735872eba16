//! Conversational search (`chatCompletions`) against the real binary and a small
//! OpenAI-compatible model served by the test: a `std` listener thread that streams
//! server-sent events, first asking for a `_meiliSearchInIndex` call, then, given the
//! search's result, answering with a text that quotes it. What the model received (the
//! system prompt, the search tool, the tool results) is recorded and checked, and so is the
//! stream the client sees.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{HttpResponse, MASTER_KEY, Options, Server, json_request};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// One request the model received.
#[derive(Debug, Clone)]
struct Received {
    /// The request line's target (path and query).
    target: String,
    /// Header names in lower case, with their values.
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate == name)
            .map(|(_, value)| value.as_str())
    }
}

/// How the model answers one request.
enum Reply {
    /// A 200 event stream of these `data:` payloads.
    Events(Vec<String>),
    /// These raw bytes, as they are.
    Raw(String),
}

type Script = dyn Fn(&Value) -> Reply + Send + Sync;

/// A model listening on a loopback port; stops when dropped.
struct FakeModel {
    address: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
}

impl FakeModel {
    fn start(script: Box<Script>) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let address = listener.local_addr().expect("address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopped) = (received.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => answer(stream, &*script, &log),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeModel {
            address,
            received,
            stop,
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads one request and answers it as `script` says.
fn answer(mut stream: TcpStream, script: &Script, log: &Mutex<Vec<Received>>) {
    stream.set_nonblocking(false).expect("blocking");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let Some(received) = read_request(&mut stream) else {
        return;
    };
    let reply = script(&received.body);
    log.lock().expect("lock").push(received);
    match reply {
        Reply::Raw(bytes) => {
            let _ = stream.write_all(bytes.as_bytes());
        }
        Reply::Events(events) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            for data in events.iter().map(String::as_str).chain(["[DONE]"]) {
                let event = format!("data: {data}\n\n");
                let _ = stream.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
                let _ = stream.flush();
            }
            let _ = stream.write_all(b"0\r\n\r\n");
        }
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = bytes.windows(4).position(|window| window == b"\r\n\r\n") {
            break end + 4;
        }
        let count = stream.read(&mut buffer).ok()?;
        if count == 0 {
            return None;
        }
        bytes.extend_from_slice(&buffer[..count]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let target = lines.next()?.split(' ').nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + length {
        let count = stream.read(&mut buffer).ok()?;
        if count == 0 {
            return None;
        }
        bytes.extend_from_slice(&buffer[..count]);
    }
    let body = serde_json::from_slice(&bytes[head_end..head_end + length]).unwrap_or(Value::Null);
    Some(Received {
        target,
        headers,
        body,
    })
}

/// A chunk of the model's stream with `choices`.
fn chunk(choices: Value) -> String {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": choices,
    })
    .to_string()
}

/// The script of a model that first asks for a search with `arguments` (in two pieces),
/// then answers `Found: <the tool result>` and reports its token usage.
fn searching_model(arguments: &str) -> Box<Script> {
    let arguments = arguments.to_owned();
    Box::new(move |body: &Value| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        if last["role"] != "tool" {
            let (first, second) = arguments.split_at(arguments.len() / 2);
            return Reply::Events(vec![
                chunk(
                    json!([{"index": 0, "delta": {"role": "assistant", "content": null,
                    "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": "_meiliSearchInIndex", "arguments": first}}]},
                    "finish_reason": null}]),
                ),
                chunk(json!([{"index": 0, "delta": {"tool_calls": [{"index": 0,
                    "function": {"arguments": second}}]}, "finish_reason": null}])),
                chunk(json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])),
            ]);
        }
        let result = last["content"].as_str().unwrap_or_default().to_owned();
        let mut usage = json!({"id": "chatcmpl-test", "object": "chat.completion.chunk",
            "created": 1, "model": "test-model", "choices": []});
        usage["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
        Reply::Events(vec![
            chunk(
                json!([{"index": 0, "delta": {"role": "assistant", "content": "Found: "},
                "finish_reason": null}]),
            ),
            chunk(json!([{"index": 0, "delta": {"content": result}, "finish_reason": null}])),
            chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
            usage.to_string(),
        ])
    })
}

fn start() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_string(),
            "any".to_string(),
        ],
        ..Options::default()
    })
}

fn enable_chats(server: &Server) {
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"chatCompletions": true, "metrics": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
}

/// Runs a task-creating request with the master key and waits for it to succeed.
fn run_task(server: &Server, method: &str, path: &str, body: &Value) {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
}

/// The `movies` index: a hidden `secret` field the chat template shows, `genre` filterable.
fn add_movies(server: &Server) {
    run_task(
        server,
        "POST",
        "/indexes/movies/documents",
        &json!([
            {"id": 1, "title": "Carol", "genre": "drama", "secret": "s1"},
            {"id": 2, "title": "Alien", "genre": "horror", "secret": "s2"}
        ]),
    );
    run_task(
        server,
        "PATCH",
        "/indexes/movies/settings",
        &json!({
            "displayedAttributes": ["id", "title", "genre"],
            "filterableAttributes": ["genre"],
            "chat": {
                "description": "Movie db",
                "documentTemplate": "Movie {{doc.title}} secret {{doc.secret}}"
            }
        }),
    );
}

fn patch_workspace(server: &Server, workspace: &str, settings: &Value) -> HttpResponse {
    server.send(
        "PATCH",
        &format!("/chats/{workspace}/settings"),
        Some(settings),
    )
}

/// A completion request with `key`, declaring every reporting function.
fn complete(server: &Server, workspace: &str, key: &str, model: &str) -> HttpResponse {
    let body = json!({
        "model": model,
        "messages": [{"role": "user", "content": "Which movies?"}],
        "stream": true,
        "tools": [
            {"type": "function", "function": {"name": "_meiliSearchProgress"}},
            {"type": "function", "function": {"name": "_meiliSearchSources"}},
            {"type": "function", "function": {"name": "_meiliAppendConversationMessage"}}
        ]
    });
    server.raw(&json_request(
        "POST",
        &format!("/chats/{workspace}/chat/completions"),
        Some(key),
        &body.to_string(),
    ))
}

/// The `data:` payloads of an event stream, after checking its framing.
fn stream_events(response: &HttpResponse) -> Vec<String> {
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let text = response.text();
    assert!(text.starts_with("retry: 10000\n\n"), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    text.split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// The events that call `function`, with their arguments parsed.
fn calls_of(events: &[String], function: &str) -> Vec<Value> {
    events
        .iter()
        .filter_map(|event| serde_json::from_str::<Value>(event).ok())
        .filter_map(|event| {
            let call = &event["choices"][0]["delta"]["tool_calls"][0]["function"];
            (call["name"] == function)
                .then(|| serde_json::from_str(call["arguments"].as_str()?).ok())
                .flatten()
        })
        .collect()
}

/// The text the model streamed, relayed chunk by chunk.
fn relayed_text(events: &[String]) -> String {
    events
        .iter()
        .filter_map(|event| serde_json::from_str::<Value>(event).ok())
        .filter_map(|event| {
            event["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

fn error_events(events: &[String]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|event| serde_json::from_str::<Value>(event).ok())
        .filter(|event| event["type"] == "error")
        .collect()
}

#[test]
fn a_completion_searches_the_index_and_streams_the_model_s_answer() {
    let model = FakeModel::start(searching_model(
        r#"{"index_uid":"movies","q":"carol","filter":""}"#,
    ));
    let server = start();
    enable_chats(&server);
    add_movies(&server);
    let settings =
        json!({"source": "vLlm", "baseUrl": model.base_url(), "apiKey": "sk-test-key-0123456789"});
    let response = patch_workspace(&server, "support", &settings);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["apiKey"], "sk-XXXXX...");

    let events = stream_events(&complete(&server, "support", MASTER_KEY, "test-model"));
    let progress = calls_of(&events, "_meiliSearchProgress");
    assert_eq!(
        progress,
        [
            json!({"call_id": "call_1", "function_name": "_meiliSearchInIndex",
            "function_arguments": r#"{"index_uid":"movies","q":"carol","filter":""}"#})
        ]
    );
    // The sources are the documents found, as displayed: the hidden field is not there.
    assert_eq!(
        calls_of(&events, "_meiliSearchSources"),
        [json!({"call_id": "call_1", "sources": [{"id": 1, "title": "Carol", "genre": "drama"}]})]
    );
    let appended = calls_of(&events, "_meiliAppendConversationMessage");
    assert_eq!(appended.len(), 2, "{appended:?}");
    assert_eq!(appended[0]["role"], "assistant");
    assert_eq!(appended[0]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        appended[1],
        json!({"role": "tool", "content": "Movie Carol secret s1", "tool_call_id": "call_1"})
    );
    assert_eq!(relayed_text(&events), "Found: Movie Carol secret s1");
    assert!(error_events(&events).is_empty(), "{events:?}");

    let received = model.received();
    assert_eq!(received.len(), 2, "the model was asked twice");
    let first = &received[0];
    assert_eq!(first.target, "/v1/chat/completions");
    assert_eq!(
        first.header("authorization"),
        Some("Bearer sk-test-key-0123456789")
    );
    assert_eq!(first.header("accept"), Some("text/event-stream"));
    assert_eq!(first.body["stream"], true);
    assert_eq!(
        first.body.get("stream_options"),
        None,
        "vLlm is not asked for usage"
    );
    let messages = first.body["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["content"]
            .as_str()
            .expect("a prompt")
            .starts_with("You are a highly capable research assistant")
    );
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "Which movies?"})
    );
    let tools = first.body["tools"].as_array().expect("tools");
    assert_eq!(
        tools.len(),
        1,
        "only the search tool reaches the model: {tools:?}"
    );
    let function = &tools[0]["function"];
    assert_eq!(function["name"], "_meiliSearchInIndex");
    assert!(
        function["description"]
            .as_str()
            .expect("a description")
            .ends_with("\n\n - movies: Movie db\n\n")
    );
    let parameters = &function["parameters"];
    assert_eq!(
        parameters["properties"]["index_uid"]["enum"],
        json!(["movies"])
    );
    assert!(
        parameters["properties"]["filter"]["description"]
            .as_str()
            .expect("a description")
            .ends_with("\n## Facet distributions of the movies index\ngenre: horror, drama.\n\n")
    );
    assert_eq!(parameters["required"], json!(["index_uid", "q", "filter"]));
    // The second request carries the call and the search's result: the found document
    // rendered with the index's template, hidden field included.
    let messages = received[1].body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"index_uid":"movies","q":"carol","filter":""}"#
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "Movie Carol secret s1", "tool_call_id": "call_1"})
    );

    let metrics = server.send("GET", "/metrics", None).text();
    assert!(
        metrics.contains("meilisearch_chat_searches_total{type=\"internal\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "meilisearch_chat_tokens_total{model=\"test-model\",workspace=\"support\"} 15"
        ),
        "{metrics}"
    );
}

/// A key restricted to another index sees only that index in the tool, and a search the
/// model asks for on the index it cannot reach fails with the key's refusal.
#[test]
fn a_key_limited_to_another_index_cannot_search_it_through_a_chat() {
    let model = FakeModel::start(searching_model(
        r#"{"index_uid":"movies","q":"","filter":""}"#,
    ));
    let server = start();
    enable_chats(&server);
    add_movies(&server);
    run_task(
        &server,
        "POST",
        "/indexes/other/documents",
        &json!([{"id": 1, "title": "Other"}]),
    );
    patch_workspace(
        &server,
        "support",
        &json!({"source": "vLlm", "baseUrl": model.base_url()}),
    );
    let key = server.send(
        "POST",
        "/keys",
        Some(&json!({"actions": ["chatCompletions", "search"], "indexes": ["other"], "expiresAt": null})),
    );
    assert_eq!(key.status, 201, "{}", key.text());
    let key = key.json()["key"].as_str().expect("a key").to_owned();

    let events = stream_events(&complete(&server, "support", &key, "test-model"));
    let received = model.received();
    assert_eq!(
        received[0].body["tools"][0]["function"]["parameters"]["properties"]["index_uid"]["enum"],
        json!(["other"])
    );
    let refusal =
        "The API key cannot acces the index `movies`, authorized indexes are [\"other\"].";
    let messages = received[1].body["messages"].as_array().expect("messages");
    assert_eq!(
        messages.last().expect("the tool result")["content"],
        format!("the search tool call failed with {refusal}")
    );
    let errors = error_events(&events);
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(
        errors[0]["error"],
        json!({"type": "response_error", "code": "403", "message": refusal,
            "param": null, "event_id": null})
    );
    assert!(calls_of(&events, "_meiliSearchSources").is_empty());
    assert!(!relayed_text(&events).contains("Carol"));
}

/// An HS256 JWT signed with `secret`.
fn sign_hs256(claims: &Value, secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"HS256"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("a key");
    mac.update(signing_input.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signing_input}.{signature}")
}

/// A tenant token's filter is AND-ed with the model's search, and its index rules narrow
/// the tool's index list.
#[test]
fn a_tenant_token_s_filter_holds_in_a_chat_search() {
    let model = FakeModel::start(searching_model(
        r#"{"index_uid":"movies","q":"","filter":""}"#,
    ));
    let server = start();
    enable_chats(&server);
    add_movies(&server);
    run_task(
        &server,
        "POST",
        "/indexes/other/documents",
        &json!([{"id": 1, "title": "Other"}]),
    );
    patch_workspace(
        &server,
        "support",
        &json!({"source": "vLlm", "baseUrl": model.base_url()}),
    );
    let parent = server.send(
        "POST",
        "/keys",
        Some(
            &json!({"actions": ["chatCompletions", "search"], "indexes": ["*"], "expiresAt": null}),
        ),
    );
    let parent = parent.json();
    let expires = time::OffsetDateTime::now_utc().unix_timestamp() + 3600;
    let token = sign_hs256(
        &json!({
            "apiKeyUid": parent["uid"],
            "searchRules": {"movies": {"filter": "genre = horror"}},
            "exp": expires
        }),
        parent["key"].as_str().expect("a key"),
    );

    let events = stream_events(&complete(&server, "support", &token, "test-model"));
    let received = model.received();
    assert_eq!(
        received[0].body["tools"][0]["function"]["parameters"]["properties"]["index_uid"]["enum"],
        json!(["movies"])
    );
    assert_eq!(
        calls_of(&events, "_meiliSearchSources"),
        [json!({"call_id": "call_1", "sources": [{"id": 2, "title": "Alien", "genre": "horror"}]})]
    );
    let messages = received[1].body["messages"].as_array().expect("messages");
    assert_eq!(
        messages.last().expect("the tool result")["content"],
        "Movie Alien secret s2"
    );
}

/// Each source's URL and headers, the system prompt's role, and the usage option.
#[test]
fn each_source_calls_its_url_with_its_headers() {
    let model = FakeModel::start(Box::new(|_| {
        Reply::Events(vec![chunk(
            json!([{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]),
        )])
    }));
    let server = start();
    enable_chats(&server);
    let base = model.base_url();
    patch_workspace(
        &server,
        "open",
        &json!({"source": "openAi", "baseUrl": base, "apiKey": "k1", "orgId": "org", "projectId": "proj"}),
    );
    patch_workspace(
        &server,
        "azure",
        &json!({"source": "azureOpenAi", "baseUrl": base, "apiKey": "k2",
            "deploymentId": "dep", "apiVersion": "2024-02-01"}),
    );
    for (workspace, model_name) in [("open", "o3-mini"), ("open", "gpt-4o"), ("azure", "gpt-4o")] {
        let events = stream_events(&complete(&server, workspace, MASTER_KEY, model_name));
        assert_eq!(relayed_text(&events), "hi");
    }
    let received = model.received();
    let newer = &received[0];
    assert_eq!(newer.target, "/v1/chat/completions");
    assert_eq!(newer.header("authorization"), Some("Bearer k1"));
    assert_eq!(newer.header("openai-organization"), Some("org"));
    assert_eq!(newer.header("openai-project"), Some("proj"));
    assert_eq!(newer.header("openai-beta"), Some("assistants=v2"));
    assert_eq!(newer.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(newer.body["messages"][0]["role"], "developer");
    assert_eq!(received[1].body["messages"][0]["role"], "system");
    let azure = &received[2];
    assert_eq!(
        azure.target,
        "/v1/openai/deployments/dep/chat/completions?api-version=2024-02-01"
    );
    assert_eq!(azure.header("api-key"), Some("k2"));
    assert_eq!(azure.header("authorization"), None);
}

/// The model's error answer, an unreachable model and a model the IP policy refuses reach
/// the client as error events, the stream still ending with `[DONE]`.
#[test]
fn model_failures_reach_the_client_as_error_events() {
    let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let refusing = FakeModel::start(Box::new(move |_| {
        Reply::Raw(format!(
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ))
    }));
    let server = start();
    enable_chats(&server);
    patch_workspace(
        &server,
        "refused",
        &json!({"source": "openAi", "baseUrl": refusing.base_url()}),
    );
    let events = stream_events(&complete(&server, "refused", MASTER_KEY, "gpt-4o"));
    let errors = error_events(&events);
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(
        errors[0]["error"],
        json!({"type": "invalid_request_error", "code": "invalid_api_key",
            "message": "Incorrect API key provided", "param": null, "event_id": null})
    );
    assert_eq!(errors[0]["event_id"].as_str().map(str::len), Some(36));

    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let url = format!("http://{closed}/v1");
    patch_workspace(&server, "gone", &json!({"source": "vLlm", "baseUrl": url}));
    let events = stream_events(&complete(&server, "gone", MASTER_KEY, "m"));
    assert_eq!(
        error_events(&events)[0]["error"],
        json!({"type": "transport_error", "code": null,
            "message": format!("error sending request for url ({url}/chat/completions)"),
            "param": null, "event_id": null})
    );

    // Without `--experimental-allowed-ip-networks`, a loopback model is refused.
    let guarded = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    });
    enable_chats(&guarded);
    let model = FakeModel::start(searching_model("{}"));
    patch_workspace(
        &guarded,
        "local",
        &json!({"source": "vLlm", "baseUrl": model.base_url()}),
    );
    let events = stream_events(&complete(&guarded, "local", MASTER_KEY, "m"));
    assert_eq!(error_events(&events)[0]["error"]["type"], "transport_error");
    assert!(model.received().is_empty(), "the model was never called");
}

fn assert_error(response: &HttpResponse, status: u16, code: &str, message: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let body = response.json();
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

const NOT_ENABLED: &str = "requires enabling the `chat completions` experimental feature. See https://github.com/orgs/meilisearch/discussions/835";

#[test]
fn the_chat_routes_refuse_as_meilisearch_does() {
    let server = start();
    for (method, path, action) in [
        ("GET", "/chats", "listing the chats"),
        ("GET", "/chats/support", "displaying a chat"),
        ("DELETE", "/chats/support", "deleting a chat"),
        (
            "GET",
            "/chats/support/settings",
            "using the /chats/settings route",
        ),
        (
            "PATCH",
            "/chats/support/settings",
            "using the /chats/settings route",
        ),
        (
            "DELETE",
            "/chats/support/settings",
            "using the /chats/settings route",
        ),
        (
            "POST",
            "/chats/support/chat/completions",
            "using the /chats chat completions route",
        ),
    ] {
        let body = match method {
            "PATCH" => Some(json!({})),
            "POST" => Some(json!({"model": "m", "messages": [], "stream": true})),
            _ => None,
        };
        let response = server.send(method, path, body.as_ref());
        assert_error(
            &response,
            400,
            "feature_not_enabled",
            &format!("{action} {NOT_ENABLED}"),
        );
    }
    // The body is checked before the feature.
    let response = server.send("POST", "/chats/support/chat/completions", Some(&json!({})));
    assert_error(
        &response,
        400,
        "bad_request",
        "Json deserialize error: missing field `messages` at line 1 column 2",
    );
    enable_chats(&server);

    for (method, path, message) in [
        ("GET", "/chats/support", "chat support not found"),
        ("DELETE", "/chats/support", "chat support not found"),
        ("GET", "/chats/support/settings", "Chat `support` not found"),
        (
            "DELETE",
            "/chats/support/settings",
            "Chat `support` not found",
        ),
    ] {
        assert_error(
            &server.send(method, path, None),
            404,
            "chat_not_found",
            message,
        );
    }
    let completion =
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true});
    assert_error(
        &server.send("POST", "/chats/support/chat/completions", Some(&completion)),
        404,
        "chat_not_found",
        "Chat `support` not found",
    );
    assert_error(
        &server.send("GET", "/chats/not%20valid", None),
        400,
        "invalid_index_uid",
        "`not valid` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
    );
    for (settings, code, message) in [
        (
            json!({"source": "vLlm"}),
            "bad_request",
            "vLlm requires setting a valid `baseUrl`",
        ),
        (
            json!({"source": "azureOpenAi", "baseUrl": "https://a.example"}),
            "bad_request",
            "azureOpenAi requires setting a valid `baseUrl`, `deploymentId`, and `apiVersion`",
        ),
        (
            json!({"source": "bad"}),
            "bad_request",
            "Json deserialize error: unknown variant `bad`, expected one of `openAi`, `mistral`, `azureOpenAi`, `vLlm` at line 1 column 15",
        ),
        (
            json!({"prompts": {"foo": "x"}}),
            "bad_request",
            "Json deserialize error: unknown field `foo`, expected one of `system`, `searchDescription`, `searchQParam`, `searchFilterParam`, `searchIndexUidParam` at line 1 column 17",
        ),
        (
            json!({"prompts": 3}),
            "bad_request",
            "Json deserialize error: invalid type: integer `3`, expected struct ChatPrompts at line 1 column 12",
        ),
    ] {
        assert_error(
            &patch_workspace(&server, "support", &settings),
            400,
            code,
            message,
        );
    }
    assert_eq!(
        server.send("GET", "/chats", None).json()["total"],
        0,
        "nothing was created"
    );

    // The first patch creates the workspace; the key is masked in every answer.
    let created = patch_workspace(
        &server,
        "support",
        &json!({"source": "mistral", "apiKey": "abcdefghijklmnopqrstuvwxyz0123456789",
            "prompts": {"system": "Be brief."}}),
    );
    assert_eq!(created.status, 200, "{}", created.text());
    let created = created.json();
    assert_eq!(created["apiKey"], "abcdeXXXXXX...");
    assert_eq!(created["orgId"], Value::Null);
    assert_eq!(created["prompts"]["system"], "Be brief.");
    assert!(
        created["prompts"]["searchQParam"]
            .as_str()
            .expect("a default prompt")
            .starts_with("The search query string")
    );
    assert_eq!(
        server.send("GET", "/chats/support/settings", None).json(),
        created
    );
    for (key, masked) in [("short", "XXX..."), ("0123456789abc", "01XXXX...")] {
        let answer = patch_workspace(&server, "support", &json!({"apiKey": key})).json();
        assert_eq!(answer["apiKey"], masked);
        assert_eq!(
            answer["source"], "mistral",
            "a patch keeps what it does not name"
        );
    }
    assert_eq!(
        server.send("GET", "/chats/support", None).json(),
        json!({"uid": "support"})
    );
    patch_workspace(&server, "another", &json!({}));
    let listed = server.send("GET", "/chats?offset=1&limit=1", None).json();
    assert_eq!(
        listed,
        json!({"results": [{"uid": "support"}], "offset": 1, "limit": 1, "total": 2})
    );
    assert_error(
        &server.send("GET", "/chats?limit=x", None),
        400,
        "invalid_index_limit",
        "Invalid value in parameter `limit`: could not parse `x` as a positive integer",
    );

    for (request, status, code, message) in [
        (
            json!({"model": "m", "messages": [], "stream": false}),
            501,
            "unimplemented_non_streaming_chat_completions",
            "Non-streamed chat completions is not implemented",
        ),
        (
            json!({"model": "m", "messages": [], "stream": true, "n": 2}),
            501,
            "unimplemented_multi_choice_chat_completions",
            "You tried to specify n = 2 but only single choices are supported (n = 1).",
        ),
        (
            json!({"model": "m", "messages": [], "stream": true,
                "tools": [{"type": "function", "function": {"name": "get_weather"}}]}),
            501,
            "unimplemented_external_function_calling",
            "get_weather: External functions are not supported yet.",
        ),
        (
            json!({"model": "m", "messages": [], "stream": true,
                "tools": [{"type": "function", "function": {"name": "_meiliSearchInIndex"}}]}),
            400,
            "bad_request",
            "_meiliSearchInIndex function is already defined.",
        ),
    ] {
        let response = server.send("POST", "/chats/support/chat/completions", Some(&request));
        assert_error(&response, status, code, message);
    }

    // Resetting the settings keeps the workspace, with the defaults.
    let reset = server.send("DELETE", "/chats/support/settings", None);
    assert_eq!(reset.status, 200, "{}", reset.text());
    assert_eq!(reset.json()["source"], "openAi");
    assert_eq!(reset.json()["apiKey"], Value::Null);
    assert_eq!(server.send("GET", "/chats", None).json()["total"], 2);
    assert_eq!(server.send("DELETE", "/chats/support", None).status, 204);
    assert_eq!(server.send("GET", "/chats/support", None).status, 404);
}

/// The index `chat` setting: shown with the feature on only, merged field by field, its
/// search parameters checked.
#[test]
fn the_index_chat_setting_merges_its_search_parameters() {
    let server = start();
    run_task(&server, "POST", "/indexes", &json!({"uid": "movies"}));
    let settings = server.send("GET", "/indexes/movies/settings", None).json();
    assert_eq!(
        settings.get("chat"),
        None,
        "hidden while the feature is off"
    );
    enable_chats(&server);
    let settings = server.send("GET", "/indexes/movies/settings", None).json();
    assert_eq!(settings["chat"]["documentTemplateMaxBytes"], 400);
    assert_eq!(settings["chat"]["searchParameters"], json!({}));
    run_task(
        &server,
        "PATCH",
        "/indexes/movies/settings/chat",
        &json!({"searchParameters": {"limit": 5, "sort": ["title:asc"]}}),
    );
    run_task(
        &server,
        "PATCH",
        "/indexes/movies/settings/chat",
        &json!({"searchParameters": {"distinct": "genre", "hybrid": {"embedder": "x"}}}),
    );
    let chat = server.send("GET", "/indexes/movies/settings/chat", None);
    assert_eq!(
        chat.text(),
        r#"{"description":"","documentTemplate":"{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}","documentTemplateMaxBytes":400,"searchParameters":{"hybrid":{"semanticRatio":0.5,"embedder":"x"},"limit":5,"sort":["title:asc"],"distinct":"genre"}}"#
    );
    let refused = server.send(
        "PATCH",
        "/indexes/movies/settings",
        Some(&json!({"chat": {"searchParameters": {"rankingScoreThreshold": 3}}})),
    );
    assert_error(
        &refused,
        400,
        "invalid_settings_index_chat",
        "Invalid value at `.chat.searchParameters.rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`.",
    );
}

/// Workspaces survive a restart, and a dump carries them (API key in clear) to another
/// instance.
#[test]
fn workspaces_survive_a_restart_and_travel_in_dumps() {
    let model = FakeModel::start(Box::new(|_| {
        Reply::Events(vec![chunk(
            json!([{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]),
        )])
    }));
    let server = start();
    enable_chats(&server);
    let settings = json!({"source": "vLlm", "baseUrl": model.base_url(),
        "apiKey": "sk-kept-across-restarts", "prompts": {"system": "Kept."}});
    assert_eq!(patch_workspace(&server, "kept", &settings).status, 200);
    let before = server.send("GET", "/chats/kept/settings", None).json();
    let data_directory = server.data_directory.clone();
    let scratch = server.kill_keeping_data();
    let options = Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_string(),
            "any".to_string(),
        ],
        ..Options::default()
    };
    let mut server = Server::start_on(&data_directory, &options);
    server.keep_scratch(scratch);
    assert_eq!(
        server.send("GET", "/chats/kept/settings", None).json(),
        before
    );

    let dump = server.send("POST", "/dumps", None);
    assert_eq!(dump.status, 202, "{}", dump.text());
    let task = server.wait_task(&dump.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    let dump_uid = task["details"]["dumpUid"].as_str().expect("a dump uid");
    let dump_file = data_directory
        .with_extension("dumps")
        .join(format!("{dump_uid}.dump"));
    let mut import_options = options.clone();
    import_options
        .extra_arguments
        .extend(["--import-dump".to_string(), dump_file.display().to_string()]);
    let imported = Server::start_with(import_options);
    assert_eq!(
        imported.send("GET", "/chats/kept/settings", None).json(),
        before
    );
    let events = stream_events(&complete(&imported, "kept", MASTER_KEY, "m"));
    assert_eq!(relayed_text(&events), "ok");
    let received = model.received();
    assert_eq!(
        received.last().expect("a request").header("authorization"),
        Some("Bearer sk-kept-across-restarts")
    );
    assert_eq!(
        received.last().expect("a request").body["messages"][0]["content"],
        "Kept."
    );
}

/// What the engine refuses of the model's query (a field that cannot be filtered) is the
/// model's answer, so it can correct itself; a filter that does not parse fails the call,
/// which the client also hears as an error event.
#[test]
fn a_refused_search_is_the_model_s_answer_and_a_broken_filter_fails_the_call() {
    let refused = FakeModel::start(searching_model(
        r#"{"index_uid":"movies","q":"","filter":"title = x"}"#,
    ));
    let broken = FakeModel::start(searching_model(
        r#"{"index_uid":"movies","q":"","filter":"genre = "}"#,
    ));
    let server = start();
    enable_chats(&server);
    add_movies(&server);
    patch_workspace(
        &server,
        "refused",
        &json!({"source": "vLlm", "baseUrl": refused.base_url()}),
    );
    patch_workspace(
        &server,
        "broken",
        &json!({"source": "vLlm", "baseUrl": broken.base_url()}),
    );

    let events = stream_events(&complete(&server, "refused", MASTER_KEY, "m"));
    let refusal = "Attribute `title` is not filterable. Available filterable attribute patterns are: `genre`.\n1:6 title = x";
    let received = refused.received();
    let messages = received[1].body["messages"].as_array().expect("messages");
    assert_eq!(
        messages.last().expect("the tool result")["content"],
        refusal
    );
    assert_eq!(
        calls_of(&events, "_meiliSearchSources"),
        [json!({"call_id": "call_1", "sources": []})]
    );
    assert!(error_events(&events).is_empty(), "{events:?}");

    let events = stream_events(&complete(&server, "broken", MASTER_KEY, "m"));
    let message = "Was expecting a value but instead got nothing.\n9:9 genre = ";
    let received = broken.received();
    let messages = received[1].body["messages"].as_array().expect("messages");
    assert_eq!(
        messages.last().expect("the tool result")["content"],
        format!("the search tool call failed with {message}")
    );
    assert!(calls_of(&events, "_meiliSearchSources").is_empty());
    let errors = error_events(&events);
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["error"]["code"], "400");
    assert_eq!(errors[0]["error"]["message"], message);
}
