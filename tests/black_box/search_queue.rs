//! The search queue over real HTTP and real concurrency: cores that run one search at a time
//! and keep none waiting refuse the searches that arrive while they are busy (a search waits
//! for the shards of the other core) with Meilisearch's 503, and answer every other one.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::sync::Barrier;

use common::{MASTER_KEY, Options, Server, json_request, request};
use meilisearch_sdk::client::Client;
use serde_json::{Value, json};

/// Searches sent at once in one round.
const CONCURRENT_SEARCHES: usize = 24;
/// Rounds tried before concluding that no search ever overlapped another.
const ROUNDS_MAX: usize = 10;
/// Documents of the index: enough that a search takes a while in a debug build.
const DOCUMENTS: usize = 3_000;

fn documents() -> Vec<Value> {
    (0..DOCUMENTS)
        .map(|id| {
            json!({
                "id": id,
                "title": format!("quiet river stone {id} lantern meadow"),
                "body": format!("the river runs past stone number {} under the lantern", id % 97),
            })
        })
        .collect()
}

/// The search every round sends.
fn search_request() -> String {
    json_request(
        "POST",
        "/indexes/queue/search",
        Some(MASTER_KEY),
        r#"{"q": "river stone lantern", "limit": 50}"#,
    )
}

/// Sends `request` `CONCURRENT_SEARCHES` times at once, each on its own connection; their
/// statuses and the first refusal's headers and body.
fn round(server: &Server, request: &str) -> (Vec<u16>, Option<common::HttpResponse>) {
    let barrier = Barrier::new(CONCURRENT_SEARCHES);
    let responses: Vec<common::HttpResponse> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..CONCURRENT_SEARCHES)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    server.raw(request)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("a search thread finishes"))
            .collect()
    });
    let statuses = responses.iter().map(|response| response.status).collect();
    let refusal = responses
        .into_iter()
        .find(|response| response.status == 503);
    (statuses, refusal)
}

/// A server whose two cores run one search at a time and keep none waiting, with the
/// `queue` index filled.
async fn queue_server() -> Server {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        cores: Some(2),
        extra_arguments: [
            "--shards-per-index",
            "4",
            "--documents-per-shard",
            "0",
            "--experimental-nb-searches-per-core",
            "1",
            "--experimental-search-queue-size",
            "0",
        ]
        .map(str::to_owned)
        .to_vec(),
        ..Options::default()
    });
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let task = client
        .index("queue")
        .add_documents(&documents(), Some("id"))
        .await
        .expect("add_documents succeeds")
        .wait_for_completion(&client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
    server
}

/// Rounds of `request` until one is refused (at most [`ROUNDS_MAX`]): how many were answered,
/// and the first refusal.
fn rounds_until_refused(server: &Server, request: &str) -> (usize, Option<common::HttpResponse>) {
    let mut answered = 0;
    for _ in 0..ROUNDS_MAX {
        let (statuses, refused) = round(server, request);
        assert!(
            statuses
                .iter()
                .all(|status| *status == 200 || *status == 503),
            "{statuses:?}"
        );
        answered += statuses.iter().filter(|status| **status == 200).count();
        if refused.is_some() {
            return (answered, refused);
        }
    }
    (answered, None)
}

#[tokio::test]
async fn busy_cores_without_waiting_room_refuse_searches_with_a_503() {
    let server = queue_server().await;
    let (answered, refusal) = rounds_until_refused(&server, &search_request());
    assert!(answered > 0, "no search was answered");
    let refusal = refusal.expect("some search arrived while another ran");
    assert_eq!(refusal.header("Retry-After"), Some("10"));
    assert_eq!(
        refusal.json(),
        json!({
            "message": "Too many search requests running at the same time: 0. Retry after 10s.",
            "code": "too_many_search_requests",
            "type": "system",
            "link": "https://docs.meilisearch.com/errors#too_many_search_requests"
        })
    );
    // Once the burst is over, the slot is free again: nothing leaked.
    let after = server.send(
        "POST",
        "/indexes/queue/search",
        Some(&json!({"q": "river"})),
    );
    assert_eq!(after.status, 200, "{}", after.text());
}

/// Document listings wait in the search queue as searches do (Meilisearch 1.50), so a busy
/// server refuses some with the same 503; with `disableDocumentsFetchQueue` they skip the
/// queue, and none is refused however many arrive at once.
#[tokio::test]
async fn document_listings_wait_in_the_search_queue_unless_the_toggle_is_on() {
    let server = queue_server().await;
    let listings = [
        json_request(
            "POST",
            "/indexes/queue/documents/fetch",
            Some(MASTER_KEY),
            r#"{"limit": 1000, "offset": 500}"#,
        ),
        request(
            "GET",
            "/indexes/queue/documents?limit=1000&offset=500",
            Some(MASTER_KEY),
        ),
    ];
    for listing in &listings {
        let (answered, refusal) = rounds_until_refused(&server, listing);
        assert!(answered > 0, "no listing was answered");
        let refusal = refusal.expect("some listing arrived while another ran");
        assert_eq!(refusal.json()["code"], "too_many_search_requests");
    }
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"disableDocumentsFetchQueue": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    for listing in &listings {
        for _ in 0..3 {
            let (statuses, _) = round(&server, listing);
            assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
        }
    }
}
