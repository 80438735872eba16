//! What the rerank service is sent of a search, and how its answer reorders the hits, as
//! Meilisearch 1.41 does it.
//!
//! - The query: `User Context: <userContext>\nQuery: <q>`, or `User Context: <userContext>`
//!   alone when the search has no `q` (an empty `q` is still a query).
//! - The documents: one per hit of the page, in order, each the hit's document as the
//!   answer shows it (retrieved attributes, `_vectors`, `_geoDistance`, foreign documents)
//!   written as compact JSON, without what the search adds about the match (`_formatted`,
//!   `_matchesPosition`, `_rankingScore`, `_rankingScoreDetails`).
//! - The answer: the hits in the order of the indexes the service answered; an index past
//!   the last hit is skipped and a hit the service left out is left out, as Meilisearch
//!   does (Cohere ranks every document it is sent). A hit keeps its own fields, so its
//!   `_rankingScore` is the one the search gave it.
//!
//! Invariant: only the page's hits are sent and reordered; totals, facets and pagination
//! are the search's.

use serde_json::{Map, Value};

/// The fields of a hit that describe the match rather than the document.
const MATCH_FIELDS: [&str; 4] = [
    "_formatted",
    "_matchesPosition",
    "_rankingScore",
    "_rankingScoreDetails",
];

/// The rerank query: the user's context, then the search's `q` when it has one.
pub fn prompt(user_context: &str, query: Option<&str>) -> String {
    match query {
        Some(query) => format!("User Context: {user_context}\nQuery: {query}"),
        None => format!("User Context: {user_context}"),
    }
}

/// Each hit's document as compact JSON, in the hits' order.
pub fn documents(hits: &[Value]) -> Vec<String> {
    hits.iter().map(document_text).collect()
}

fn document_text(hit: &Value) -> String {
    let Value::Object(fields) = hit else {
        return "{}".to_owned();
    };
    let document: Map<String, Value> = fields
        .iter()
        .filter(|(name, _)| !MATCH_FIELDS.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    Value::Object(document).to_string()
}

/// The hits in `order` (indexes into `hits`, best first).
pub fn reorder(hits: Vec<Value>, order: &[usize]) -> Vec<Value> {
    order
        .iter()
        .filter_map(|index| hits.get(*index).cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_prompt_carries_the_query_only_when_there_is_one() {
        assert_eq!(
            prompt("likes red", Some("apple")),
            "User Context: likes red\nQuery: apple"
        );
        assert_eq!(
            prompt("likes red", Some("")),
            "User Context: likes red\nQuery: "
        );
        assert_eq!(prompt("likes red", None), "User Context: likes red");
    }

    #[test]
    fn documents_leave_out_what_describes_the_match() {
        let hits = vec![
            json!({"id": 1, "title": "red", "_geoDistance": 3, "_formatted": {"id": "1"},
                   "_matchesPosition": {}, "_rankingScore": 0.5, "_rankingScoreDetails": {}}),
            json!({"title": "b", "id": 2, "_vectors": {}}),
        ];
        assert_eq!(
            documents(&hits),
            [
                r#"{"id":1,"title":"red","_geoDistance":3}"#,
                r#"{"title":"b","id":2,"_vectors":{}}"#
            ]
        );
    }

    #[test]
    fn the_answer_orders_the_hits_and_may_leave_some_out() {
        let hits = vec![json!({"id": 0}), json!({"id": 1}), json!({"id": 2})];
        assert_eq!(
            reorder(hits.clone(), &[2, 0, 1]),
            [json!({"id": 2}), json!({"id": 0}), json!({"id": 1})]
        );
        assert_eq!(
            reorder(hits, &[1, 7]),
            [json!({"id": 1})],
            "an unknown index is skipped, a missing one dropped"
        );
    }
}
