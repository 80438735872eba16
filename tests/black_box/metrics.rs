//! `GET /metrics`: Meilisearch's `feature_not_enabled` while the `metrics` feature is off;
//! once it is on (by `PATCH /experimental-features` or `--experimental-enable-metrics`),
//! Prometheus text whose counters follow the requests really sent and whose gauges follow
//! the documents really indexed; a key restricted to some indexes is refused with
//! Meilisearch's 403.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;

use common::{HttpResponse, MASTER_KEY, Options, Server, json_request, request};
use serde_json::{Value, json};

/// One sample of the text: its metric name and labels, and its value.
type Samples = BTreeMap<(String, BTreeMap<String, String>), f64>;

/// A scrape, parsed.
struct Scrape {
    samples: Samples,
    /// Family name → its `# TYPE`.
    types: BTreeMap<String, String>,
    /// Family names that have a `# HELP` line.
    helped: Vec<String>,
}

impl Scrape {
    /// The value of `name` with exactly `labels`, if the scrape has it.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let labels = labels
            .iter()
            .map(|(label, value)| ((*label).to_owned(), (*value).to_owned()))
            .collect();
        self.samples.get(&(name.to_owned(), labels)).copied()
    }

    /// The value of `name` with `labels`, 0 when the series is not there (yet).
    fn value_or_zero(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels).unwrap_or(0.0)
    }

    /// Every series of `name`.
    fn series(&self, name: &str) -> Vec<(&BTreeMap<String, String>, f64)> {
        self.samples
            .iter()
            .filter(|((sample, _), _)| sample == name)
            .map(|((_, labels), value)| (labels, *value))
            .collect()
    }

    /// The sum of every series of `name`.
    fn total(&self, name: &str) -> f64 {
        self.series(name).iter().map(|(_, value)| value).sum()
    }
}

/// Parses the text exposition format, checking its grammar as it goes: every sample
/// belongs to a family announced by `# HELP` and `# TYPE` lines before it.
fn parse(text: &str) -> Scrape {
    let mut scrape = Scrape {
        samples: BTreeMap::new(),
        types: BTreeMap::new(),
        helped: Vec::new(),
    };
    let mut current_family = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest
                .split(' ')
                .next()
                .expect("a HELP line names its family");
            scrape.helped.push(name.to_owned());
            current_family = name.to_owned();
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().expect("a TYPE line names its family");
            let kind = parts.next().expect("a TYPE line gives a type");
            assert_eq!(name, current_family, "TYPE follows its HELP: {line}");
            scrape.types.insert(name.to_owned(), kind.to_owned());
            continue;
        }
        assert!(!line.is_empty(), "no blank line in the text");
        let (series, value) = line.rsplit_once(' ').expect("a sample is `series value`");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            other => other.parse().unwrap_or_else(|_| panic!("a number: {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (
                name,
                parse_labels(rest.strip_suffix('}').expect("labels close")),
            ),
            None => (series, BTreeMap::new()),
        };
        assert!(
            name.starts_with(&current_family),
            "{name} belongs to the family announced before it ({current_family})"
        );
        scrape.samples.insert((name.to_owned(), labels), value);
    }
    scrape
}

/// `a="x",b="y"` (values without escapes: the ones the tests use have none).
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").expect("label=\"value\"");
        let end = after.find('"').expect("a closing quote");
        labels.insert(name.to_owned(), after[..end].to_owned());
        rest = after[end + 1..].trim_start_matches(',');
    }
    labels
}

/// A server of two cores whose indexes have a shard on each core (one shard is the default
/// on two cores), so the per-shard series are checked on both.
fn start() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments: vec![
            "--shards-per-index".to_owned(),
            "2".to_owned(),
            "--documents-per-shard".to_owned(),
            "0".to_owned(),
        ],
        ..Options::default()
    })
}

fn enable_metrics(server: &Server) {
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"metrics": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["metrics"], true);
}

fn scrape(server: &Server) -> Scrape {
    let response = server.send("GET", "/metrics", None);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4")
    );
    parse(&response.text())
}

fn feature_not_enabled() -> Value {
    json!({
        "message": "Getting metrics requires enabling the `metrics` experimental feature. See https://github.com/meilisearch/product/discussions/625",
        "code": "feature_not_enabled",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#feature_not_enabled",
    })
}

