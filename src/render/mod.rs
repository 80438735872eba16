//! `POST /render-template` (Meilisearch 1.50, experimental feature `renderRoute`): shows a
//! template the server renders — an embedder's `documentTemplate`, one of its
//! `indexingFragments` or `searchFragments`, an index's `chat.documentTemplate`, or one
//! given inline — and renders it with a stored document, an inline document or an inline
//! search query, without indexing anything.
//!
//! Flow: [`request`] decodes the body; [`template`] finds the template and [`input`] the
//! input, each checking its kind's feature ([`gates`]) and fields ([`parameters`]) in
//! Meilisearch's order; [`rendering`] renders with the renderers indexing, search and chats
//! use; [`answer`] puts it together. Every failure has Meilisearch's words and code
//! ([`error`]).
//!
//! Invariants: nothing is written; the route's own gate, the body and the key's access to
//! the named indexes are checked by the route before anything here runs.

pub mod answer;
pub mod error;
pub mod gates;
pub mod input;
pub mod parameters;
pub mod rendering;
pub mod request;
pub mod template;
