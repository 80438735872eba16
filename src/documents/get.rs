//! `GET /indexes/{uid}/documents/{id}`: one document, asked of the shard that owns its id.
//!
//! Invariant: a document lives on exactly one shard, the one rendezvous hashing ranks first
//! for its id among the index's shard names — the same rule the write path follows.

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::documents::GetDocument;

/// The document `document_id` of `record` (only `fields` when given), or `None`.
pub async fn get_document(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    document_id: &str,
    fields: Option<Vec<String>>,
    retrieve_vectors: bool,
) -> Result<Option<Map<String, Value>>, ResponseError> {
    let names = record.shard_names();
    let shard = shards::rendezvous::rendezvous_winner_position(&names, document_id)
        .ok_or_else(|| ResponseError::internal("an index without shards"))?;
    let shard = u32::try_from(shard).map_err(ResponseError::internal)?;
    let request = GetDocument {
        external_id: document_id.to_owned(),
        fields,
        retrieve_vectors,
    };
    coordinator
        .ask_shard(&record.shard_set(), shard, request)
        .await
}
