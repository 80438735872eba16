//! Growing the index by one step of the ladder: send the step's payloads, wait for every
//! task, and check the document count.
//!
//! Invariants: every payload must be answered 202 and every task must end `succeeded`, or the
//! step fails with the server's answer; the step's time runs from just before its first
//! payload is sent (the first payload is made before the clock starts) to the first poll that
//! finds no task enqueued or processing, so it includes the whole indexing, the making of the
//! later payloads (overlapping the server's indexing of the earlier ones) and at most one
//! task-poll interval of slack; a step succeeds only when the index then holds exactly the
//! step's size.

use std::time::{Duration, Instant};

use super::dataset::CopiedDataset;
use super::ladder::Step;
use crate::compare::client::Client;
use crate::compare::setup::{document_count, post_ndjson, wait_for_tasks};

/// What one step took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    /// Payloads sent.
    pub payloads: usize,
    /// From the first payload sent to the last task finished.
    pub elapsed: Duration,
    /// Time spent making the payloads after the clock started.
    pub generation: Duration,
}

/// Sends the documents of `step` to index `uid` in payloads of `batch`, waits for every
/// task, and checks that the index holds `step.to` documents.
pub fn grow(
    client: &mut Client,
    uid: &str,
    dataset: &CopiedDataset<'_>,
    step: Step,
    batch: u64,
) -> Result<Growth, String> {
    let path = format!("/indexes/{uid}/documents");
    let ranges = step.payloads(batch);
    let mut started: Option<Instant> = None;
    let mut generation = Duration::ZERO;
    for (number, range) in ranges.iter().enumerate() {
        let making = Instant::now();
        let payload = dataset.payload(range.clone())?;
        if started.is_some() {
            generation += making.elapsed();
        }
        started.get_or_insert_with(Instant::now);
        let label = format!("payload {number} (documents {range:?})");
        post_ndjson(client, &path, &label, &payload)?;
    }
    let started = started.unwrap_or_else(Instant::now);
    wait_for_tasks(client)?;
    let elapsed = started.elapsed();
    let stored = document_count(client, uid)?;
    if stored != step.to {
        return Err(format!(
            "the index holds {stored} documents after its tasks succeeded, not {}",
            step.to
        ));
    }
    Ok(Growth {
        payloads: ranges.len(),
        elapsed,
        generation,
    })
}
