//! Personalized search (`personalize`, `--experimental-personalization-api-key`) against a
//! Cohere-compatible rerank server this test starts on a loopback port: the hits come back
//! in the order it answers, it receives what Meilisearch 1.41 sends (prompt, documents,
//! model, key), the search falls back to its own order when the service answers 5xx or 429,
//! hangs past the budget or is down, a final refusal of the service is the search's error,
//! multi-search personalizes each query and federated search refuses it, every
//! `invalid_search_personalize*` refusal, the flag absent (`feature_not_enabled`), and the
//! `meilisearch_personalized_search_requests` gauge.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// The key the servers are started with.
const RERANK_KEY: &str = "cohere-test-key";
/// The path the rerank server is reached at.
const RERANK_PATH: &str = "/v1/rerank";
/// How long a hanging rerank server keeps a request unanswered.
const HANG: Duration = Duration::from_secs(40);
/// An answer that takes longer than this did not respect the search's budget (Meilisearch
/// would wait 30 s for a hanging service).
const FALLBACK_WITHIN: Duration = Duration::from_secs(10);
/// The fields of a hit that describe the match rather than the document.
const MATCH_FIELDS: [&str; 4] = [
    "_formatted",
    "_matchesPosition",
    "_rankingScore",
    "_rankingScoreDetails",
];

/// How the rerank server answers.
#[derive(Debug, Clone)]
enum Behaviour {
    /// The documents whose JSON contains the user context come first, the others after,
    /// each group in the order sent.
    ContextFirst,
    /// These indexes, as given.
    Fixed(Vec<u64>),
    /// This status and body.
    Status(u16, String),
    /// No answer for [`HANG`].
    Hang,
}

/// One request the rerank server received.
#[derive(Debug, Clone)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn documents(&self) -> Vec<String> {
        self.body["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|document| document.as_str().unwrap().to_owned())
            .collect()
    }
}

/// A Cohere-compatible rerank server on a loopback port.
struct Reranker {
    address: SocketAddr,
    behaviour: Arc<Mutex<Behaviour>>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Reranker {
    fn start(behaviour: Behaviour) -> Reranker {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let behaviour = Arc::new(Mutex::new(behaviour));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (shared_behaviour, shared_received) = (behaviour.clone(), received.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (behaviour, received) = (shared_behaviour.clone(), shared_received.clone());
                std::thread::spawn(move || serve(stream, &behaviour, &received));
            }
        });
        Reranker {
            address,
            behaviour,
            received,
        }
    }

    fn url(&self) -> String {
        format!("http://{}{RERANK_PATH}", self.address)
    }

    fn set(&self, behaviour: Behaviour) {
        *self.behaviour.lock().unwrap() = behaviour;
    }

    /// The requests received so far, emptied.
    fn take(&self) -> Vec<Received> {
        std::mem::take(&mut *self.received.lock().unwrap())
    }
}

