//! Embedding: turning documents into texts (the `documentTemplate`) and texts into
//! vectors through remote embedders (`rest`, `openAi`, `ollama`), a local BERT-family
//! model run on helper threads (`huggingFace`), and `composite` pairs of them, with Meilisearch's defaults, request shapes, batching and error messages; a multimodal `rest`
//! embedder embeds documents and queries through its Liquid fragments (`fragment`).
//!
//! Use: read an index's stored embedder map with [`EmbedderSettings::from_map`], build a
//! [`DocumentTemplate`] from its template and an [`Embedder`] from its configuration and
//! the core's [`crate::outgoing::OutgoingClient`], then `render` documents and `embed`
//! the texts (or `embed_search` a query).
//!
//! Invariants:
//! - only `outgoing`, `errors`, `runtime` (`blocking`, `sleep`), `config` (the Hugging Face
//!   cache directory) and std/crates are imported: storage and search call in;
//! - an embedder lives on the core that built it (it shares the core's client);
//! - error messages are Meilisearch's text exactly (they are API), each error type says
//!   which API error it becomes (`vector_embedding_error`, `invalid_settings_embedders`,
//!   `invalid_document_fields`).

pub mod config;
pub mod embedder;
pub mod error;
mod extract;
pub mod fragment;
mod hub;
mod injectable;
mod join;
mod local_model;
mod model_directory;
pub mod ollama;
pub mod openai;
mod ordered_object;
pub mod query_cache;
pub mod rest;
pub mod template;
mod value_path;

#[cfg(test)]
mod tests;

pub use config::{ConfigError, EmbedderConfig, EmbedderSettings, Fragments};
pub use embedder::Embedder;
pub use error::{EmbedError, EmbedErrorKind, Fault, NewEmbedderError};
pub use template::{DocumentTemplate, TemplateError};
