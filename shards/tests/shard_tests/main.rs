//! The shards crate's integration tests in one test binary, one module per file (one link
//! instead of one per file). Run one file's tests with
//! `cargo test -p shards --test shard_tests <module>::`.

mod common;

mod documents_keys;
mod documents_payload;
mod documents_plan;
mod search_index;
mod search_query;
mod search_ranking;
mod shard_apply;
mod shard_batching;
mod shard_dictionary;
mod shard_model;
mod shard_network_membership;
mod shard_release;
mod shard_repack;
mod shard_warmed_commit;