/// Reads one request from `reader`; `None` at the end of the connection.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        let (name, value) = line.trim_end().split_once(':')?;
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().ok()?;
        }
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received {
        request_line: request_line.trim_end().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Answers the requests of one keep-alive connection.
fn serve(stream: TcpStream, behaviour: &Mutex<Behaviour>, received: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader) {
        let behaviour = behaviour.lock().unwrap().clone();
        let (status, answer) = match behaviour {
            Behaviour::ContextFirst => (200, context_first(&request.body).to_string()),
            Behaviour::Fixed(order) => (200, results(&order).to_string()),
            Behaviour::Status(status, body) => (status, body),
            Behaviour::Hang => {
                received.lock().unwrap().push(request);
                std::thread::sleep(HANG);
                return;
            }
        };
        received.lock().unwrap().push(request);
        let response = format!(
            "HTTP/1.1 {status} Status\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// Cohere's answer for `order`.
fn results(order: &[u64]) -> Value {
    let results: Vec<Value> = order
        .iter()
        .enumerate()
        .map(|(rank, index)| json!({"index": index, "relevance_score": 1.0 / (rank as f64 + 1.0)}))
        .collect();
    json!({"id": "rerank-test", "results": results, "meta": {"api_version": {"version": "1"}}})
}

/// The order of [`Behaviour::ContextFirst`] for a request body.
fn context_first(body: &Value) -> Value {
    let query = body["query"].as_str().unwrap_or_default();
    let context = query
        .strip_prefix("User Context: ")
        .unwrap_or_default()
        .split('\n')
        .next()
        .unwrap_or_default();
    let documents = body["documents"].as_array().cloned().unwrap_or_default();
    let mentions = |document: &Value| document.as_str().unwrap_or_default().contains(context);
    let mut order: Vec<u64> = Vec::new();
    for wanted in [true, false] {
        for (index, document) in documents.iter().enumerate() {
            if mentions(document) == wanted {
                order.push(index as u64);
            }
        }
    }
    results(&order)
}

/// A server whose personalization calls `url` with [`RERANK_KEY`], loopback allowed.
fn server_calling(url: &str) -> Server {
    server_with(vec![
        "--experimental-allowed-ip-networks".to_owned(),
        "any".to_owned(),
        "--experimental-personalization-api-key".to_owned(),
        RERANK_KEY.to_owned(),
        "--experimental-personalization-url".to_owned(),
        url.to_owned(),
    ])
}

fn server_with(extra_arguments: Vec<String>) -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments,
        ..Options::default()
    })
}

/// `movies`: six fruits, `color` filterable.
fn add_movies(server: &Server) {
    let settings = server.send(
        "PATCH",
        "/indexes/movies/settings",
        Some(&json!({"filterableAttributes": ["color"]})),
    );
    assert_eq!(settings.status, 202, "{}", settings.text());
    server.wait_task(settings.json()["taskUid"].clone());
    let documents = json!([
        {"id": 1, "title": "red apple", "color": "red"},
        {"id": 2, "title": "green apple", "color": "green"},
        {"id": 3, "title": "apple pie with red berries", "color": "red"},
        {"id": 4, "title": "green apple crumble", "color": "green"},
        {"id": 5, "title": "yellow apple", "color": "yellow"},
        {"id": 6, "title": "apple juice", "color": "yellow"},
    ]);
    let added = server.send("POST", "/indexes/movies/documents", Some(&documents));
    assert_eq!(added.status, 202, "{}", added.text());
    let task = server.wait_task(added.json()["taskUid"].clone());
    assert_eq!(task["status"], "succeeded", "{task}");
}

fn search(server: &Server, body: &Value) -> (u16, Value) {
    let response = server.send("POST", "/indexes/movies/search", Some(body));
    (response.status, response.json())
}

