//! The field paths of an index (`POST /indexes/{uid}/fields`): the union of every field path
//! its shards have seen, sorted by name.
//!
//! Invariant: a path any shard ever stored is listed once, whatever shard holds it; the
//! index's primary key is listed even before any document holds it, as Meilisearch records
//! it when the index gets it.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::documents::FieldPaths;

/// Every field path any shard of the index has seen, sorted by name.
pub async fn field_paths(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
) -> Result<BTreeSet<String>, ResponseError> {
    let mut paths = BTreeSet::new();
    for answer in coordinator
        .ask_every_shard(&record.shard_set(), |_| FieldPaths)
        .await
    {
        paths.extend(answer?);
    }
    paths.extend(record.primary_key.iter().cloned());
    Ok(paths)
}
