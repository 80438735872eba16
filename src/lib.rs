//! coresearch: a thread-per-core search server that speaks the Meilisearch HTTP API.
//!
//! Layout (see DESIGN.md §1): `runtime` is the only module that names glommio; `http` is
//! the HTTP/1.1 layer; `routes` holds one thin file per route family; `control` is the
//! read-mostly state owned by the control core and replicated to every core; `errors` is
//! the one code → type → status table; `config` is the one place that reads flags and
//! environment.

pub mod auth;
pub mod config;
pub mod control;
pub mod coordinator;
pub mod data_dir;
pub mod decode;
pub mod errors;
pub mod http;
pub mod logs;
pub mod request_log;
pub mod routes;
pub mod runtime;
pub mod search;
pub mod server;
pub mod settings;
pub mod tasks;
#[cfg(test)]
mod test_support;
