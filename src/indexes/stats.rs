//! `GET /indexes/{uid}/stats` and `GET /stats`: each index's statistics summed over its
//! shards, and the bytes of the data directory with and without the page stores' free space.
//!
//! Both take `showInternalDatabaseSizes` and `sizeFormat` (as Meilisearch 1.50 does, see
//! [`StatsOptions`]). The internal sizes are coresearch's own parts: each tree of the
//! shards' page stores, their free pages, each embedder's graph trees and vector files
//! (see `shards::shard::StoreSizes`), summed over the index's shards; `GET /stats` adds the
//! server's own files (the task queue, its free pages, payload files, keys).
//!
//! Invariants:
//! - `usedDatabaseSize` leaves out what every page store (every index's shards and the task
//!   queue, whatever the key may see) holds without live data, so it never exceeds
//!   `databaseSize`;
//! - every size of one answer uses the one `sizeFormat`; without the parameter sizes are
//!   numbers of bytes, as before 1.50.

use std::rc::Rc;
use std::sync::Arc;

use deserr::Deserr;
use serde_json::{Map, Value, json};

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::{Param, QueryError};
use crate::errors::ResponseError;
use crate::errors::codes;
use crate::host::documents::Stats;
use crate::host::maintenance::{StoreSizes, UnusedBytes};
use crate::tasks::control_side;

/// How sizes are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserr)]
#[deserr(rename_all = camelCase)]
pub enum SizeFormat {
    /// With a binary unit, as `1.99 KiB`.
    Human,
    /// A number of bytes.
    #[default]
    Raw,
}

impl SizeFormat {
    /// `bytes` written in this format.
    pub fn size(self, bytes: u64) -> Value {
        match self {
            SizeFormat::Raw => Value::from(bytes),
            SizeFormat::Human => {
                let unit = byte_unit::Byte::from_u64(bytes)
                    .get_appropriate_unit(byte_unit::UnitType::Binary);
                // Two decimals at most, without trailing zeros: `4 KiB`, `1.99 KiB`.
                Value::from(format!("{unit:#.2}"))
            }
        }
    }
}

/// The query of `GET /stats` and `GET /indexes/{uid}/stats`.
#[derive(Debug, Default, Clone, Copy, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
pub struct StatsOptions {
    /// Whether each index's answer has `internalDatabaseSizes`.
    #[deserr(default, error = QueryError<codes::InvalidStatsShowInternalDatabaseSizes>)]
    pub show_internal_database_sizes: Param<bool>,
    /// How sizes are written (numbers of bytes when absent).
    #[deserr(default, error = QueryError<codes::InvalidStatsSizeFormat>)]
    pub size_format: Option<SizeFormat>,
}

impl StatsOptions {
    /// The options of a raw query string (without the `?`).
    pub fn from_query(query: &str) -> Result<StatsOptions, ResponseError> {
        crate::decode::decode_query::<StatsOptions, QueryError>(query)
    }

    fn format(&self) -> SizeFormat {
        self.size_format.unwrap_or_default()
    }
}

/// The statistics of one index, summed over its shards.
pub async fn index_stats(
    coordinator: &Rc<Coordinator>,
    record: &Arc<IndexRecord>,
    options: StatsOptions,
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
    let format = options.format();
    let mut stats = Map::new();
    stats.insert("numberOfDocuments".into(), documents.into());
    stats.insert("rawDocumentDbSize".into(), format.size(raw_bytes));
    let average = raw_bytes.checked_div(documents).unwrap_or(0);
    stats.insert("avgDocumentSize".into(), format.size(average));
    stats.insert("isIndexing".into(), is_indexing.into());
    if *options.show_internal_database_sizes {
        let sizes = index_store_sizes(coordinator, record).await?;
        let sizes = sizes
            .into_iter()
            .map(|(part, bytes)| (part, format.size(bytes)));
        stats.insert(
            "internalDatabaseSizes".into(),
            Value::Object(sizes.collect()),
        );
    }
    stats.insert("numberOfEmbeddings".into(), embeddings.into());
    stats.insert(
        "numberOfEmbeddedDocuments".into(),
        embedded_documents.into(),
    );
    stats.insert("fieldDistribution".into(), json!(distribution));
    Ok(Value::Object(stats))
}

/// The bytes of each part of the index's files, summed over its shards.
async fn index_store_sizes(
    coordinator: &Rc<Coordinator>,
    record: &Arc<IndexRecord>,
) -> Result<std::collections::BTreeMap<String, u64>, ResponseError> {
    let mut sizes = std::collections::BTreeMap::new();
    for answer in coordinator
        .ask_every_shard(&record.shard_set(), |_| StoreSizes)
        .await
    {
        for (part, bytes) in answer? {
            *sizes.entry(part).or_default() += bytes;
        }
    }
    Ok(sizes)
}

/// The server's own files beside the indexes, for `GET /stats`'s `internalDatabaseSizes`:
/// the task queue's store and its bytes without live data, the payload files waiting for
/// their tasks, and the keys.
pub async fn server_store_sizes(
    coordinator: &Rc<Coordinator>,
    format: SizeFormat,
) -> Result<Value, ResponseError> {
    let directory = coordinator.data_directory();
    let queue_unused = control_side::queue_unused_bytes(coordinator).await?;
    let parts = [
        (
            "taskQueue",
            file_bytes(&directory.join(crate::tasks::queue::QUEUE_FILE_NAME)),
        ),
        ("taskQueueFreePages", queue_unused),
        (
            "payloadFiles",
            directory_bytes(&directory.join(crate::tasks::update_files::UPDATE_FILES_DIRECTORY)),
        ),
        (
            "keys",
            directory_bytes(&directory.join(crate::auth::persistence::AUTH_DIRECTORY_NAME)),
        ),
    ];
    let sizes = parts
        .into_iter()
        .map(|(part, bytes)| (part.to_owned(), format.size(bytes)));
    Ok(Value::Object(sizes.collect()))
}

/// The length of the file at `path`, 0 when there is none.
fn file_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |metadata| metadata.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_are_written_as_meilisearch_writes_them() {
        // 2,040, 4,096 and 385,024 bytes as Meilisearch 1.50 wrote them on this machine; the
        // others by the same rule.
        for (bytes, text) in [
            (0, "0 B"),
            (46, "46 B"),
            (2040, "1.99 KiB"),
            (4096, "4 KiB"),
            (385_024, "376 KiB"),
            (2_098_970, "2 MiB"),
        ] {
            assert_eq!(SizeFormat::Human.size(bytes), Value::from(text), "{bytes}");
            assert_eq!(SizeFormat::Raw.size(bytes), Value::from(bytes));
        }
    }

    #[test]
    fn options_default_to_raw_sizes_without_internal_ones() {
        let options = StatsOptions::from_query("").expect("an empty query decodes");
        assert!(!*options.show_internal_database_sizes);
        assert_eq!(options.format(), SizeFormat::Raw);
        let options = StatsOptions::from_query("showInternalDatabaseSizes=true&sizeFormat=human")
            .expect("the query decodes");
        assert!(*options.show_internal_database_sizes);
        assert_eq!(options.format(), SizeFormat::Human);
    }
}
