//! Embedder settings without any embedder running: decoding an embedder object
//! ([`decode`]), the field table per source ([`fields`]), the checks Meilisearch runs at
//! enqueue and again on the merged embedder when the task runs ([`check`]), the merge of an
//! update onto a stored embedder ([`merge`]) and the read view with its defaults ([`view`]).
//!
//! Invariants: a stored embedder is a JSON object of Meilisearch's field names (what the
//! embedding side reads), merged by [`merge::merge_embedder`] and accepted by
//! [`check::check_merged_embedder`]; an index holds at most [`MAX_EMBEDDERS`] embedders.

pub mod check;
pub mod decode;
pub mod fields;
pub mod merge;
mod messages;
mod openai;
pub mod view;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use check::{check_embedder_update, check_merged_embedder};
pub use decode::decode_embedder;
pub use fields::{EMBEDDER_FIELDS, EMBEDDER_SOURCES};

use crate::errors::ResponseError;
use crate::settings::model::{EmbedderSettings, Setting};

/// The most embedders an index holds.
pub const MAX_EMBEDDERS: usize = 256;

/// The stored embedders after an update: each named embedder merged and checked, `null`
/// ones removed. Fails, changing nothing, on the first embedder that does not pass.
pub fn apply_embedders_update(
    stored: &BTreeMap<String, Map<String, Value>>,
    update: Setting<BTreeMap<String, Setting<EmbedderSettings>>>,
) -> Result<BTreeMap<String, Map<String, Value>>, ResponseError> {
    let embedders = match update {
        Setting::Set(embedders) => embedders,
        Setting::Reset => return Ok(BTreeMap::new()),
        Setting::NotSet => return Ok(stored.clone()),
    };
    let mut next = stored.clone();
    for (name, embedder) in embedders {
        match embedder {
            Setting::Set(EmbedderSettings(fields)) => {
                let merged = merge::merge_embedder(&name, stored.get(&name), &fields)?;
                check_merged_embedder(&name, &merged)?;
                next.insert(name, merged);
            }
            Setting::Reset => {
                next.remove(&name);
            }
            Setting::NotSet => {}
        }
    }
    if next.len() > MAX_EMBEDDERS {
        return Err(messages::too_many_embedders(next.len(), MAX_EMBEDDERS));
    }
    Ok(next)
}
