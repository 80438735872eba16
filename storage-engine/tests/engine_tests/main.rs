//! The storage engine's integration tests in one test binary, one module per file (one link
//! instead of one per file). Run one file's tests with
//! `cargo test -p storage-engine --test engine_tests <module>::`.

mod common;

mod basics;
mod corruption;
mod crash_simulation;
mod format_upgrade;
mod kill;
mod leaf_cache;
mod merge_writer;
mod model;
mod path_lookup;
mod release;
mod repack;
mod spill;
mod vector_invariants;
mod vector_memory_index;
mod vector_page_store;
mod vector_quantized;
mod vector_reader_maps;
mod vector_store;
