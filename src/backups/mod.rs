//! Backups and migration at start: [`dump_import`] makes the data directory from a dump
//! (`--import-dump`, `--ignore-missing-dump`, `--ignore-dump-if-db-exists`) and
//! [`snapshot_import`] from a snapshot (`--import-snapshot`, `--ignore-missing-snapshot`,
//! `--ignore-snapshot-if-db-exists`) before the server opens it; [`placement`] is what both
//! share (is there a database, the staging folder, the final rename). Writing dumps and
//! snapshots are tasks (`crate::tasks::dump`, `crate::tasks::snapshot`).
//!
//! Invariant: nothing here runs once the server serves requests; an import either leaves a
//! complete data directory at `--db-path` or none at all.

pub mod dump_import;
pub mod placement;
pub mod snapshot_import;
