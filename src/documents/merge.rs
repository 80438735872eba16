//! Merging the document listings of an index's shards into the one listing an unsharded
//! index would give.
//!
//! Each shard answers its first `offset + limit` documents in its own order; the merge
//! takes them in the global order and cuts `offset`/`limit`. Without `sort`, the order is
//! the internal id, then the shard number. With `sort`, each rule compares the documents'
//! own values the way a shard's facet sort does: a document with a number comes before one
//! with only strings, within a kind the rule's direction decides (a document with several
//! values sits at its first value in that direction), documents without a value come last;
//! ties fall to the next rule, then to the unsorted order.
//!
//! Invariant: if every shard's page is in its own order and holds at least its first
//! `offset + limit` documents, the merge is exactly the global listing's page.

use std::cmp::Ordering;

use serde_json::{Map, Value};
use shards::filter::normalize_facet;
use shards::shard::SortRule;

use crate::host::documents::ListedDocument;

/// One shard's page.
pub struct ShardPage {
    pub shard: u32,
    pub documents: Vec<ListedDocument>,
}

/// A document's value for one sort rule: a string compares by its normalized form and is
/// shown as the document spells it.
#[derive(Debug, PartialEq)]
enum SortValue {
    Number(f64),
    Text {
        normalized: String,
        original: String,
    },
    Missing,
}

/// A document with what orders it: its sort values, internal id and shard.
struct Ordered {
    keys: Vec<SortValue>,
    internal_id: u32,
    shard: u32,
    document: Map<String, Value>,
}

/// The documents of `offset..offset + limit` in the global order.
pub fn merge_pages(
    pages: Vec<ShardPage>,
    sort: &[SortRule],
    offset: usize,
    limit: usize,
) -> Vec<Map<String, Value>> {
    let mut all: Vec<Ordered> = pages
        .into_iter()
        .flat_map(|page| {
            let shard = page.shard;
            page.documents.into_iter().map(move |listed| {
                let keys = sort
                    .iter()
                    .map(|rule| sort_value(&listed.document, rule))
                    .collect();
                Ordered {
                    keys,
                    internal_id: listed.internal_id,
                    shard,
                    document: listed.document,
                }
            })
        })
        .collect();
    all.sort_by(|left, right| {
        compare_keys(&left.keys, &right.keys, sort)
            .then(left.internal_id.cmp(&right.internal_id))
            .then(left.shard.cmp(&right.shard))
    });
    let page: Vec<Map<String, Value>> = all
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|ordered| ordered.document)
        .collect();
    debug_assert!(
        page.len() <= limit,
        "a page holds at most `limit` documents"
    );
    page
}

