//! Index settings (Meilisearch 1.41 §5): the update model ([`model`]), request decoding and
//! enqueue-time checks ([`decode`]), and the stored settings with merge, read view and task
//! details ([`apply`]), what they make of each field of an index ([`field_view`]), and the
//! embedder settings: per-source checks, merge rules and read view ([`embedders`]).
//!
//! Invariants: an update is a [`model::Settings`] of three-state fields; stored settings
//! ([`apply::StoredSettings`]) hold only concrete values, defaults included.

pub mod apply;
pub mod chat_search;
pub mod decode;
pub mod embedder_specs;
pub mod embedders;
pub mod field_view;
pub mod locale;
pub mod model;
pub mod ranking_rule;
pub mod setting;
pub mod text_settings;

#[cfg(test)]
mod tests;
