//! coresearch: a thread-per-core search server that speaks the Meilisearch HTTP API.
//!
//! Layout (see DESIGN.md §1): `runtime` is the only module that names glommio; `http` is
//! the HTTP/1.1 layer; `routes` holds one thin file per route family; `errors` is the one
//! code → type → status table; `config` is the one place that reads flags and environment.

pub mod auth;
pub mod errors;
