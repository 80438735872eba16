//! `GET /metrics`: the instance's figures in the Prometheus text format — every metric and
//! label Meilisearch 1.41 exports, and the figures only a thread-per-core server has, per
//! core and per shard.
//!
//! Layout: [`http_recorder`] (each core's request counts and response times),
//! [`personalized_searches`] (each core's count of personalized searches), [`rate_limits`]
//! (each core's rate-limit refusals and buckets),
//! [`core_figures`] (what one core tells a scrape), [`scrape`] (gathering the instance's
//! and every core's figures), [`meilisearch_families`] and [`core_families`] (the figures
//! as metric families), [`store_families`] (open shards against their budget), [`exposition`] (the text format).
//!
//! Invariants: recording costs a core a few cell updates of its own, never an atomic, a lock
//! or a message; a scrape asks every core once through the core mesh and sums on the core
//! that answers the request. Nothing below the routes imports this folder.

pub mod core_families;
pub mod core_figures;
pub mod exposition;
pub mod http_recorder;
pub mod meilisearch_families;
pub mod personalized_searches;
pub mod rate_limits;
pub mod scrape;
pub mod store_families;