#[test]
fn metrics_answer_feature_not_enabled_until_the_feature_is_on() {
    let server = start();
    let response = server.send("GET", "/metrics", None);
    assert_eq!(response.status, 400);
    assert_eq!(response.json(), feature_not_enabled());

    enable_metrics(&server);
    let scrape = scrape(&server);
    // The refused scrape was counted, as Meilisearch counts every request.
    assert_eq!(
        scrape.value(
            "meilisearch_http_requests_total",
            &[("method", "GET"), ("path", "/metrics"), ("status", "400")]
        ),
        Some(1.0)
    );
    for family in [
        "meilisearch_db_size_bytes",
        "meilisearch_used_db_size_bytes",
        "meilisearch_index_count",
        "meilisearch_is_indexing",
        "meilisearch_nb_tasks",
        "meilisearch_search_queue_size",
        "meilisearch_searches_running",
        "meilisearch_searches_waiting_to_be_processed",
        "meilisearch_task_queue_latency_seconds",
        "meilisearch_task_queue_max_size",
        "meilisearch_task_queue_used_size",
        "meilisearch_task_queue_size_until_stop_registering",
        "meilisearch_http_requests_total",
        "coresearch_core_http_requests_total",
        "coresearch_core_searches_running",
        "coresearch_core_searches_waiting",
        "coresearch_core_write_queue_depth",
        "coresearch_core_mesh_round_trip_seconds",
        "coresearch_core_major_page_faults_total",
        "coresearch_core_open_connections",
        "coresearch_open_stores",
        "coresearch_open_stores_max",
        "coresearch_stores_opened_total",
        "coresearch_stores_closed_total",
    ] {
        assert!(
            scrape.helped.iter().any(|name| name == family),
            "{family} is exported"
        );
    }
    assert_eq!(scrape.types["meilisearch_http_requests_total"], "counter");
    assert_eq!(scrape.types["meilisearch_nb_tasks"], "gauge");
    assert_eq!(
        scrape.types["coresearch_core_mesh_round_trip_seconds"],
        "histogram"
    );
    // Every status and every type is listed, even at 0.
    for status in ["enqueued", "processing", "succeeded", "failed", "canceled"] {
        assert_eq!(
            scrape.value(
                "meilisearch_nb_tasks",
                &[("kind", "statuses"), ("value", status)]
            ),
            Some(0.0),
            "{status}"
        );
    }
    assert_eq!(
        scrape.value(
            "meilisearch_nb_tasks",
            &[("kind", "types"), ("value", "documentAdditionOrUpdate")]
        ),
        Some(0.0)
    );
    assert_eq!(scrape.value("meilisearch_index_count", &[]), Some(0.0));
    assert_eq!(
        scrape.value("meilisearch_search_queue_size", &[]),
        Some(1000.0)
    );
    // One series per core.
    assert_eq!(
        scrape.series("coresearch_core_http_requests_total").len(),
        2
    );
}

