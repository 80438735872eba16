//! The Grafana dashboard (`packaging/grafana/coresearch-dashboard.json`) against a real
//! scrape: every metric a panel's query names is in `GET /metrics` of a server that did the
//! work the panels show (documents, searches, a rate-limited key, a network with a remote),
//! and every label a query groups by (`by (…)`) is a label of one of the query's metrics.
//! The dashboard's own shape is checked too: a datasource variable, an instance variable,
//! and every panel with a query, a title, a description and a place on the grid.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{MASTER_KEY, Options, Server, json_request};
use serde_json::{Value, json};

/// The dashboard, as shipped.
const DASHBOARD: &str = include_str!("../../packaging/grafana/coresearch-dashboard.json");
/// The prefixes of every metric family the server exports.
const FAMILY_PREFIXES: [&str; 2] = ["meilisearch_", "coresearch_"];
/// Labels Prometheus adds itself at scrape time, or a histogram's bucket bound.
const SCRAPE_LABELS: [&str; 3] = ["instance", "job", "le"];

/// Metric name → the labels its samples carry.
type ScrapedLabels = BTreeMap<String, BTreeSet<String>>;

fn scraped_labels(text: &str) -> ScrapedLabels {
    let mut metrics = ScrapedLabels::new();
    for line in text
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
    {
        let name_end = line.find(['{', ' ']).expect("a sample has a name");
        let labels = metrics.entry(line[..name_end].to_owned()).or_default();
        if let Some(label_text) = line[name_end..].strip_prefix('{') {
            let label_text = &label_text[..label_text.find('}').expect("closed labels")];
            for pair in label_text.split(',').filter(|pair| !pair.is_empty()) {
                labels.insert(pair[..pair.find('=').expect("label=value")].to_owned());
            }
        }
    }
    metrics
}

/// Every identifier of `expression` that names one of the server's families.
fn metric_names(expression: &str) -> BTreeSet<String> {
    expression
        .split(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
        .filter(|word| {
            FAMILY_PREFIXES
                .iter()
                .any(|prefix| word.starts_with(prefix))
        })
        .map(str::to_owned)
        .collect()
}

/// The labels of every `by (…)` clause of `expression`.
fn grouping_labels(expression: &str) -> BTreeSet<String> {
    expression
        .match_indices("by (")
        .flat_map(|(start, clause)| {
            let rest = &expression[start + clause.len()..];
            rest[..rest.find(')').expect("a closed by clause")]
                .split(',')
                .map(|label| label.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn queries(dashboard: &Value) -> Vec<(String, String)> {
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut queries = Vec::new();
    for panel in panels.iter().filter(|panel| panel["type"] != "row") {
        let title = panel["title"].as_str().expect("a titled panel").to_owned();
        assert!(
            panel["description"]
                .as_str()
                .is_some_and(|text| !text.is_empty()),
            "{title}"
        );
        assert!(
            panel["gridPos"]["w"]
                .as_u64()
                .is_some_and(|width| width > 0),
            "{title}"
        );
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel `{title}` has no query");
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{title}");
            let expression = target["expr"].as_str().expect("a PromQL expression");
            queries.push((title.clone(), expression.to_owned()));
        }
    }
    queries
}

fn check_variables(dashboard: &Value) {
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    let named = |name: &str| variables.iter().find(|variable| variable["name"] == name);
    assert_eq!(
        named("datasource").expect("a datasource variable")["query"],
        "prometheus"
    );
    assert!(named("instance").is_some(), "an instance variable");
}

/// A server that did what every panel shows, and its scrape.
fn busy_server_scrape() -> String {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments: [
            "--experimental-enable-metrics",
            "--rate-limit-api-key-requests-per-second",
            "1",
            "--rate-limit-api-key-burst",
            "1",
        ]
        .map(str::to_owned)
        .to_vec(),
        ..Options::default()
    });
    let admin = |method: &str, path: &str, body: Value| server.send(method, path, Some(&body));
    assert_eq!(
        admin("PATCH", "/experimental-features", json!({"network": true})).status,
        200
    );
    let network = json!({"self": "ms0", "remotes": {
        "ms0": {"url": server.url(), "searchApiKey": MASTER_KEY},
        "ms1": {"url": "http://127.0.0.1:9", "searchApiKey": "s"}}});
    assert_eq!(admin("PATCH", "/network", network).status, 200);
    let task = admin(
        "POST",
        "/indexes/movies/documents",
        json!([{"id": 1, "title": "Carol"}]),
    );
    assert_eq!(task.status, 202, "{}", task.text());
    server.wait_task(task.json()["taskUid"].clone());
    assert_eq!(
        admin("POST", "/indexes/movies/search", json!({"q": "car"})).status,
        200
    );
    let key = admin(
        "POST",
        "/keys",
        json!({"actions": ["search"], "indexes": ["*"], "expiresAt": null}),
    );
    let key = key.json()["key"].as_str().expect("a new key").to_owned();
    let search = json_request(
        "POST",
        "/indexes/movies/search",
        Some(&key),
        r#"{"q":"car"}"#,
    );
    let statuses: Vec<u16> = (0..3).map(|_| server.raw(&search).status).collect();
    assert!(
        statuses.contains(&429),
        "the key is rate limited: {statuses:?}"
    );
    let metrics = server.raw(&common::request("GET", "/metrics", Some(MASTER_KEY)));
    assert_eq!(metrics.status, 200, "{}", metrics.text());
    metrics.text()
}

#[test]
fn every_metric_and_label_of_the_dashboard_is_exported() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    check_variables(&dashboard);
    let queries = queries(&dashboard);
    let scraped = scraped_labels(&busy_server_scrape());
    let mut named = BTreeSet::new();
    for (title, expression) in &queries {
        let metrics = metric_names(expression);
        assert!(
            !metrics.is_empty(),
            "panel `{title}`: no metric in `{expression}`"
        );
        let mut labels = BTreeSet::new();
        for metric in &metrics {
            let carried = scraped.get(metric).unwrap_or_else(|| {
                panic!("panel `{title}` uses `{metric}`, which /metrics does not export")
            });
            labels.extend(carried.iter().cloned());
            named.insert(metric.clone());
        }
        for label in grouping_labels(expression) {
            assert!(
                labels.contains(&label) || SCRAPE_LABELS.contains(&label.as_str()),
                "panel `{title}` groups by `{label}`, a label of none of {metrics:?}"
            );
        }
    }
    assert!(
        named.len() >= 30,
        "the dashboard names {} metrics",
        named.len()
    );
}

#[test]
fn the_checks_catch_a_metric_or_label_that_is_not_there() {
    let scraped = scraped_labels("a_total{core=\"0\"} 1\nb 2\n");
    assert_eq!(
        metric_names("sum by (core) (rate(coresearch_x_total[1m])) + meilisearch_y"),
        BTreeSet::from(["coresearch_x_total".to_owned(), "meilisearch_y".to_owned()])
    );
    assert_eq!(
        grouping_labels("max by (le, path) (x) / sum by (core) (y)"),
        BTreeSet::from(["le".to_owned(), "path".to_owned(), "core".to_owned()])
    );
    assert_eq!(scraped["a_total"], BTreeSet::from(["core".to_owned()]));
    assert!(scraped["b"].is_empty());
    assert!(!scraped.contains_key("coresearch_x_total"));
}
