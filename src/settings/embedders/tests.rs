//! Unit tests of the pure embedder functions the settings task and the embedding side use:
//! the merge rules and the merged-embedder check.

#![allow(clippy::unwrap_used)]

use serde_json::{Map, Value, json};

use super::check_merged_embedder;
use super::merge::merge_embedder;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn a_new_embedder_gets_the_default_source_and_model() {
    let merged = merge_embedder("e", None, &object(json!({"dimensions": 4}))).unwrap();
    assert_eq!(
        Value::Object(merged.clone()),
        json!({"dimensions": 4, "source": "openAi", "model": "text-embedding-3-small"})
    );
    assert!(check_merged_embedder("e", &merged).is_ok());
}

#[test]
fn a_source_change_keeps_only_what_every_source_keeps() {
    let stored = object(
        json!({"source": "openAi", "model": "text-embedding-3-large", "apiKey": "k", "dimensions": 4, "url": "https://x.com", "documentTemplate": "t", "distribution": {"mean": 0.5, "sigma": 0.5}, "binaryQuantized": true}),
    );
    let update = object(json!({"source": "userProvided", "dimensions": 2}));
    let merged = merge_embedder("e", Some(&stored), &update).unwrap();
    assert_eq!(
        Value::Object(merged.clone()),
        json!({"source": "userProvided", "apiKey": "k", "distribution": {"mean": 0.5, "sigma": 0.5}, "binaryQuantized": true, "dimensions": 2})
    );
    let error = check_merged_embedder("e", &merged).unwrap_err();
    assert!(
        error
            .message
            .starts_with("`.embedders.e`: Field `apiKey` unavailable for source `userProvided`.")
    );
}

#[test]
fn null_removes_a_field_and_quantization_is_one_way() {
    let stored = object(
        json!({"source": "userProvided", "dimensions": 3, "binaryQuantized": true, "distribution": {"mean": 0.5, "sigma": 0.5}}),
    );
    let merged =
        merge_embedder("e", Some(&stored), &object(json!({"distribution": null}))).unwrap();
    assert!(!merged.contains_key("distribution"));
    let error = merge_embedder(
        "e",
        Some(&stored),
        &object(json!({"binaryQuantized": false})),
    )
    .unwrap_err();
    assert!(
        error
            .message
            .starts_with("`.embedders.e.binaryQuantized`: Cannot disable")
    );
}

#[test]
fn a_composite_merges_its_indexing_embedder_and_replaces_its_search_embedder() {
    let stored = object(
        json!({"source": "composite", "searchEmbedder": {"source": "openAi", "apiKey": "k"}, "indexingEmbedder": {"source": "openAi", "apiKey": "k", "documentTemplate": "t"}}),
    );
    let update = object(
        json!({"searchEmbedder": {"source": "openAi", "dimensions": 8}, "indexingEmbedder": {"dimensions": 8}}),
    );
    let merged = merge_embedder("e", Some(&stored), &update).unwrap();
    assert_eq!(
        merged["searchEmbedder"],
        json!({"source": "openAi", "dimensions": 8})
    );
    assert_eq!(
        merged["indexingEmbedder"],
        json!({"source": "openAi", "apiKey": "k", "documentTemplate": "t", "dimensions": 8})
    );
    assert!(check_merged_embedder("e", &merged).is_ok());
}