#[test]
fn counters_and_gauges_follow_real_requests_and_real_indexing() {
    let server = start();
    // Sent before the feature is on: counted, but not timed.
    for _ in 0..2 {
        assert_eq!(server.send("GET", "/version", None).status, 200);
    }
    enable_metrics(&server);
    let before = scrape(&server);
    let health = [("method", "GET"), ("path", "/health"), ("status", "200")];
    let version = [("method", "GET"), ("path", "/version"), ("status", "200")];
    assert_eq!(
        before.value("meilisearch_http_requests_total", &version),
        Some(2.0)
    );
    assert_eq!(
        before.value(
            "meilisearch_http_response_time_seconds_count",
            &[("method", "GET"), ("path", "/version")]
        ),
        None,
        "requests sent while the feature was off are not timed"
    );

    for _ in 0..3 {
        assert_eq!(server.raw(&request("GET", "/health", None)).status, 200);
    }
    let documents: Vec<Value> = (0..40)
        .map(|id| json!({"id": id, "title": format!("movie number {id}")}))
        .collect();
    let added = server.send("POST", "/indexes/movies/documents", Some(&json!(documents)));
    assert_eq!(added.status, 202, "{}", added.text());
    let task = server.wait_task(added.json()["taskUid"].clone());
    assert_eq!(task["status"], "succeeded", "{task}");
    let search = server.send(
        "POST",
        "/indexes/movies/search",
        Some(&json!({"q": "movie"})),
    );
    assert_eq!(search.status, 200);
    let missing = server.send("POST", "/indexes/missing/search", Some(&json!({"q": "x"})));
    assert_eq!(missing.status, 404);
    assert_eq!(server.send("GET", "/not-a-route", None).status, 404);
    assert_eq!(server.send("PUT", "/health", None).status, 405);

    let after = scrape(&server);
    let delta = |labels: &[(&str, &str)]| {
        after.value_or_zero("meilisearch_http_requests_total", labels)
            - before.value_or_zero("meilisearch_http_requests_total", labels)
    };
    assert_eq!(delta(&health), 3.0);
    assert_eq!(
        delta(&[
            ("method", "POST"),
            ("path", "/indexes/{index_uid}/documents"),
            ("status", "202")
        ]),
        1.0
    );
    assert_eq!(
        delta(&[
            ("method", "POST"),
            ("path", "/indexes/{index_uid}/search"),
            ("status", "200")
        ]),
        1.0
    );
    assert_eq!(
        delta(&[
            ("method", "POST"),
            ("path", "/indexes/{index_uid}/search"),
            ("status", "404")
        ]),
        1.0
    );
    assert!(
        delta(&[
            ("method", "GET"),
            ("path", "/tasks/{task_id}"),
            ("status", "200")
        ]) >= 1.0,
        "wait_task read the task"
    );
    assert_eq!(
        delta(&[
            ("method", "GET"),
            ("path", "/not-a-route"),
            ("status", "404")
        ]),
        1.0,
        "a path of no route is counted as sent"
    );
    assert_eq!(
        delta(&[("method", "PUT"), ("path", "/health"), ("status", "405")]),
        1.0
    );
    // The previous scrape is counted by this one, not by itself.
    assert_eq!(
        after.value_or_zero(
            "meilisearch_http_requests_total",
            &[("method", "GET"), ("path", "/metrics"), ("status", "200")]
        ),
        1.0
    );
    // Timed while the feature is on: three health checks, in cumulative buckets.
    let timed = [("method", "GET"), ("path", "/health")];
    assert_eq!(
        after.value("meilisearch_http_response_time_seconds_count", &timed),
        Some(3.0)
    );
    let mut previous = 0.0;
    for bound in [
        "0.005", "0.01", "0.025", "0.05", "0.075", "0.1", "0.25", "0.5", "0.75", "1", "2.5", "5",
        "7.5", "10", "+Inf",
    ] {
        let bucket = after
            .value(
                "meilisearch_http_response_time_seconds_bucket",
                &[("method", "GET"), ("path", "/health"), ("le", bound)],
            )
            .unwrap_or_else(|| panic!("bucket {bound}"));
        assert!(bucket >= previous, "buckets are cumulative");
        previous = bucket;
    }
    assert_eq!(previous, 3.0, "+Inf holds every observation");
    assert_eq!(
        after.value(
            "meilisearch_http_response_time_seconds_count",
            &[("method", "GET"), ("path", "/not-a-route")]
        ),
        None,
        "a path of no route is not timed"
    );
    // Each core counts its own requests; together they are the instance's.
    assert_eq!(
        after.total("coresearch_core_http_requests_total"),
        after.total("meilisearch_http_requests_total")
    );

    // The indexed documents and the task.
    assert_eq!(after.value("meilisearch_index_count", &[]), Some(1.0));
    assert_eq!(
        after.value("meilisearch_index_docs_count", &[("index", "movies")]),
        Some(40.0)
    );
    assert_eq!(
        after.value(
            "meilisearch_nb_tasks",
            &[("kind", "indexes"), ("value", "movies")]
        ),
        Some(1.0)
    );
    assert_eq!(
        after.value(
            "meilisearch_nb_tasks",
            &[("kind", "statuses"), ("value", "succeeded")]
        ),
        Some(1.0)
    );
    assert_eq!(
        after.value(
            "meilisearch_nb_tasks",
            &[("kind", "types"), ("value", "documentAdditionOrUpdate")]
        ),
        Some(1.0)
    );
    assert_eq!(after.value("meilisearch_is_indexing", &[]), Some(0.0));
    assert!(after.value("meilisearch_last_update", &[]).is_some());
    assert!(
        !after
            .series("meilisearch_last_finished_batches_progress_trace_ms")
            .is_empty(),
        "the finished batch's steps"
    );
    // The write's time to visibility: one observation, the time its task took from
    // registration to the end of its batch.
    assert_eq!(
        after.value("coresearch_write_visibility_seconds_count", &[]),
        Some(1.0)
    );
    let visible_after = after
        .value("coresearch_write_visibility_seconds_sum", &[])
        .expect("the sum");
    let task_seconds = seconds_between(&task["enqueuedAt"], &task["finishedAt"]);
    assert!(
        (visible_after - task_seconds).abs() < 0.001,
        "{visible_after} against the task's {task_seconds}"
    );
    assert_eq!(
        after.value(
            "coresearch_write_visibility_seconds_bucket",
            &[("le", "+Inf")]
        ),
        Some(1.0)
    );
    // The default target, and no batch past it now that the queue is quiet.
    assert_eq!(
        after.value("coresearch_write_visibility_target_seconds", &[]),
        Some(30.0)
    );
    assert_eq!(after.value("coresearch_writes_overdue", &[]), Some(0.0));
    let database = after
        .value("meilisearch_db_size_bytes", &[])
        .expect("the size");
    let used = after
        .value("meilisearch_used_db_size_bytes", &[])
        .expect("the used size");
    assert!(database >= used && used > 0.0, "{database} {used}");
    // Each shard of the index on the core that owns it, with its page store's bytes.
    let shards = after.series("coresearch_shard_page_store_bytes");
    assert_eq!(shards.len(), 2, "{shards:?}");
    for (labels, bytes) in shards {
        assert_eq!(labels["index"], "movies");
        assert_eq!(
            labels["core"], labels["shard"],
            "shard s lives on core s mod 2"
        );
        assert!(bytes > 0.0);
    }
    // The search crossed the mesh (one shard on each core).
    assert!(after.total("coresearch_core_mesh_round_trip_seconds_count") > 0.0);
}

