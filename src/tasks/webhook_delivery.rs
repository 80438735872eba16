//! Tells the webhooks about a finished batch: one `POST` per webhook whose body is the
//! batch's tasks as NDJSON (one `GET /tasks/{uid}` view a line), gzip-compressed.
//!
//! Invariants:
//! - delivery runs in a detached task on the control core, through the core's shared
//!   outgoing client (with its retries and backoff): it never delays the scheduler;
//! - a failed delivery is logged and forgotten, never failing or repeating the batch;
//! - a delivery holds the tasks of one batch as recorded, none processing (asserted);
//! - every webhook gets `Content-Encoding: gzip`, `Content-Type: application/x-ndjson` and
//!   then its own headers, unmasked.

use std::io::Write;
use std::sync::Arc;

use flate2::Compression;
use flate2::write::GzEncoder;

use super::model::Task;
use super::view::task_view;
use crate::control::webhooks::{Webhook, Webhooks};
use crate::outgoing::{Method, OutgoingRequest};

/// The media type of the body.
const NDJSON_CONTENT_TYPE: &str = "application/x-ndjson";

/// The encoding of the body.
const GZIP_CONTENT_ENCODING: &str = "gzip";

/// Starts telling every webhook about `tasks`; returns at once.
pub fn notify(webhooks: Arc<Webhooks>, tasks: &[Task]) {
    let batch_uid = tasks.first().and_then(|task| task.batch_uid);
    assert!(
        tasks.iter().all(|task| task.batch_uid.is_some()
            && task.batch_uid == batch_uid
            && task.status != super::model::Status::Processing),
        "the webhooks hear of the recorded tasks of one batch, not of {:?}",
        tasks
            .iter()
            .map(|task| (task.uid, task.batch_uid, task.status))
            .collect::<Vec<_>>()
    );
    if webhooks.is_empty() || tasks.is_empty() {
        return;
    }
    let lines = ndjson(tasks);
    crate::runtime::spawn_detached(async move {
        let body = match gzip(&lines) {
            Ok(body) => body,
            Err(error) => {
                tracing::error!(%error, "could not compress the tasks for the webhooks");
                return;
            }
        };
        for (uuid, webhook) in webhooks.all() {
            deliver(uuid, webhook, body.clone()).await;
        }
    });
}

/// The tasks' views, one JSON object a line.
pub fn ndjson(tasks: &[Task]) -> Vec<u8> {
    let mut lines = Vec::new();
    for task in tasks {
        lines.extend_from_slice(task_view(task).to_string().as_bytes());
        lines.push(b'\n');
    }
    lines
}

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// One `POST` to one webhook; failures are logged.
async fn deliver(uuid: uuid::Uuid, webhook: &Webhook, body: Vec<u8>) {
    let Some(client) = crate::outgoing::shared::core_client() else {
        tracing::error!(%uuid, "no outgoing client to call the webhook with");
        return;
    };
    let request = match OutgoingRequest::new(Method::Post, &webhook.url) {
        Ok(request) => request,
        Err(error) => {
            tracing::error!(%uuid, %error, "could not call the webhook");
            return;
        }
    };
    let request = webhook.headers.iter().fold(
        request
            .header("Content-Encoding", GZIP_CONTENT_ENCODING)
            .header("Content-Type", NDJSON_CONTENT_TYPE),
        |request, (name, value)| request.header(name, value),
    );
    match client.send(request.body(body)).await {
        Ok(response) if response.is_success() => {
            tracing::debug!(%uuid, status = response.status, "webhook called");
        }
        Ok(response) => {
            tracing::error!(%uuid, status = response.status, "the webhook refused the tasks");
        }
        Err(error) => tracing::error!(%uuid, %error, "could not call the webhook"),
    }
}