fn ids(result: &Value) -> Vec<u64> {
    result["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_u64().unwrap())
        .collect()
}

/// A hit as the rerank service is sent it.
fn document_text(hit: &Value) -> String {
    let mut document = hit.as_object().unwrap().clone();
    for field in MATCH_FIELDS {
        document.remove(field);
    }
    Value::Object(document).to_string()
}

/// The hits of `result` with the documents that mention `context` first.
fn expected_context_first(result: &Value, context: &str) -> Vec<u64> {
    let hits = result["hits"].as_array().unwrap();
    let mut order = Vec::new();
    for wanted in [true, false] {
        for hit in hits {
            if document_text(hit).contains(context) == wanted {
                order.push(hit["id"].as_u64().unwrap());
            }
        }
    }
    order
}

fn without_personalize(body: &Value) -> Value {
    let mut body = body.clone();
    body.as_object_mut().unwrap().remove("personalize");
    body
}

fn error_of(response: &Value) -> (String, String, String) {
    (
        response["code"].as_str().unwrap_or_default().to_owned(),
        response["type"].as_str().unwrap_or_default().to_owned(),
        response["message"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn hits_follow_the_rerank_order_and_keep_their_scores_totals_and_facets() {
    let reranker = Reranker::start(Behaviour::ContextFirst);
    let server = server_calling(&reranker.url());
    add_movies(&server);
    let body = json!({
        "q": "apple",
        "personalize": {"userContext": "green"},
        "showRankingScore": true,
        "attributesToRetrieve": ["id", "title"],
        "attributesToHighlight": ["title"],
        "facets": ["color"],
    });
    let (status, plain) = search(&server, &without_personalize(&body));
    assert_eq!(status, 200, "{plain}");
    assert!(reranker.take().is_empty(), "a plain search calls nobody");
    let (status, personalized) = search(&server, &body);
    assert_eq!(status, 200, "{personalized}");
    let expected = expected_context_first(&plain, "green");
    assert_ne!(expected, ids(&plain), "the rule changes the order");
    assert_eq!(ids(&personalized), expected);
    for hit in personalized["hits"].as_array().unwrap() {
        let same = plain["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|plain_hit| plain_hit["id"] == hit["id"])
            .unwrap();
        assert_eq!(hit, same, "a hit is unchanged, its score included");
    }
    for key in [
        "estimatedTotalHits",
        "facetDistribution",
        "facetStats",
        "limit",
        "offset",
        "query",
    ] {
        assert_eq!(personalized[key], plain[key], "{key}");
    }
    let received = reranker.take();
    assert_eq!(received.len(), 1, "{received:?}");
    let request = &received[0];
    assert_eq!(request.request_line, format!("POST {RERANK_PATH} HTTP/1.1"));
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {RERANK_KEY}").as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.body["model"], "rerank-english-v3.0");
    assert_eq!(request.body["query"], "User Context: green\nQuery: apple");
    let sent: Vec<String> = plain["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(document_text)
        .collect();
    assert_eq!(request.documents(), sent);
    assert!(
        request
            .documents()
            .iter()
            .all(|document| !document.contains("_formatted")
                && !document.contains("_rankingScore")
                && !document.contains("\"color\"")),
        "the documents as retrieved, without what describes the match: {:?}",
        request.documents()
    );
    assert_eq!(
        request.body.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["query", "documents", "model"]
    );
}

#[test]
fn only_the_page_is_reranked_and_the_query_is_sent_as_given() {
    let reranker = Reranker::start(Behaviour::Fixed(vec![1, 0]));
    let server = server_calling(&reranker.url());
    add_movies(&server);
    let page = json!({"q": "apple", "offset": 2, "limit": 2, "personalize": {"userContext": "u"}});
    let (_, plain) = search(&server, &without_personalize(&page));
    let (status, personalized) = search(&server, &page);
    assert_eq!(status, 200, "{personalized}");
    let plain_ids = ids(&plain);
    assert_eq!(plain_ids.len(), 2);
    assert_eq!(ids(&personalized), [plain_ids[1], plain_ids[0]]);
    assert_eq!(
        personalized["estimatedTotalHits"],
        plain["estimatedTotalHits"]
    );
    assert_eq!(personalized["offset"], 2);
    let received = reranker.take();
    assert_eq!(received[0].documents().len(), 2, "only the page is sent");

    let pages =
        json!({"q": "apple", "page": 2, "hitsPerPage": 2, "personalize": {"userContext": "u"}});
    let (_, plain) = search(&server, &without_personalize(&pages));
    let (_, personalized) = search(&server, &pages);
    let plain_ids = ids(&plain);
    assert_eq!(ids(&personalized), [plain_ids[1], plain_ids[0]]);
    for key in ["totalHits", "totalPages", "page", "hitsPerPage"] {
        assert_eq!(personalized[key], plain[key], "{key}");
    }
    reranker.take();

    let (status, _) = search(
        &server,
        &json!({"personalize": {"userContext": "no query"}}),
    );
    assert_eq!(status, 200);
    let (status, _) = search(
        &server,
        &json!({"q": "", "personalize": {"userContext": "empty"}}),
    );
    assert_eq!(status, 200);
    let get = server.send(
        "GET",
        "/indexes/movies/search?q=apple&limit=3&personalizeUserContext=from%20get",
        None,
    );
    assert_eq!(get.status, 200, "{}", get.text());
    let queries: Vec<Value> = reranker
        .take()
        .iter()
        .map(|request| request.body["query"].clone())
        .collect();
    assert_eq!(
        queries,
        [
            json!("User Context: no query"),
            json!("User Context: empty\nQuery: "),
            json!("User Context: from get\nQuery: apple"),
        ]
    );

    // An index the service does not know is skipped; a hit it leaves out is left out.
    reranker.set(Behaviour::Fixed(vec![2, 9, 0]));
    let (_, plain) = search(&server, &json!({"q": "apple", "limit": 3}));
    let (_, personalized) = search(
        &server,
        &json!({"q": "apple", "limit": 3, "personalize": {"userContext": "u"}}),
    );
    let plain_ids = ids(&plain);
    assert_eq!(ids(&personalized), [plain_ids[2], plain_ids[0]]);

    // No hit, no call.
    reranker.take();
    let (status, empty) = search(
        &server,
        &json!({"q": "zzzzqqq", "personalize": {"userContext": "u"}}),
    );
    assert_eq!((status, ids(&empty).len()), (200, 0));
    assert!(reranker.take().is_empty());
}

#[test]
fn a_failing_slow_or_absent_service_leaves_the_order_within_the_budget() {
    let reranker = Reranker::start(Behaviour::Status(500, "{\"message\":\"down\"}".to_owned()));
    let server = server_calling(&reranker.url());
    add_movies(&server);
    let body = json!({"q": "apple", "personalize": {"userContext": "green"}});
    let (_, plain) = search(&server, &without_personalize(&body));

    let started = Instant::now();
    let (status, answer) = search(&server, &body);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(ids(&answer), ids(&plain), "5xx: the search's own order");
    assert!(
        started.elapsed() < FALLBACK_WITHIN,
        "{:?}",
        started.elapsed()
    );
    let attempts = reranker.take().len();
    assert!(
        (2..=11).contains(&attempts),
        "5xx is retried: {attempts} attempts"
    );

    reranker.set(Behaviour::Status(429, "{}".to_owned()));
    let (status, answer) = search(&server, &body);
    assert_eq!(
        (status, ids(&answer)),
        (200, ids(&plain)),
        "429: the search's order"
    );
    assert!(reranker.take().len() >= 2, "429 is retried");

    // A hanging service is given the index's budget, not Meilisearch's 30 s per attempt.
    let cutoff = server.send(
        "PATCH",
        "/indexes/movies/settings",
        Some(&json!({"searchCutoffMs": 400})),
    );
    server.wait_task(cutoff.json()["taskUid"].clone());
    reranker.set(Behaviour::Hang);
    let started = Instant::now();
    let (status, answer) = search(&server, &body);
    let elapsed = started.elapsed();
    assert_eq!(
        (status, ids(&answer)),
        (200, ids(&plain)),
        "hang: the search's order"
    );
    assert!(elapsed < FALLBACK_WITHIN, "{elapsed:?}");
    assert_eq!(
        reranker.take().len(),
        1,
        "the one attempt hung until the budget ran out"
    );

    // Nobody listening.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down = server_calling(&format!("http://{closed}{RERANK_PATH}"));
    add_movies(&down);
    let started = Instant::now();
    let (status, answer) = search(&down, &body);
    assert_eq!(
        (status, ids(&answer)),
        (200, ids(&plain)),
        "down: the search's order"
    );
    assert!(
        started.elapsed() < FALLBACK_WITHIN,
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_final_refusal_of_the_service_is_the_search_error() {
    let reranker = Reranker::start(Behaviour::Status(
        401,
        "{\"message\":\"invalid api token\"}".to_owned(),
    ));
    let server = server_calling(&reranker.url());
    add_movies(&server);
    let body = json!({"q": "apple", "personalize": {"userContext": "green"}});
    let cases = [
        (
            Behaviour::Status(401, "{\"message\":\"invalid api token\"}".to_owned()),
            403,
            (
                "remote_invalid_api_key",
                "auth",
                "Personalization service: Unauthorized: invalid API key",
            ),
        ),
        (
            Behaviour::Status(400, "{\"message\":\"too many documents\"}".to_owned()),
            400,
            (
                "remote_bad_request",
                "invalid_request",
                "Personalization service: Bad request: {\"message\":\"too many documents\"}",
            ),
        ),
        (
            Behaviour::Status(404, "not here".to_owned()),
            502,
            (
                "remote_bad_response",
                "system",
                "Personalization service: Cohere API error: Status 404: not here",
            ),
        ),
    ];
    for (behaviour, status, (code, kind, message)) in cases {
        reranker.set(behaviour.clone());
        let (answered, error) = search(&server, &body);
        assert_eq!(answered, status, "{behaviour:?}: {error}");
        assert_eq!(
            error_of(&error),
            (code.to_owned(), kind.to_owned(), message.to_owned()),
            "{behaviour:?}"
        );
        assert_eq!(reranker.take().len(), 1, "{behaviour:?} is not retried");
    }
    let multi = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"queries": [
            {"indexUid": "movies", "q": "apple", "personalize": {"userContext": "x"}},
        ]})),
    );
    assert_eq!(multi.status, 502, "{}", multi.text());
    assert_eq!(
        multi.json()["message"],
        "Inside `.queries[0]`: Personalization service: Cohere API error: Status 404: not here"
    );
}

#[test]
fn multi_search_personalizes_each_query_and_federation_refuses_it() {
    let reranker = Reranker::start(Behaviour::ContextFirst);
    let server = server_calling(&reranker.url());
    add_movies(&server);
    let (_, plain) = search(&server, &json!({"q": "apple"}));
    let response = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"queries": [
            {"indexUid": "movies", "q": "apple", "personalize": {"userContext": "green"}},
            {"indexUid": "movies", "q": "apple"},
            {"indexUid": "movies", "q": "apple", "personalize": {"userContext": "yellow"}},
        ]})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let results = response.json()["results"].clone();
    assert_eq!(ids(&results[0]), expected_context_first(&plain, "green"));
    assert_eq!(ids(&results[1]), ids(&plain));
    assert_eq!(ids(&results[2]), expected_context_first(&plain, "yellow"));
    let contexts: Vec<Value> = reranker
        .take()
        .iter()
        .map(|request| request.body["query"].clone())
        .collect();
    assert_eq!(
        contexts,
        [
            json!("User Context: green\nQuery: apple"),
            json!("User Context: yellow\nQuery: apple")
        ]
    );

    let federated = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {}, "queries": [
            {"indexUid": "movies", "q": "apple"},
            {"indexUid": "movies", "q": "apple", "personalize": {"userContext": "green"}},
        ]})),
    );
    assert_eq!(federated.status, 400);
    assert_eq!(
        error_of(&federated.json()),
        (
            "invalid_multi_search_query_personalization".to_owned(),
            "invalid_request".to_owned(),
            "Inside `.queries[1]`: Using `.personalize` is not allowed in federated queries.\n - Hint: remove `personalize` from the query or remove `federation` from the request\n - Hint: pass `federation.personalize` for personalization in federated search".to_owned()
        )
    );
    // Refused before the index is looked up.
    let missing = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {}, "queries": [
            {"indexUid": "nope", "personalize": {"userContext": "green"}},
        ]})),
    );
    assert_eq!(
        missing.json()["code"],
        "invalid_multi_search_query_personalization"
    );
    let in_federation = server.send(
        "POST",
        "/multi-search",
        Some(
            &json!({"federation": {"personalize": {"userContext": "green"}}, "queries": [
                {"indexUid": "movies", "q": "apple"},
            ]}),
        ),
    );
    assert_eq!(in_federation.status, 400);
    assert_eq!(
        error_of(&in_federation.json()),
        (
            "bad_request".to_owned(),
            "invalid_request".to_owned(),
            "Unknown field `personalize` inside `.federation`: expected one of `limit`, `offset`, `page`, `hitsPerPage`, `facetsByIndex`, `mergeFacets`, `distinct`, `showPerformanceDetails`".to_owned()
        )
    );
    assert!(reranker.take().is_empty(), "a refused search calls nobody");
}

