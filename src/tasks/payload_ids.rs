//! Reading the ids (and where each document lies) of a batch's update files, on every core at
//! once.
//!
//! Why: planning a batch reads every document's id from its update file before any shard can
//! start, and while the control core reads, the other cores' shards wait. When the index's
//! primary key is known before the batch starts (every batch after an index's first), no
//! update file depends on another, so [`prefetch`] splits them over the cores in lanes, one
//! lane per core, each reading its files in batch order; planning then takes each file's ids
//! as they come ([`Prefetched::take`]).
//!
//! Invariants: a prefetched file is read exactly as planning reads it once the primary key is
//! resolved (every id through [`Documents::next_id`], whose errors are those of the built
//! document), so planning gives the same plan and the same task errors either way; a lane
//! stops reading as soon as nobody waits for its results.

use std::collections::HashMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use futures_channel::oneshot;
use shards::documents::payload::{DocumentSpan, Documents, PayloadFormat, documents_from};

use crate::coordinator::{Coordinator, CoreRequest};
use crate::errors::{ResponseError, documents_error};
use crate::host::batch::APPLY_CHUNK_DOCUMENTS;

/// What planning reads of an update file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadIds {
    /// The documents' ids, in payload order.
    pub ids: Vec<String>,
    /// Where each document lies, when every one is a JSON object (not for CSV).
    pub spans: Option<Vec<DocumentSpan>>,
}

impl PayloadIds {
    pub fn new() -> PayloadIds {
        PayloadIds {
            ids: Vec::new(),
            spans: Some(Vec::new()),
        }
    }

    /// Adds the id of the document `documents` read last, with its span; one document without
    /// a span leaves the payload without spans.
    pub fn push<R: Read + Seek>(&mut self, id: String, documents: &Documents<R>) {
        self.ids.push(id);
        match (self.spans.as_mut(), documents.last_span()) {
            (Some(spans), Some(span)) => spans.push(span),
            _ => self.spans = None,
        }
    }
}

impl Default for PayloadIds {
    fn default() -> Self {
        PayloadIds::new()
    }
}

/// Reads the id under `primary_key` of every document of the update file at `path`, with
/// where each lies.
pub async fn read_payload_ids(
    path: &Path,
    format: PayloadFormat,
    primary_key: &str,
) -> Result<PayloadIds, ResponseError> {
    let file = std::fs::File::open(path).map_err(|error| crate::errors::io_error(&error))?;
    let mut documents = documents_from(file, format).map_err(documents_error)?;
    let mut read = PayloadIds::new();
    read_remaining_ids(&mut documents, primary_key, &mut read).await?;
    Ok(read)
}

/// Adds to `read` the id under `primary_key` of every document `documents` has left, with
/// where each lies. Yields to the core's other tasks every [`APPLY_CHUNK_DOCUMENTS`] documents.
pub async fn read_remaining_ids<R: Read + Seek>(
    documents: &mut Documents<R>,
    primary_key: &str,
    read: &mut PayloadIds,
) -> Result<(), ResponseError> {
    while let Some(id) = documents.next_id(primary_key) {
        read.push(id.map_err(documents_error)?, documents);
        if read.ids.len() % APPLY_CHUNK_DOCUMENTS == 0 {
            crate::runtime::yield_if_needed().await;
        }
    }
    Ok(())
}

/// One update file to read ahead: the position of its task in the batch, its path and format.
pub struct PrefetchJob {
    pub position: usize,
    pub path: PathBuf,
    pub format: PayloadFormat,
}

/// The results of a [`prefetch`], by task position.
pub struct Prefetched {
    waiting: HashMap<usize, oneshot::Receiver<Result<PayloadIds, ResponseError>>>,
}

impl Prefetched {
    /// Nothing read ahead.
    pub fn none() -> Prefetched {
        Prefetched {
            waiting: HashMap::new(),
        }
    }

