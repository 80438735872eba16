//! What the search tool tells the model about an index's filters: for each filterable field
//! the index holds (by name), its most frequent values (at most [`FACET_VALUES_MAX`]), as
//! Meilisearch 1.41 writes them into the description of the `filter` parameter:
//! `genre: horror, drama.` on one line per field.
//!
//! Invariant: the values are counted over every document of the index, whatever the caller
//! may see (Meilisearch counts them so); a failure to count leaves the summary empty rather
//! than failing the chat.

use std::rc::Rc;

use serde_json::json;
use shards::filter::FilterableRules;

use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::JsonError;
use crate::errors::ResponseError;
use crate::search::parameters::SearchBody;
use crate::search::prepare::{EngineErrors, prepare_with};

/// The most values listed per field.
pub const FACET_VALUES_MAX: usize = 10;

/// The field prefixes that hold no user values.
const RESERVED_FIELD_PREFIXES: [&str; 3] = ["_vectors", "_geo", "_geojson"];

/// The summary of `record`'s filterable fields.
pub async fn facet_summary(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    features: RuntimeFeatures,
) -> String {
    match summarize(coordinator, record, features).await {
        Ok(summary) => summary,
        Err(error) => {
            tracing::warn!(index = %record.uid, %error, "the facets of an index could not be counted for a chat");
            String::new()
        }
    }
}

async fn summarize(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    features: RuntimeFeatures,
) -> Result<String, ResponseError> {
    let rules =
        FilterableRules::from_setting(&record.settings.setting_view("filterableAttributes"))
            .map_err(ResponseError::internal)?;
    let fields: Vec<String> = crate::indexes::fields::field_paths(coordinator, record)
        .await?
        .into_iter()
        .filter(|field| rules.is_filterable(field))
        .filter(|field| {
            !RESERVED_FIELD_PREFIXES
                .iter()
                .any(|reserved| field == reserved || field.starts_with(&format!("{reserved}.")))
        })
        .collect();
    if fields.is_empty() {
        return Ok(String::new());
    }
    let body = json!({"limit": 0, "facets": fields});
    let body = crate::decode::json::decode_json_value::<SearchBody, JsonError>(body)?;
    let prepared = prepare_with(record, body, features, None, EngineErrors::Plain)?;
    let outcome = crate::search::execute::execute(coordinator, record, &prepared).await?;
    let Some(facets) = outcome.facets else {
        return Ok(String::new());
    };
    let mut summary = String::new();
    for field in &fields {
        let values = facets.values_by_count(field, outcome.total, FACET_VALUES_MAX);
        summary.push_str(field);
        summary.push_str(": ");
        if !values.is_empty() {
            summary.push_str(&values.join(", "));
            summary.push('.');
        }
        summary.push('\n');
    }
    Ok(summary)
}