#[test]
fn every_invalid_personalize_is_refused_with_meilisearch_message() {
    let reranker = Reranker::start(Behaviour::ContextFirst);
    let server = server_calling(&reranker.url());
    add_movies(&server);
    let personalize = "invalid_search_personalize";
    let user_context = "invalid_search_personalize_user_context";
    let cases = [
        (
            json!("green"),
            personalize,
            "Invalid value type at `.personalize`: expected an object, but found a string: `\"green\"`",
        ),
        (
            json!([]),
            personalize,
            "Invalid value type at `.personalize`: expected an object, but found an array: `[]`",
        ),
        (
            json!({}),
            personalize,
            "Missing field `userContext` inside `.personalize`",
        ),
        (
            json!({"userContext": "a", "x": 1}),
            personalize,
            "Unknown field `x` inside `.personalize`: expected one of `userContext`",
        ),
        (
            json!({"userContext": 1}),
            user_context,
            "Invalid value type at `.personalize.userContext`: expected a string, but found a positive integer: `1`",
        ),
        (
            json!({"userContext": null}),
            user_context,
            "Invalid value type at `.personalize.userContext`: expected a string, but found null",
        ),
    ];
    for (value, code, message) in cases {
        let (status, error) = search(&server, &json!({"q": "apple", "personalize": value}));
        assert_eq!(status, 400, "{value}: {error}");
        assert_eq!(
            error_of(&error),
            (
                code.to_owned(),
                "invalid_request".to_owned(),
                message.to_owned()
            ),
            "{value}"
        );
        let multi = server.send(
            "POST",
            "/multi-search",
            Some(&json!({"queries": [{"indexUid": "movies", "personalize": value}]})),
        );
        assert_eq!(multi.status, 400, "{value}");
        assert_eq!(multi.json()["code"], code, "{value}");
        assert_eq!(
            multi.json()["message"],
            message.replace("`.personalize", "`.queries[0].personalize"),
            "{value}"
        );
    }
    let (status, null) = search(&server, &json!({"q": "apple", "personalize": null}));
    assert_eq!(status, 200, "{null}");
    assert!(
        reranker.take().is_empty(),
        "`personalize: null` is no personalization"
    );
}

