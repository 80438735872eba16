//! The database handle, read and write transactions and the commit protocol.

pub mod commit;
pub mod database;
pub mod integrity;
pub mod merge_writer;
pub mod options;
pub mod read_transaction;
pub mod repack;
pub mod spill;
pub mod write_transaction;
