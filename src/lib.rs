//! coresearch: a thread-per-core search server that speaks the Meilisearch HTTP API.
//!
//! Layout, top to bottom (see ARCHITECTURE.md §1 and the README's layout table):
//! - `backups` makes a data directory from a dump at start (`--import-dump`), before the
//!   server opens it, on `server` (which indexes the dump) and `tasks` (the dump format);
//! - `server` is the composition root: it starts the cores and wires every part;
//! - `dashboard` is the page `GET /` serves in development (HTML, style and script compiled
//!   into the binary);
//! - `routes` holds one thin file per route family (decode, authorize, call, encode), on
//!   `http`, the HTTP/1.1 layer, and `auth`, the keys and their checks;
//! - the use cases: `search` (search, multi-search, facet search), `chats` (streamed chat
//!   completions whose model searches the indexes, on `search` and `outgoing`),
//!   `documents` (listing), `render` (`POST /render-template`: a template rendered with a
//!   document or a query, on `embedders` and `documents`),
//!   `metrics` (`GET /metrics`: the instance's and every core's figures),
//!   `indexes` (statistics, field paths), `tasks` (the task queue,
//!   the scheduler and one file per task family, with the control core's side of the queue),
//!   `settings` and `control` (the read-mostly state the control core replicates);
//! - `coordinator` is transport and fan-out only: typed requests to one shard, every shard
//!   of an index or any core, and the core's replica of the catalog;
//! - `host` is the shard side of every command, on the core that owns the shard;
//! - `network` is the network of instances (`/network`): its model, the patch rules, and
//!   the calls to remotes (remote federated search), on `outgoing`;
//! - `embedders` turns documents into texts (`documentTemplate`) and texts into vectors
//!   through remote embedders (`rest`, `openAi`, `ollama`, `composite`), on `outgoing`;
//! - `personalization` reorders a search's hits through a Cohere-compatible rerank API
//!   (`personalize`, `--experimental-personalization-api-key`), on `outgoing`;
//! - `outgoing` is the shared outgoing HTTP client (embedders, `/export`, remote search,
//!   webhooks, personalization, chat completions; streamed responses and server-sent
//!   events), http and https with keep-alive, on `runtime` only;
//! - `runtime` is the only module that names glommio; `errors` is the one
//!   code → type → status table; `config` is the one place that reads flags and environment.
//!
//! Imports run down this list only; the tidy test (`tests/black_box/tidy.rs`) fails on an import
//! circle between top-level folders.

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