#[test]
fn without_a_key_personalize_is_refused_as_meilisearch_refuses_it() {
    let message = "reranking search results requires enabling the `personalization` experimental feature. See https://github.com/orgs/meilisearch/discussions/866";
    let reranker = Reranker::start(Behaviour::ContextFirst);
    for arguments in [
        vec![],
        vec![
            "--experimental-personalization-api-key".to_owned(),
            "   ".to_owned(),
            "--experimental-personalization-url".to_owned(),
            reranker.url(),
        ],
    ] {
        let server = server_with(arguments.clone());
        let (status, error) = search(&server, &json!({"personalize": {"userContext": "x"}}));
        assert_eq!(status, 404, "the index is looked up first: {error}");
        add_movies(&server);
        let (status, plain) = search(&server, &json!({"q": "apple"}));
        assert_eq!(status, 200, "{plain}");
        for body in [
            json!({"q": "apple", "personalize": {"userContext": "x"}}),
            json!({"q": "zzzzqqq", "personalize": {"userContext": ""}}),
        ] {
            let (status, error) = search(&server, &body);
            assert_eq!(status, 400, "{arguments:?} {body}");
            assert_eq!(
                error_of(&error),
                (
                    "feature_not_enabled".to_owned(),
                    "invalid_request".to_owned(),
                    message.to_owned()
                )
            );
        }
        let get = server.send(
            "GET",
            "/indexes/movies/search?q=apple&personalizeUserContext=x",
            None,
        );
        assert_eq!(get.status, 400);
        assert_eq!(get.json()["code"], "feature_not_enabled");
        let multi = server.send(
            "POST",
            "/multi-search",
            Some(&json!({"queries": [
                {"indexUid": "movies", "q": "apple"},
                {"indexUid": "movies", "q": "apple", "personalize": {"userContext": "x"}},
            ]})),
        );
        assert_eq!(multi.status, 400);
        assert_eq!(
            multi.json()["message"],
            format!("Inside `.queries[1]`: {message}")
        );
    }
    assert!(reranker.take().is_empty(), "a blank key calls nobody");
}