    /// The ids of the task at `position`, once read; `None` when it was not read ahead.
    pub async fn take(&mut self, position: usize) -> Option<Result<PayloadIds, ResponseError>> {
        let receiver = self.waiting.remove(&position)?;
        Some(match receiver.await {
            Ok(read) => read,
            Err(oneshot::Canceled) => Err(ResponseError::internal(
                "an update file read ahead was dropped",
            )),
        })
    }
}

/// Starts reading `jobs` under `primary_key`, spread over the cores: job `k` goes to lane
/// `k % cores`, and each lane reads its jobs in order on its core.
pub fn prefetch(
    coordinator: &Rc<Coordinator>,
    jobs: Vec<PrefetchJob>,
    primary_key: &str,
) -> Prefetched {
    let cores = coordinator.cores().max(1);
    let mut lanes: Vec<Vec<(PrefetchJob, oneshot::Sender<_>)>> =
        (0..cores).map(|_| Vec::new()).collect();
    let mut waiting = HashMap::with_capacity(jobs.len());
    for (index, job) in jobs.into_iter().enumerate() {
        let (sender, receiver) = oneshot::channel();
        waiting.insert(job.position, receiver);
        lanes[index % cores].push((job, sender));
    }
    // The local lane goes last: the others are only asked once their lane task runs.
    let local = coordinator.core();
    for (core, lane) in lanes.into_iter().enumerate().rev() {
        if lane.is_empty() {
            continue;
        }
        // Lane `k` runs on core `local + k`: the first (this core) takes the first job.
        let core = (local + core) % cores;
        let coordinator = coordinator.clone();
        let primary_key = primary_key.to_owned();
        crate::runtime::spawn_detached(async move {
            for (job, sender) in lane {
                if sender.is_canceled() {
                    return;
                }
                let request = ReadPayloadIds {
                    path: job.path,
                    format: job.format,
                    primary_key: primary_key.clone(),
                };
                let read = coordinator.ask(core, request).await.and_then(|read| read);
                // Nobody waiting any more is not an error: the batch stopped.
                let _ = sender.send(read);
            }
        });
    }
    Prefetched { waiting }
}

/// The ids (and spans) of an update file's documents under a primary key, read on the core
/// it is sent to.
struct ReadPayloadIds {
    path: PathBuf,
    format: PayloadFormat,
    primary_key: String,
}

impl CoreRequest<Coordinator> for ReadPayloadIds {
    type Answer = Result<PayloadIds, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        read_payload_ids(&self.path, self.format, &self.primary_key).await
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn ids_and_spans_are_read_in_payload_order_and_csv_has_no_spans() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let ndjson = directory.path().join("documents.ndjson");
        let text = "{\"id\":1,\"a\":\"x\"}\n  {\"a\":{\"id\":9},\"id\":\"two\"}\n";
        std::fs::File::create(&ndjson)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .expect("written");
        let csv = directory.path().join("documents.csv");
        std::fs::File::create(&csv)
            .and_then(|mut file| file.write_all(b"id,a\n7,x\n8,y\n"))
            .expect("written");
        let (read, csv_read) = crate::runtime::task::run_on_test_core(move || async move {
            let read = read_payload_ids(&ndjson, PayloadFormat::Ndjson, "id").await;
            let csv_read =
                read_payload_ids(&csv, PayloadFormat::Csv { delimiter: b',' }, "id").await;
            (read, csv_read)
        });
        let read = read.expect("the ids are read");
        assert_eq!(read.ids, vec!["1", "two"]);
        let spans = read.spans.expect("JSON documents have spans");
        let texts: Vec<&str> = spans
            .iter()
            .map(|span| &text[span.offset as usize..(span.offset + span.length) as usize])
            .collect();
        assert_eq!(
            texts,
            vec![
                "{\"id\":1,\"a\":\"x\"}",
                "{\"a\":{\"id\":9},\"id\":\"two\"}"
            ]
        );
        let csv_read = csv_read.expect("the CSV ids are read");
        assert_eq!(csv_read.ids, vec!["7", "8"]);
        assert_eq!(csv_read.spans, None);
    }
}
