//! The index catalog: every index's uid, primary key, dates, settings and where its shards
//! live. The control core owns it and stores it in the task queue's page store, in the same
//! write transaction that finishes the batch that changed it, so an index change and its
//! task's success are durable together. Every core holds a replica ([`Catalog`] behind an
//! `Arc`, replaced whole on each change).
//!
//! Invariants:
//! - a rename changes only `uid`; `storage` and `shards` change together, and only when the
//!   index grows ([`crate::tasks::shard_growth`]): its documents are copied into a new storage
//!   of more shards, and the old storage is removed once the catalog naming the new one is
//!   recorded, so a storage's shard files never move and its shard count never changes;
//! - `storage` is derived from the uid of the task that created the index, which is unique
//!   and the same when a crash makes the task run again, and a grown storage from its base
//!   and its shard count ([`grown_storage_name`]), the same when the growth runs again;
//! - `shards <= shards_max` when `shards_max` is set; shard `s` lives on core `s mod cores`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::host::{INDEXES_DIRECTORY, shard_name};
use crate::settings::apply::StoredSettings;

/// The tree of the queue's page store that holds the catalog (index uid → record).
pub const CATALOG_TREE: &str = "catalog";

/// One index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexRecord {
    pub uid: String,
    /// The directory (under [`INDEXES_DIRECTORY`]) holding the shard files.
    pub storage: String,
    pub shards: u32,
    /// The most shards the index grows to as its documents come (`None`: its shards are fixed,
    /// as for every index written before indexes grew).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards_max: Option<u32>,
    pub primary_key: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    pub settings: StoredSettings,
}

impl IndexRecord {
    /// A new, empty index of `shards` fixed shards.
    pub fn new(
        uid: &str,
        storage: String,
        shards: u32,
        primary_key: Option<String>,
        now: OffsetDateTime,
    ) -> IndexRecord {
        IndexRecord {
            uid: uid.to_owned(),
            storage,
            shards,
            shards_max: None,
            primary_key,
            created_at: now,
            updated_at: now,
            settings: StoredSettings::default(),
        }
    }

    /// The names of the shards, as rendezvous hashing ranks them.
    pub fn shard_names(&self) -> Vec<String> {
        self.shard_set().names()
    }

    /// Where the index's shards live.
    pub fn shard_set(&self) -> ShardSet {
        ShardSet {
            storage: self.storage.clone(),
            shards: self.shards,
        }
    }
}

/// Where an index's shards live: all a command to them needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSet {
    /// The directory (under [`INDEXES_DIRECTORY`]) holding the shard files.
    pub storage: String,
    pub shards: u32,
}

impl ShardSet {
    /// The directory of the shard files.
    pub fn directory(&self, data_directory: &Path) -> PathBuf {
        data_directory.join(INDEXES_DIRECTORY).join(&self.storage)
    }

    /// The names of the shards, as rendezvous hashing ranks them.
    pub fn names(&self) -> Vec<String> {
        (0..self.shards).map(shard_name).collect()
    }
}

/// The storage name of an index created by task `task_uid`.
pub fn storage_name(task_uid: u32) -> String {
    format!("index-{task_uid}")
}

/// What separates a grown storage's name from its base (never in a [`storage_name`]).
const GROWN_SEPARATOR: &str = ".shards-";

/// The storage name of the index of storage `storage` grown to `shards` shards: its base (the
/// storage its index was created with) and the count, so that growing again from the same
/// storage to the same count names the same storage, and no two counts share one.
pub fn grown_storage_name(storage: &str, shards: u32) -> String {
    let base = storage
        .split_once(GROWN_SEPARATOR)
        .map_or(storage, |(base, _)| base);
    format!("{base}{GROWN_SEPARATOR}{shards}")
}

/// Every index, by uid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    indexes: BTreeMap<String, Arc<IndexRecord>>,
}

impl Catalog {
    /// The index `uid`.
    pub fn get(&self, uid: &str) -> Option<&Arc<IndexRecord>> {
        self.indexes.get(uid)
    }

    /// Every index, by uid.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<IndexRecord>> {
        self.indexes.values()
    }

    pub fn len(&self) -> usize {
        self.indexes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.indexes.is_empty()
    }

    /// Inserts or replaces an index.
    pub fn insert(&mut self, record: IndexRecord) {
        self.indexes.insert(record.uid.clone(), Arc::new(record));
    }

    /// Removes an index.
    pub fn remove(&mut self, uid: &str) -> Option<Arc<IndexRecord>> {
        self.indexes.remove(uid)
    }
}