#[test]
fn the_loopback_service_is_refused_without_the_allowed_networks_and_the_order_kept() {
    let reranker = Reranker::start(Behaviour::ContextFirst);
    let server = server_with(vec![
        "--experimental-personalization-api-key".to_owned(),
        RERANK_KEY.to_owned(),
        "--experimental-personalization-url".to_owned(),
        reranker.url(),
    ]);
    add_movies(&server);
    let (_, plain) = search(&server, &json!({"q": "apple"}));
    let started = Instant::now();
    let (status, answer) = search(
        &server,
        &json!({"q": "apple", "personalize": {"userContext": "green"}}),
    );
    assert_eq!((status, ids(&answer)), (200, ids(&plain)));
    assert!(started.elapsed() < FALLBACK_WITHIN);
    assert!(reranker.take().is_empty(), "the IP policy refuses loopback");
}

/// The value of `meilisearch_personalized_search_requests`, `None` when the family is absent.
fn personalized_gauge(server: &Server) -> Option<f64> {
    let response = server.send("GET", "/metrics", None);
    assert_eq!(response.status, 200, "{}", response.text());
    response
        .text()
        .lines()
        .find_map(|line| line.strip_prefix("meilisearch_personalized_search_requests "))
        .map(|value| value.trim().parse().unwrap())
}

