//! Document payloads and the batch-level write plan: everything between the update file the
//! server wrote for a `POST`/`PUT /indexes/{uid}/documents` request and the per-shard, per-document
//! operations the shards apply.
//!
//! - [`payload`]: JSON, NDJSON and CSV payloads streamed from a file or a byte slice, one document
//!   at a time, with Meilisearch v1.41's exact `malformed_payload` / `missing_payload` messages;
//! - [`chunked_input`]: the bounded read buffer and the object scan the JSON readers stream with;
//! - [`payload_document`]: a document handed to its shard as the payload's text or built;
//! - [`simd_document`]: one JSON object parsed with simd-json, serde_json judging what it refuses;
//! - [`field_values`]: a document read as Meilisearch's engine reads it, each top-level value on
//!   its own (what an upload accepts, and the first value that fails to parse);
//! - [`primary_key`]: primary key resolution (stored key, `primaryKey` parameter, inference);
//! - [`document_id`]: extraction and validation of the external document id;
//! - [`id_scan`]: a document's id read from a validated object's text without parsing it;
//! - [`flatten`]: dotted field paths of nested documents, and field distribution counting;
//! - [`operation`]: folding a batch of document operations into one idempotent operation per
//!   document id (over the documents, or over their positions in the payloads), split by shard
//!   through rendezvous hashing;
//! - [`error`]: the one error type of this module, carrying the Meilisearch error code.
//!
//! Invariants: documents are `serde_json::Map`s whose key order is the order in the payload
//! (`preserve_order`); nothing here knows about a runtime, sockets or HTTP.

pub mod chunked_input;
pub mod document_id;
pub mod error;
pub mod field_values;
pub mod flatten;
pub mod id_scan;
pub mod operation;
pub mod payload;
pub mod payload_csv;
pub mod payload_document;
pub mod primary_key;
pub mod simd_document;

pub use error::DocumentsError;

/// One document: a JSON object whose keys keep the order they had in the payload.
pub type Document = serde_json::Map<String, serde_json::Value>;