fn compare_keys(left: &[SortValue], right: &[SortValue], rules: &[SortRule]) -> Ordering {
    for ((left, right), rule) in left.iter().zip(right).zip(rules) {
        let ordering = compare_value(left, right, rule.ascending);
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

fn compare_value(left: &SortValue, right: &SortValue, ascending: bool) -> Ordering {
    let directed = |ordering: Ordering| {
        if ascending {
            ordering
        } else {
            ordering.reverse()
        }
    };
    match (left, right) {
        (SortValue::Number(left), SortValue::Number(right)) => directed(left.total_cmp(right)),
        (
            SortValue::Text {
                normalized: left, ..
            },
            SortValue::Text {
                normalized: right, ..
            },
        ) => directed(left.cmp(right)),
        (SortValue::Number(_), _) => Ordering::Less,
        (_, SortValue::Number(_)) => Ordering::Greater,
        (SortValue::Text { .. }, SortValue::Missing) => Ordering::Less,
        (SortValue::Missing, SortValue::Text { .. }) => Ordering::Greater,
        (SortValue::Missing, SortValue::Missing) => Ordering::Equal,
    }
}

/// The value `document` sorts by under `rule`: its first number in the rule's direction,
/// else its first string (by its normalized form), else missing.
fn sort_value(document: &Map<String, Value>, rule: &SortRule) -> SortValue {
    let mut numbers = Vec::new();
    let mut texts = Vec::new();
    collect_values(document, &rule.field, &mut numbers, &mut texts);
    numbers.sort_by(f64::total_cmp);
    let number = if rule.ascending {
        numbers.first()
    } else {
        numbers.last()
    };
    if let Some(number) = number {
        return SortValue::Number(*number);
    }
    texts.sort();
    let text = if rule.ascending {
        texts.into_iter().next()
    } else {
        texts.pop()
    };
    text.map_or(SortValue::Missing, |(normalized, original)| {
        SortValue::Text {
            normalized,
            original,
        }
    })
}

/// The value `document` sorts by under `rule` as a proxied listing shows it in
/// `_federation.weightedScoreValues` (Meilisearch's `{"sort": {"asc", "value"}}`): the
/// number, the string as the document spells it, or `null`.
pub fn shown_sort_value(document: &Map<String, Value>, rule: &SortRule) -> Value {
    let value = match sort_value(document, rule) {
        SortValue::Number(number) => serde_json::json!(number),
        SortValue::Text { original, .. } => Value::String(original),
        SortValue::Missing => Value::Null,
    };
    serde_json::json!({"sort": {"asc": rule.ascending, "value": value}})
}

/// The values at the dotted path `field` (through nested objects and arrays); strings as
/// `(normalized, original)`.
fn collect_values(
    object: &Map<String, Value>,
    field: &str,
    numbers: &mut Vec<f64>,
    texts: &mut Vec<(String, String)>,
) {
    for (key, value) in object {
        if key == field {
            collect_leaf(value, numbers, texts);
        } else if let Some(rest) = field
            .strip_prefix(key.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
        {
            collect_nested(value, rest, numbers, texts);
        }
    }
}

fn collect_nested(
    value: &Value,
    field: &str,
    numbers: &mut Vec<f64>,
    texts: &mut Vec<(String, String)>,
) {
    match value {
        Value::Object(object) => collect_values(object, field, numbers, texts),
        Value::Array(items) => {
            for item in items {
                collect_nested(item, field, numbers, texts);
            }
        }
        _ => {}
    }
}

fn collect_leaf(value: &Value, numbers: &mut Vec<f64>, texts: &mut Vec<(String, String)>) {
    match value {
        Value::Number(number) => numbers.extend(number.as_f64()),
        Value::String(text) => texts.push((normalize_facet(text), text.clone())),
        Value::Bool(flag) => texts.push((flag.to_string(), flag.to_string())),
        Value::Array(items) => {
            for item in items {
                collect_leaf(item, numbers, texts);
            }
        }
        Value::Object(_) | Value::Null => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listed(internal_id: u32, document: Value) -> ListedDocument {
        ListedDocument {
            internal_id,
            document: document.as_object().expect("as_object succeeds").clone(),
        }
    }

    fn ids(documents: &[Map<String, Value>]) -> Vec<Value> {
        documents
            .iter()
            .map(|document| document["id"].clone())
            .collect()
    }

    #[test]
    fn unsorted_listings_interleave_by_internal_id_then_shard() {
        let pages = vec![
            ShardPage {
                shard: 0,
                documents: vec![listed(0, json!({"id": "a"})), listed(1, json!({"id": "c"}))],
            },
            ShardPage {
                shard: 1,
                documents: vec![listed(0, json!({"id": "b"}))],
            },
        ];
        assert_eq!(
            ids(&merge_pages(pages, &[], 1, 2)),
            [json!("b"), json!("c")]
        );
    }

    #[test]
    fn sorted_listings_put_numbers_before_strings_and_missing_values_last() {
        let rule = SortRule {
            field: "price".into(),
            ascending: false,
        };
        let pages = vec![
            ShardPage {
                shard: 0,
                documents: vec![
                    listed(0, json!({"id": 1, "price": [3, 30]})),
                    listed(1, json!({"id": 2, "price": "Zed"})),
                ],
            },
            ShardPage {
                shard: 1,
                documents: vec![
                    listed(0, json!({"id": 3, "price": 10})),
                    listed(1, json!({"id": 4})),
                    listed(2, json!({"id": 5, "price": "apple"})),
                ],
            },
        ];
        assert_eq!(
            ids(&merge_pages(pages, &[rule], 0, 10)),
            [json!(1), json!(3), json!(2), json!(5), json!(4)]
        );
    }

    #[test]
    fn nested_fields_are_reached_through_dotted_paths() {
        let rule = SortRule {
            field: "info.year".into(),
            ascending: true,
        };
        let pages = vec![ShardPage {
            shard: 0,
            documents: vec![
                listed(0, json!({"id": 1, "info": {"year": 2000}})),
                listed(1, json!({"id": 2, "info": [{"year": 1990}]})),
            ],
        }];
        assert_eq!(
            ids(&merge_pages(pages, &[rule], 0, 10)),
            [json!(2), json!(1)]
        );
    }
}