#[test]
fn personalized_searches_of_one_index_are_counted_in_metrics() {
    let server = server_with(vec![]);
    add_movies(&server);
    let features = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"metrics": true})),
    );
    assert_eq!(features.status, 200);
    search(&server, &json!({"q": "apple"}));
    assert_eq!(personalized_gauge(&server), None, "absent before the first");
    // Refused for want of a key, still counted, as Meilisearch counts them.
    let (status, _) = search(&server, &json!({"personalize": {"userContext": "x"}}));
    assert_eq!(status, 400);
    server.send(
        "GET",
        "/indexes/movies/search?personalizeUserContext=y",
        None,
    );
    server.send(
        "POST",
        "/multi-search",
        Some(&json!({"queries": [{"indexUid": "movies", "personalize": {"userContext": "x"}}]})),
    );
    search(&server, &json!({"personalize": "malformed"}));
    assert_eq!(personalized_gauge(&server), Some(2.0));
    let text = server.send("GET", "/metrics", None).text();
    assert!(text.contains(
        "# HELP meilisearch_personalized_search_requests Meilisearch number of search requests with personalization\n# TYPE meilisearch_personalized_search_requests gauge\n"
    ));
}

#[test]
fn federated_refusals_name_the_query_by_its_number_as_meilisearch_does() {
    let server = server_with(vec![]);
    add_movies(&server);
    let refusal = |body: Value| {
        let response = server.send("POST", "/multi-search", Some(&body));
        assert_eq!(response.status, 400, "{}", response.text());
        let error = response.json();
        (
            error["code"].as_str().unwrap().to_owned(),
            error["message"].as_str().unwrap().to_owned(),
        )
    };
    let plain = json!({"indexUid": "movies", "q": "apple"});
    let cases = [
        (
            json!({"indexUid": "movies", "limit": 2}),
            "invalid_multi_search_query_pagination",
            "Inside `.queries[1]`: Using pagination options is not allowed in federated queries.\n - Hint: remove `limit` from the query or remove `federation` from the request\n - Hint: pass `federation.limit` and `federation.offset` for pagination in federated search",
        ),
        (
            json!({"indexUid": "movies", "facets": ["color"]}),
            "invalid_multi_search_query_facets",
            "Inside `.queries[1]`: Using facet options is not allowed in federated queries.\n - Hint: remove `facets` from the query or remove `federation` from the request\n - Hint: pass `federation.facetsByIndex.movies: [\"color\"]` for facets in federated search",
        ),
        (
            json!({"indexUid": "movies", "showPerformanceDetails": true}),
            "invalid_multi_search_query_show_performance_details",
            "Inside `.queries[1]`: Using `.showPerformanceDetails` is not allowed in federated queries.\n - Hint: remove `showPerformanceDetails` from the query or remove `federation` from the request",
        ),
    ];
    for (query, code, message) in cases {
        let (answered_code, answered_message) =
            refusal(json!({"federation": {}, "queries": [plain, query]}));
        assert_eq!(
            (answered_code.as_str(), answered_message.as_str()),
            (code, message)
        );
    }
    let (code, message) = refusal(json!({"federation": {"distinct": "color"}, "queries": [
        plain, {"indexUid": "movies", "distinct": "color"},
    ]}));
    assert_eq!(code, "invalid_multi_search_distinct");
    assert_eq!(
        message,
        "Inside `.queries[1]`: Using `distinct` options is not allowed in federated queries when it also appears in `.federation.distinct`.\n - Hint: remove `distinct` from the query or remove `federation` from the request\n  - Note: `distinct` at the query level is discouraged in federated search."
    );
    let (code, message) = refusal(json!({"queries": [
        plain, {"indexUid": "movies", "federationOptions": {"weight": 1.0}},
    ]}));
    assert_eq!(code, "invalid_multi_search_federation_options");
    assert_eq!(
        message,
        "Inside `.queries[1]`: Using `federationOptions` is not allowed in a non-federated search.\n - Hint: remove `federationOptions` from the query or add `federation` to the request."
    );
    // Meilisearch's order: `personalize` before `showPerformanceDetails`.
    let (code, _) = refusal(json!({"federation": {}, "queries": [
        {"indexUid": "movies", "showPerformanceDetails": true, "personalize": {"userContext": "x"}},
    ]}));
    assert_eq!(code, "invalid_multi_search_query_personalization");
}