/// Seconds from the RFC 3339 time `from` to `to` (two fields of a task).
fn seconds_between(from: &Value, to: &Value) -> f64 {
    let parse = |value: &Value| {
        time::OffsetDateTime::parse(
            value.as_str().expect("a time"),
            &time::format_description::well_known::Rfc3339,
        )
        .expect("an RFC 3339 time")
    };
    (parse(to) - parse(from)).as_seconds_f64()
}

fn create_key(server: &Server, actions: &[&str], indexes: &[&str]) -> String {
    let body = json!({"actions": actions, "indexes": indexes, "expiresAt": null});
    let response = server.send("POST", "/keys", Some(&body));
    assert_eq!(response.status, 201, "{}", response.text());
    response.json()["key"]
        .as_str()
        .expect("a key string")
        .to_owned()
}

fn get_metrics_with(server: &Server, key: &str) -> HttpResponse {
    server.raw(&request("GET", "/metrics", Some(key)))
}

#[test]
fn a_key_must_cover_every_index() {
    let server = start();
    enable_metrics(&server);
    let restricted = create_key(&server, &["*"], &["movies"]);
    let response = get_metrics_with(&server, &restricted);
    assert_eq!(response.status, 403);
    assert_eq!(
        response.json(),
        json!({
            "message": "The provided API key is invalid. The API key for the `/metrics` route must allow access to all indexes.",
            "code": "invalid_api_key",
            "type": "auth",
            "link": "https://docs.meilisearch.com/errors#invalid_api_key",
        })
    );
    // A restricted key cannot even be created with the action itself.
    let refused = server.raw(&json_request(
        "POST",
        "/keys",
        Some(MASTER_KEY),
        &json!({"actions": ["metrics.get"], "indexes": ["movies"], "expiresAt": null}).to_string(),
    ));
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(
        refused.json()["code"],
        "index_scoped_api_key_with_global_action"
    );

    let without_action = create_key(&server, &["search"], &["*"]);
    let response = get_metrics_with(&server, &without_action);
    assert_eq!(response.status, 403);
    assert_eq!(
        response.json()["message"],
        "The provided API key is invalid."
    );

    for actions in [&["metrics.get"][..], &["metrics.*"][..], &["*"][..]] {
        let key = create_key(&server, actions, &["*"]);
        let response = get_metrics_with(&server, &key);
        assert_eq!(response.status, 200, "{actions:?}: {}", response.text());
    }
    assert_eq!(server.raw(&request("GET", "/metrics", None)).status, 401);
}

