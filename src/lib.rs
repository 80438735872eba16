//! coresearch: a thread-per-core search server that speaks the Meilisearch HTTP API.
//!
//! Layout: the top-level modules in layers, as ARCHITECTURE.md §1.3 draws them from the
//! imports, top to bottom:
//! - entry: `backups` (a data directory made from a dump or snapshot at start), `server` (the
//!   composition root: it starts the cores and wires every part), `banner`;
//! - edge: `routes` (one thin file per route family: decode, authorize, call, encode) and
//!   `dashboard` (the page `GET /` serves);
//! - use cases: `metrics`, `chats`, `search`, `indexes`, `render`, `proxy` (writes in a
//!   sharded network), `documents`, `tasks` (the queue, the scheduler and one file per task
//!   family);
//! - transport: `coordinator` (typed requests to one shard, every shard of an index or any
//!   core, and the core's replica of the catalog);
//! - shard side: `host` (the shard side of every command, on the core that owns the shard)
//!   and `control` (the state the control core owns and replicates);
//! - services: `network`, `settings`, `embedders`, `personalization`, `request_log`, `logs`;
//! - platform: `outgoing` (the outgoing HTTP client), `config` (the one place that reads flags
//!   and the environment), `runtime` (the only module that names glommio);
//! - foundation: `http`, `auth`, `decode`, `errors` (the one code → type → status table),
//!   `histogram`, `data_dir`, `traces` (OpenTelemetry spans, their context between cores and
//!   servers, and the exporter thread).
//!
//! A module imports the modules of lower layers, and within a layer only along the arrows
//! §1.3 draws. The tidy test (`tests/black_box/tidy/layer_order.rs`) reads that drawing and
//! fails on an import against it, and on a module the drawing does not place.

pub mod auth;
pub mod backups;
pub mod banner;
pub mod chats;
pub mod config;
pub mod control;
pub mod coordinator;
pub mod dashboard;
pub mod data_dir;
pub mod decode;
pub mod documents;
pub mod embedders;
pub mod errors;
pub mod histogram;
pub mod host;
pub mod http;
pub mod indexes;
pub mod logs;
pub mod metrics;
pub mod network;
pub mod outgoing;
pub mod personalization;
pub mod proxy;
pub mod render;
pub mod request_log;
pub mod routes;
pub mod runtime;
pub mod search;
pub mod server;
pub mod settings;
pub mod tasks;
#[cfg(test)]
mod test_support;
pub mod traces;
