//! What the search tests share: a throw-away shard file and loading documents into it.

#![allow(dead_code)]

use serde_json::Value;
use shards::search::SearchQuery;
use shards::shard::{Operation, Shard};
use storage_engine::{Options, SyncMode};

/// A new shard file `name` in `directory`, without syncs (tests do not crash it).
pub fn open_shard(directory: &tempfile::TempDir, name: &str) -> Shard {
    let options = Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    };
    Shard::open(&directory.path().join(name), options).expect("a shard opens in a fresh directory")
}

/// Stores `documents` (objects with an `id`) in one batch.
pub fn load(shard: &Shard, documents: &[Value]) {
    let operations = documents
        .iter()
        .map(|document| Operation::Replace {
            external_id: document["id"].to_string(),
            document: document
                .as_object()
                .expect("test documents are objects")
                .clone(),
        })
        .collect();
    shard.apply(1, operations).expect("the batch applies");
}

/// A search for `q`, with room for every hit of the small test corpora.
pub fn query(q: &str) -> SearchQuery {
    SearchQuery {
        q: Some(q.to_owned()),
        limit: 100,
        ..SearchQuery::default()
    }
}