#[test]
fn the_command_line_flag_forces_metrics_on() {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments: vec!["--experimental-enable-metrics".to_owned()],
        ..Options::default()
    });
    let first = scrape(&server);
    assert_eq!(first.value("meilisearch_index_count", &[]), Some(0.0));
    // Turning the toggle off changes nothing while the flag forces it.
    let patched = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"metrics": false})),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    let second = scrape(&server);
    assert_eq!(
        second.value(
            "meilisearch_http_requests_total",
            &[("method", "GET"), ("path", "/metrics"), ("status", "200")]
        ),
        Some(1.0)
    );
}

#[test]
fn each_shard_reports_its_page_store_and_vector_files() {
    let server = start();
    enable_metrics(&server);
    let settings = server.send(
        "PATCH",
        "/indexes/vectors/settings",
        Some(&json!({"embedders": {"e": {"source": "userProvided", "dimensions": 3}}})),
    );
    assert_eq!(settings.status, 202, "{}", settings.text());
    let documents: Vec<Value> = (0..50)
        .map(|id| {
            let x = f64::from(id);
            json!({"id": id, "_vectors": {"e": [x, 1.0, -x]}})
        })
        .collect();
    let added = server.send(
        "POST",
        "/indexes/vectors/documents",
        Some(&json!(documents)),
    );
    assert_eq!(added.status, 202, "{}", added.text());
    let task = server.wait_task(added.json()["taskUid"].clone());
    assert_eq!(task["status"], "succeeded", "{task}");

    let scrape = scrape(&server);
    let vectors = scrape.series("coresearch_shard_vector_file_bytes");
    assert_eq!(vectors.len(), 2, "{vectors:?}");
    assert!(
        vectors
            .iter()
            .all(|(labels, bytes)| labels["index"] == "vectors" && *bytes > 0.0),
        "every shard holds some of the 50 vectors: {vectors:?}"
    );
    let page_stores = scrape.total("coresearch_shard_page_store_bytes");
    assert!(page_stores > 0.0);
    assert_eq!(
        scrape.value("meilisearch_index_docs_count", &[("index", "vectors")]),
        Some(50.0)
    );
}

/// Opens `count` keep-alive connections and has each answer one request, so every one of them
/// has been accepted and placed on a core.
fn open_served_connections(server: &Server, count: usize) -> Vec<common::Connection> {
    (0..count)
        .map(|_| {
            let stream = std::net::TcpStream::connect(server.address).expect("the server accepts");
            let mut connection = common::Connection::new(stream);
            connection.send(request("GET", "/health", None).as_bytes());
            let response = connection.read_response().expect("a /health answer");
            assert_eq!(response.status, 200, "{}", response.text());
            connection
        })
        .collect()
}

/// The open connections of cores 0 and 1, as a scrape reports them.
fn open_connections_per_core(server: &Server) -> (f64, f64) {
    let scrape = scrape(server);
    let open = |core: &str| {
        scrape
            .value("coresearch_core_open_connections", &[("core", core)])
            .expect("every core reports its open connections")
    };
    (open("0"), open("1"))
}

#[test]
fn connections_are_spread_evenly_over_the_cores() {
    // The kernel hashes each connection to one core's socket; left to it, 32 connections over
    // 2 cores split at most one apart only about a quarter of the time, three times in a row
    // about once in seventy.
    const CONNECTIONS: usize = 32;
    const ROUNDS: usize = 3;
    let server = start();
    enable_metrics(&server);
    for round in 0..ROUNDS {
        let connections = open_served_connections(&server, CONNECTIONS);
        let (first, second) = open_connections_per_core(&server);
        // The scrape's own connection is counted too, on whichever core it was placed.
        assert_eq!(first + second, (CONNECTIONS + 1) as f64, "round {round}");
        assert!(
            (first - second).abs() <= 1.0,
            "round {round}: {first} connections on core 0 against {second} on core 1"
        );
        drop(connections);
        // Closed connections leave their core's count.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while open_connections_per_core(&server) != (0.0, 1.0)
            && open_connections_per_core(&server) != (1.0, 0.0)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: closed connections are still counted: {:?}",
                open_connections_per_core(&server)
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
