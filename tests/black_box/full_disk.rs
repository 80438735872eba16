//! A full disk: the server runs with its data directory on a small tmpfs mounted in a private
//! mount namespace (`unshare --mount`, so nothing leaks and the mount goes away with the
//! server). Document additions fill it until a task fails with `no_space_left_on_device`; the
//! documents of the earlier tasks must all still be there, reads must still be answered, a
//! payload that cannot even be stored must be refused by the route with Meilisearch's error,
//! and once space is freed (the tmpfs remounted bigger) new additions must succeed.
//!
//! Needs root and permission to create mount namespaces; without them the test says so on
//! stderr and returns.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{HttpResponse, raw_to, request};
use serde_json::{Value, json};

/// Size of the tmpfs the data directory lives on.
const TMPFS_SIZE: &str = "6m";
/// Size it is remounted with to free space.
const TMPFS_SIZE_FREED: &str = "64m";
/// Documents per payload.
const PAYLOAD_DOCUMENTS: usize = 250;
/// Bytes of filler text per document.
const DOCUMENT_TEXT_BYTES: usize = 400;
/// Most payloads sent before the disk must have been found full.
const PAYLOADS_MAX: usize = 200;
/// How long one task may take.
const TASK_TIMEOUT: Duration = Duration::from_secs(20);
/// Seed of the filler text.
const SEED: u64 = 0x5eed_f011_d15c;

/// The server in its own mount namespace; killed (and its tmpfs gone) when dropped.
struct NamespacedServer {
    child: Child,
    address: String,
    mount_point: std::path::PathBuf,
    _scratch: tempfile::TempDir,
}

impl Drop for NamespacedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl NamespacedServer {
    fn send(&self, request: &str) -> HttpResponse {
        raw_to(&self.address, request).expect("the server answers")
    }

    /// Runs `mount_arguments` inside the server's mount namespace.
    fn in_namespace(&self, arguments: &[&str]) -> std::process::Output {
        Command::new("nsenter")
            .arg("--target")
            .arg(self.child.id().to_string())
            .arg("--mount")
            .arg("--")
            .args(arguments)
            .output()
            .expect("nsenter runs")
    }
}

