//! A throw-away page store for the crate's unit tests: a fresh file in its own temporary
//! directory, without syncs (the tests do not crash it).
//!
//! Invariant: the directory lives as long as the returned guard, so the file does too.

use storage_engine::{Database, Options, SyncMode};

/// A new database in a new temporary directory; keep the directory while using it.
pub fn scratch_database() -> (tempfile::TempDir, Database) {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let options = Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    };
    let database = Database::open(&directory.path().join("scratch.pages"), options)
        .expect("the database opens");
    (directory, database)
}
