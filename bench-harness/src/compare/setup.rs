//! Filling a server for the comparison: create the index, apply its settings, send the
//! dataset as NDJSON payloads, and wait until every task finished.
//!
//! Invariants: every write must be answered 202 (enqueued), and every task must end
//! `succeeded`, or the step fails with the server's answer; `ingest` measures from just
//! before its first payload is sent to the first poll that finds no task enqueued or
//! processing, so its duration includes the whole indexing and at most one
//! `TASK_POLL_INTERVAL` of polling slack.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::{Client, Response};
use super::query_mix::ABSENT_ATTRIBUTE;

/// Pause between two polls of the task queue.
pub const TASK_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How long the tasks may take to finish.
pub const TASKS_TIMEOUT: Duration = Duration::from_secs(4 * 3600);

/// The index settings of the comparison: `name` and `summary` searchable, `year` and `rank`
/// filterable and sortable, and `ABSENT_ATTRIBUTE` (which no document holds) sortable too.
pub fn comparison_settings() -> Value {
    json!({
        "searchableAttributes": ["name", "summary"],
        "filterableAttributes": ["year", "rank"],
        "sortableAttributes": ["year", "rank", ABSENT_ATTRIBUTE],
    })
}

/// What ingesting the dataset took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ingestion {
    /// Documents sent.
    pub documents: usize,
    /// Payloads sent.
    pub payloads: usize,
    /// From the first payload to the last task finished.
    pub elapsed: Duration,
    /// Documents the index holds afterwards.
    pub stored: u64,
}

fn io_error(step: &str) -> impl Fn(std::io::Error) -> String + '_ {
    move |error| format!("{step}: {error}")
}

/// Fails with the step, the status and the body unless the response has `status`.
pub fn expect_status(step: &str, response: &Response, status: u16) -> Result<(), String> {
    if response.status == status {
        Ok(())
    } else {
        Err(format!(
            "{step} answered {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        ))
    }
}

/// Creates index `uid` with `primary_key`, applies `settings`, and waits for both tasks.
pub fn create_index(
    client: &mut Client,
    uid: &str,
    primary_key: &str,
    settings: &Value,
) -> Result<(), String> {
    let response = client
        .send_json(
            "POST",
            "/indexes",
            &json!({"uid": uid, "primaryKey": primary_key}),
        )
        .map_err(io_error("create index"))?;
    expect_status("create index", &response, 202)?;
    let path = format!("/indexes/{uid}/settings");
    let response = client
        .send_json("PATCH", &path, settings)
        .map_err(io_error("update settings"))?;
    expect_status("update settings", &response, 202)?;
    wait_for_tasks(client)
}

/// Sends `lines` to index `uid` in NDJSON payloads of `batch` documents, waits for every
/// task, and reads the document count.
pub fn ingest(
    client: &mut Client,
    uid: &str,
    lines: &[String],
    batch: usize,
) -> Result<Ingestion, String> {
    let started = Instant::now();
    let payloads = send_documents(client, uid, lines, batch)?;
    wait_for_tasks(client)?;
    let elapsed = started.elapsed();
    let stats = get_json(client, &format!("/indexes/{uid}/stats"))?;
    Ok(Ingestion {
        documents: lines.len(),
        payloads,
        elapsed,
        stored: stats["numberOfDocuments"].as_u64().unwrap_or(0),
    })
}

/// Sends `lines` to index `uid` in NDJSON payloads of `batch` documents, one after the other,
/// each of which must be answered 202; answers the number of payloads.
pub fn send_documents(
    client: &mut Client,
    uid: &str,
    lines: &[String],
    batch: usize,
) -> Result<usize, String> {
    let path = format!("/indexes/{uid}/documents");
    let mut payloads = 0;
    for chunk in lines.chunks(batch.max(1)) {
        let label = format!("payload {payloads}");
        post_ndjson(client, &path, &label, &ndjson_payload(chunk))?;
        payloads += 1;
    }
    Ok(payloads)
}

/// Posts one NDJSON `payload` to `path` (an index's documents route), which must be answered
/// 202; `label` names it in the error. Answers the response (its body holds the task).
pub fn post_ndjson(
    client: &mut Client,
    path: &str,
    label: &str,
    payload: &[u8],
) -> Result<Response, String> {
    let response = client
        .request("POST", path, "application/x-ndjson", payload)
        .map_err(|error| format!("{label}: {error}"))?;
    expect_status(label, &response, 202)?;
    Ok(response)
}

/// `lines` as one NDJSON payload: each line followed by a newline.
pub fn ndjson_payload(lines: &[String]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(lines.iter().map(|line| line.len() + 1).sum());
    for line in lines {
        payload.extend_from_slice(line.as_bytes());
        payload.push(b'\n');
    }
    payload
}

/// `GET path` answered 200 with a JSON body.
pub fn get_json(client: &mut Client, path: &str) -> Result<Value, String> {
    let response = client.get(path).map_err(io_error(path))?;
    expect_status(&format!("GET {path}"), &response, 200)?;
    response.json()
}

/// The documents index `uid` holds: its stats' `numberOfDocuments`, 0 while it does not
/// exist (404).
pub fn document_count(client: &mut Client, uid: &str) -> Result<u64, String> {
    let path = format!("/indexes/{uid}/stats");
    let response = client.get(&path).map_err(io_error(&path))?;
    if response.status == 404 {
        return Ok(0);
    }
    expect_status(&format!("GET {path}"), &response, 200)?;
    response.json()?["numberOfDocuments"]
        .as_u64()
        .ok_or_else(|| format!("GET {path} answered no numberOfDocuments"))
}

/// Whether any task is enqueued or processing.
pub fn any_task_pending(client: &mut Client) -> Result<bool, String> {
    let pending = get_json(client, "/tasks?statuses=enqueued,processing&limit=1")?;
    Ok(pending["total"] != 0)
}

/// Waits until no task is enqueued or processing.
pub fn wait_until_no_task_pending(client: &mut Client) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if !any_task_pending(client)? {
            return Ok(());
        }
        if started.elapsed() > TASKS_TIMEOUT {
            return Err(format!("the tasks did not finish within {TASKS_TIMEOUT:?}"));
        }
        std::thread::sleep(TASK_POLL_INTERVAL);
    }
}

/// Waits until no task is enqueued or processing, then checks that none failed.
pub fn wait_for_tasks(client: &mut Client) -> Result<(), String> {
    wait_until_no_task_pending(client)?;
    let failed = get_json(client, "/tasks?statuses=failed&limit=1")?;
    if failed["total"] != 0 {
        return Err(format!("failed tasks: {}", failed["results"]));
    }
    Ok(())
}