/// Whether this machine lets us mount a tmpfs in a private mount namespace; the reason if not.
fn mounting_is_permitted(probe: &Path) -> Result<(), String> {
    let output = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg("mount -t tmpfs -o size=1m tmpfs \"$0\" && umount \"$0\"")
        .arg(probe)
        .output()
        .map_err(|error| format!("unshare cannot run: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
    }
}

fn start() -> Option<NamespacedServer> {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let mount_point = scratch.path().join("disk");
    std::fs::create_dir(&mount_point).expect("create_dir succeeds");
    if let Err(reason) = mounting_is_permitted(&mount_point) {
        eprintln!(
            "full_disk: NOT RUN — mounting a tmpfs in a private mount namespace is not permitted \
             here ({reason}); the full-disk behaviour was not checked"
        );
        return None;
    }
    let address = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .to_string();
    let script = "mount -t tmpfs -o size=\"$1\" tmpfs \"$2\" && exec \"$3\" --db-path \"$2/data.ms\" \
                  --http-addr \"$4\" --cores 1 --shards-per-index 1 --no-analytics";
    let child = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(TMPFS_SIZE)
        .arg(&mount_point)
        .arg(env!("CARGO_BIN_EXE_coresearch"))
        .arg(&address)
        .env("MEILI_LOG_LEVEL", "WARN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("unshare spawns");
    let server = NamespacedServer {
        child,
        address,
        mount_point,
        _scratch: scratch,
    };
    let started = Instant::now();
    while raw_to(&server.address, &request("GET", "/health", None)).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

/// A deterministic pseudo-random word stream (xorshift), so documents do not compress away.
fn filler(state: &mut u64) -> String {
    let mut text = String::with_capacity(DOCUMENT_TEXT_BYTES);
    while text.len() < DOCUMENT_TEXT_BYTES {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        text.push_str(&format!("w{:x} ", *state % 1_000_003));
    }
    text
}

fn ndjson_request(documents: &[Value]) -> String {
    let body: String = documents
        .iter()
        .map(|document| format!("{document}\n"))
        .collect();
    format!(
        "POST /indexes/full/documents HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Waits for task `uid` to finish; answers it.
fn finished_task(server: &NamespacedServer, uid: u64) -> Value {
    let started = Instant::now();
    loop {
        let task = server
            .send(&request("GET", &format!("/tasks/{uid}"), None))
            .json();
        if matches!(task["status"].as_str(), Some("succeeded" | "failed")) {
            return task;
        }
        assert!(
            started.elapsed() < TASK_TIMEOUT,
            "task {uid} did not finish"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every document of the index, by id.
fn stored_documents(server: &NamespacedServer) -> BTreeMap<String, Value> {
    let listing = server
        .send(&request(
            "GET",
            "/indexes/full/documents?limit=1000000",
            None,
        ))
        .json();
    listing["results"]
        .as_array()
        .expect("a listing has results")
        .iter()
        .map(|document| (document["id"].to_string(), document.clone()))
        .collect()
}

#[test]
fn a_full_disk_fails_the_task_keeps_every_earlier_document_and_recovers_once_freed() {
    eprintln!("seed: {SEED:#x}");
    let Some(server) = start() else {
        return;
    };
    let mut state = SEED;
    let mut expected: BTreeMap<String, Value> = BTreeMap::new();
    let mut next_id = 0u64;
    let mut failed_task = None;
    for _ in 0..PAYLOADS_MAX {
        let documents: Vec<Value> = (0..PAYLOAD_DOCUMENTS)
            .map(|_| {
                next_id += 1;
                json!({"id": next_id, "text": filler(&mut state)})
            })
            .collect();
        let response = server.send(&ndjson_request(&documents));
        if response.status != 202 {
            // The payload itself could not be stored: the disk is full before any task.
            assert_eq!(response.status, 422, "{}", response.text());
            assert_eq!(response.json()["code"], "no_space_left_on_device");
            continue;
        }
        let uid = response.json()["taskUid"]
            .as_u64()
            .expect("a 202 names its task");
        let task = finished_task(&server, uid);
        if task["status"] == "failed" {
            failed_task = Some(task);
            break;
        }
        for document in documents {
            expected.insert(document["id"].to_string(), document);
        }
    }
    let task = failed_task.expect("the tmpfs filled up and a task failed");
    eprintln!(
        "the disk filled after {} stored documents; the failed task: {task}",
        expected.len()
    );
    assert_eq!(task["error"]["code"], "no_space_left_on_device", "{task}");
    assert_eq!(task["error"]["type"], "system", "{task}");
    assert_eq!(
        task["error"]["message"], "No space left on device (os error 28)",
        "{task}"
    );
    assert!(!expected.is_empty(), "some additions succeeded first");

    // Reads are still answered and every earlier document is intact.
    assert_eq!(server.send(&request("GET", "/health", None)).status, 200);
    assert_eq!(stored_documents(&server), expected);
    let search = server.send(&common::json_request(
        "POST",
        "/indexes/full/search",
        None,
        r#"{"q": "", "limit": 1}"#,
    ));
    assert_eq!(search.status, 200, "{}", search.text());
    assert_eq!(
        search.json()["estimatedTotalHits"].as_u64(),
        Some(expected.len() as u64)
    );

    // With the disk entirely full, the payload itself cannot be stored: the route refuses it
    // with Meilisearch's error and registers nothing.
    let filler_path = server.mount_point.join("filler");
    let fill = server.in_namespace(&[
        "sh",
        "-c",
        &format!(
            "dd if=/dev/zero of={} bs=64k 2>/dev/null; true",
            filler_path.display()
        ),
    ]);
    assert!(fill.status.success());
    let tasks_before = server.send(&request("GET", "/tasks?limit=1", None)).json()["total"].clone();
    let big: Vec<Value> = (0..PAYLOAD_DOCUMENTS)
        .map(|offset| json!({"id": 1_000_000 + offset, "text": filler(&mut state)}))
        .collect();
    let refused = server.send(&ndjson_request(&big));
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(refused.json()["code"], "no_space_left_on_device");
    assert_eq!(refused.json()["type"], "system");
    assert_eq!(
        refused.json()["message"],
        "No space left on device (os error 28)"
    );
    assert_eq!(
        server.send(&request("GET", "/tasks?limit=1", None)).json()["total"],
        tasks_before
    );

    // Space freed: new additions succeed and land next to the earlier documents.
    let freed = server.in_namespace(&[
        "sh",
        "-c",
        &format!(
            "rm -f {} && mount -o remount,size={TMPFS_SIZE_FREED} {}",
            filler_path.display(),
            server.mount_point.display()
        ),
    ]);
    assert!(
        freed.status.success(),
        "{}",
        String::from_utf8_lossy(&freed.stderr)
    );
    let response = server.send(&ndjson_request(&big));
    assert_eq!(response.status, 202, "{}", response.text());
    let uid = response.json()["taskUid"].as_u64().expect("a task uid");
    let task = finished_task(&server, uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    for document in big {
        expected.insert(document["id"].to_string(), document);
    }
    assert_eq!(stored_documents(&server), expected);
}