#[test]
fn a_networked_search_is_reranked_once_here_and_its_copies_carry_no_personalize() {
    let reranker = Reranker::start(Behaviour::ContextFirst);
    let a = server_calling(&reranker.url());
    let b = server_with(vec![]);
    for server in [&a, &b] {
        add_movies(server);
        let features = server.send(
            "PATCH",
            "/experimental-features",
            Some(&json!({"network": true})),
        );
        assert_eq!(features.status, 200, "{}", features.text());
    }
    let network = a.send(
        "PATCH",
        "/network",
        Some(&json!({"self": "a", "remotes": {
            "a": {"url": a.url(), "searchApiKey": MASTER_KEY},
            "b": {"url": b.url(), "searchApiKey": MASTER_KEY}}})),
    );
    assert_eq!(network.status, 200, "{}", network.text());
    let body = json!({"q": "apple", "useNetwork": true, "limit": 8,
                      "personalize": {"userContext": "green"}});
    let (status, plain) = search(&a, &without_personalize(&body));
    assert_eq!(status, 200, "{plain}");
    assert_eq!(plain["hits"].as_array().unwrap().len(), 8, "{plain}");
    let (status, personalized) = search(&a, &body);
    assert_eq!(status, 200, "{personalized}");
    assert_eq!(
        personalized["remoteErrors"],
        json!({}),
        "b was sent no `personalize`"
    );
    let remotes = |result: &Value| -> Vec<(u64, Value)> {
        result["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| {
                (
                    hit["id"].as_u64().unwrap(),
                    hit["_federation"]["remote"].clone(),
                )
            })
            .collect()
    };
    let by_context = expected_context_first(&plain, "green");
    assert_eq!(
        remotes(&personalized)
            .iter()
            .map(|(id, _)| *id)
            .collect::<Vec<_>>(),
        by_context
    );
    assert_eq!(
        personalized["estimatedTotalHits"],
        plain["estimatedTotalHits"]
    );
    let received = reranker.take();
    assert_eq!(
        received.len(),
        1,
        "one rerank of the merged page: {received:?}"
    );
    // The weighted score of a local hit may differ in its last bit between two searches.
    let comparable = |text: &str| -> Value {
        let mut document: Value = serde_json::from_str(text).unwrap();
        document["_federation"]
            .as_object_mut()
            .unwrap()
            .remove("weightedRankingScore");
        document
    };
    let sent: Vec<Value> = plain["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| comparable(&document_text(hit)))
        .collect();
    let received_documents: Vec<Value> = received[0]
        .documents()
        .iter()
        .map(|text| comparable(text))
        .collect();
    assert_eq!(
        received_documents, sent,
        "the merged page, `_federation` included"
    );
}
