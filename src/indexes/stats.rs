//! `GET /indexes/{uid}/stats` and `GET /stats`: each index's statistics summed over its
//! shards, and the bytes of the data directory with and without the page stores' free space.
//!
//! Invariant: `usedDatabaseSize` leaves out what every page store (every index's shards and
//! the task queue, whatever the key may see) holds without live data, so it never exceeds
//! `databaseSize`.

use std::rc::Rc;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::documents::Stats;
use crate::host::maintenance::UnusedBytes;
use crate::tasks::control_side;

/// The statistics of one index, summed over its shards.
pub async fn index_stats(
    coordinator: &Rc<Coordinator>,
    record: &Arc<IndexRecord>,
) -> Result<Value, ResponseError> {
    let mut documents = 0u64;
    let mut raw_bytes = 0u64;
    let mut distribution: std::collections::BTreeMap<String, u64> = Default::default();
    let (mut embeddings, mut embedded_documents) = (0u64, 0u64);
    for answer in coordinator
        .ask_every_shard(&record.shard_set(), |_| Stats)
        .await
    {
        let stats = answer?;
        documents += stats.number_of_documents;
        raw_bytes += stats.raw_document_bytes;
        embeddings += stats.number_of_embeddings;
        embedded_documents += stats.number_of_embedded_documents;
        for (field, count) in stats.field_distribution {
            *distribution.entry(field).or_default() += count;
        }
    }
    let is_indexing = control_side::is_indexing(coordinator, &record.uid).await;
    Ok(json!({
        "numberOfDocuments": documents,
        "rawDocumentDbSize": raw_bytes,
        "avgDocumentSize": raw_bytes.checked_div(documents).unwrap_or(0),
        "isIndexing": is_indexing,
        "numberOfEmbeddings": embeddings,
        "numberOfEmbeddedDocuments": embedded_documents,
        "fieldDistribution": distribution,
    }))
}

/// The data directory's bytes: every byte (`databaseSize`), and the bytes the page stores
/// hold without live data.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseBytes {
    pub total: u64,
    pub unused: u64,
}

/// The bytes of the data directory and of the page stores' free space.
pub async fn database_bytes(coordinator: &Rc<Coordinator>) -> Result<DatabaseBytes, ResponseError> {
    let total = directory_bytes(coordinator.data_directory());
    let mut unused = control_side::queue_unused_bytes(coordinator).await?;
    for record in coordinator.catalog().iter() {
        unused += shards_unused_bytes(coordinator, record).await?;
    }
    Ok(DatabaseBytes { total, unused })
}

/// Bytes of an index's shard files without live data.
async fn shards_unused_bytes(
    coordinator: &Rc<Coordinator>,
    record: &Arc<IndexRecord>,
) -> Result<u64, ResponseError> {
    let mut unused = 0;
    for answer in coordinator
        .ask_every_shard(&record.shard_set(), |_| UnusedBytes)
        .await
    {
        unused += answer?;
    }
    Ok(unused)
}

/// Bytes of every file under `directory`.
fn directory_bytes(directory: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(metadata) if metadata.is_dir() => directory_bytes(&entry.path()),
            Ok(metadata) => metadata.len(),
            Err(_) => 0,
        })
        .sum()
}
