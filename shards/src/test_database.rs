//! A throw-away page store, or shard, for the crate's unit tests: a fresh file in its own
//! temporary directory, without syncs (the tests do not crash it), and the operation that
//! stores a test document in it.
//!
//! Invariant: the directory lives as long as the returned guard, so the file does too.

use serde_json::Value;
use storage_engine::{Database, Options, SyncMode};

use crate::shard::{Operation, Shard};

/// Page-store options of the scratch files: no syncs.
fn scratch_options() -> Options {
    Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    }
}

/// A new database in a new temporary directory; keep the directory while using it.
pub fn scratch_database() -> (tempfile::TempDir, Database) {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let database = Database::open(&directory.path().join("scratch.pages"), scratch_options())
        .expect("the database opens");
    (directory, database)
}

/// A new, empty shard in a new temporary directory; keep the directory while using it.
pub fn scratch_shard() -> (tempfile::TempDir, Shard) {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let shard = Shard::open(&directory.path().join("shard.pages"), scratch_options())
        .expect("the shard opens");
    (directory, shard)
}

/// The operation storing `document` (a JSON object) under the external id `id`.
pub fn replacement(id: u64, document: Value) -> Operation {
    let Value::Object(document) = document else {
        panic!("a test document is a JSON object: {document}")
    };
    Operation::Replace {
        external_id: id.to_string(),
        document,
    }
}
