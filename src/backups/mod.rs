//! Backups and migration at start: [`dump_import`] makes the data directory from a dump
//! (`--import-dump`, `--ignore-missing-dump`, `--ignore-dump-if-db-exists`) before the
//! server opens it. Writing dumps is a task (`crate::tasks::dump`).
//!
//! Invariant: nothing here runs once the server serves requests; an import either leaves a
//! complete data directory at `--db-path` or none at all.

pub mod dump_import;
