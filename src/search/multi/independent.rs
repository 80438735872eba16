//! Multi-search without `federation`: each query runs on its index and is answered in its
//! own result, in the order of the queries; an error inside query `i` names `.queries[i]`.

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::auth::AuthContext;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::errors::{Code, ResponseError};
use crate::personalization::Personalization;

use super::{IndexQuery, inside_query};

/// Without `federation`: one result per query, in order.
pub(super) async fn independent(
    coordinator: &Rc<Coordinator>,
    queries: Vec<IndexQuery>,
    context: &AuthContext,
    features: RuntimeFeatures,
    personalization: &Personalization,
) -> Result<Map<String, Value>, ResponseError> {
    let mut results = Vec::with_capacity(queries.len());
    for (position, query) in queries.into_iter().enumerate() {
        if query.options.is_some() {
            return Err(inside_query(
                position,
                ResponseError::new(
                    Code::InvalidMultiSearchFederationOptions,
                    "Using `federationOptions` is not allowed in a non-federated search.\n - Hint: remove `federationOptions` from the query or add `federation` to the request.",
                ),
            ));
        }
        let result = crate::search::single::search_index(
            coordinator,
            &query.index_uid,
            query.body,
            context,
            features,
            personalization,
        )
        .await
        .map_err(|error| inside_query(position, error))?;
        let mut with_index = Map::new();
        with_index.insert("indexUid".to_owned(), Value::String(query.index_uid));
        with_index.extend(result);
        results.push(Value::Object(with_index));
    }
    let mut answer = Map::new();
    answer.insert("results".to_owned(), Value::Array(results));
    Ok(answer)
}
