//! Primary key resolution and document id extraction, written from Meilisearch v1.41 behaviour.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use shards::documents::Document;
use shards::documents::document_id::{
    DOCUMENT_ID_BYTES_MAX, document_id_from_value, extract_document_id, is_valid_document_id,
};
use shards::documents::primary_key::{
    ResolvedPrimaryKey, possible_level_names, primary_key_candidates, resolve_primary_key,
};

fn document(value: Value) -> Document {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn stored_primary_key_wins_and_a_different_request_fails() {
    let first = document(json!({"uid": 1}));
    let resolved =
        resolve_primary_key(Some("id"), None, Some(&first)).expect("resolve_primary_key succeeds");
    assert_eq!(
        resolved,
        ResolvedPrimaryKey {
            name: "id".into(),
            is_new: false
        }
    );
    let resolved = resolve_primary_key(Some("id"), Some("id"), Some(&first))
        .expect("resolve_primary_key succeeds");
    assert!(!resolved.is_new);
    let error = resolve_primary_key(Some("id"), Some("uid"), Some(&first)).unwrap_err();
    assert_eq!(error.code(), "index_primary_key_already_exists");
    assert_eq!(error.to_string(), "Index already has a primary key: `id`.");
}

#[test]
fn requested_primary_key_is_used_without_looking_at_documents() {
    let resolved =
        resolve_primary_key(None, Some("docid"), None).expect("resolve_primary_key succeeds");
    assert_eq!(
        resolved,
        ResolvedPrimaryKey {
            name: "docid".into(),
            is_new: true
        }
    );
}

#[test]
fn inference_takes_the_single_field_ending_with_id_case_insensitively() {
    for (first, expected) in [
        (json!({"title": "a", "id": 1}), "id"),
        (json!({"ID": 1, "name": "x"}), "ID"),
        (json!({"MovieId": 1}), "MovieId"),
        (json!({"kid": "x", "title": "t"}), "kid"),
        (json!({"product_id": 3}), "product_id"),
    ] {
        let resolved = resolve_primary_key(None, None, Some(&document(first)))
            .expect("resolve_primary_key succeeds");
        assert_eq!(resolved.name, expected);
        assert!(resolved.is_new);
    }
}

#[test]
fn inference_with_no_candidate_or_no_document_fails() {
    let message = "The primary key inference failed as the engine did not find any field ending with `id` in its name. Please specify the primary key manually using the `primaryKey` query parameter.";
    for first in [
        Some(document(json!({"title": "x", "identity": 1, "i_d": 2}))),
        None,
    ] {
        let error = resolve_primary_key(None, None, first.as_ref()).unwrap_err();
        assert_eq!(error.code(), "index_primary_key_no_candidate_found");
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn inference_with_several_candidates_names_the_first_two_sorted_and_the_count() {
    let first = document(json!({"title": "t", "object_id": 1, "uid": 2, "id": 3}));
    assert_eq!(primary_key_candidates(&first), ["id", "object_id", "uid"]);
    let error = resolve_primary_key(None, None, Some(&first)).unwrap_err();
    assert_eq!(error.code(), "index_primary_key_multiple_candidates_found");
    assert_eq!(
        error.to_string(),
        "The primary key inference failed as the engine found 3 fields ending with `id` in their names: 'id' and 'object_id'. Please specify the primary key manually using the `primaryKey` query parameter."
    );
}

#[test]
fn candidates_sort_by_bytes_so_uppercase_comes_first() {
    let first = document(json!({"id": 1, "ID": 2}));
    assert_eq!(primary_key_candidates(&first), ["ID", "id"]);
}

#[test]
fn nested_primary_key_splits_at_every_dot() {
    let levels: Vec<(&str, &str)> = possible_level_names("a.b.c").collect();
    assert_eq!(levels, [("a", "b.c"), ("a.b", "c"), ("a.b.c", "")]);
}

#[test]
fn valid_ids_are_strings_of_allowed_ascii_or_integers() {
    assert_eq!(
        document_id_from_value(&json!("Abc-_09")).expect("document_id_from_value succeeds"),
        "Abc-_09"
    );
    assert_eq!(
        document_id_from_value(&json!(42)).expect("document_id_from_value succeeds"),
        "42"
    );
    assert_eq!(
        document_id_from_value(&json!(-7)).expect("document_id_from_value succeeds"),
        "-7"
    );
    assert_eq!(
        document_id_from_value(&json!(u64::MAX)).expect("document_id_from_value succeeds"),
        u64::MAX.to_string()
    );
    assert!(is_valid_document_id(&"a".repeat(DOCUMENT_ID_BYTES_MAX)));
    assert!(!is_valid_document_id(
        &"a".repeat(DOCUMENT_ID_BYTES_MAX + 1)
    ));
    assert!(!is_valid_document_id(""));
    assert!(!is_valid_document_id("é"));
}

#[test]
fn invalid_ids_are_reported_as_compact_json() {
    let suffix = "is invalid. A document identifier can be of type integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes.";
    for (value, shown) in [
        (json!("foo & bar"), r#""foo & bar""#),
        (json!(""), r#""""#),
        (json!(1.5), "1.5"),
        (json!(1.0), "1.0"),
        (json!(true), "true"),
        (json!(null), "null"),
        (json!([1]), "[1]"),
        (json!({"a": 1}), r#"{"a":1}"#),
        (
            json!("a".repeat(512)),
            &*format!("\"{}\"", "a".repeat(512)).leak(),
        ),
    ] {
        let error = document_id_from_value(&value).unwrap_err();
        assert_eq!(error.code(), "invalid_document_id");
        assert_eq!(
            error.to_string(),
            format!("Document identifier `{shown}` {suffix}")
        );
    }
}

#[test]
fn missing_id_quotes_the_document_as_compact_json() {
    let first = document(json!({"id": "11", "content": "foobar"}));
    let error = extract_document_id(&first, "docid").unwrap_err();
    assert_eq!(error.code(), "missing_document_id");
    assert_eq!(
        error.to_string(),
        r#"Document doesn't have a `docid` attribute: `{"id":"11","content":"foobar"}`."#
    );
}

#[test]
fn nested_primary_key_is_found_through_objects_or_a_dotted_key() {
    assert_eq!(
        extract_document_id(&document(json!({"a": {"b": 1}})), "a.b")
            .expect("extract_document_id succeeds"),
        "1"
    );
    assert_eq!(
        extract_document_id(&document(json!({"a.b": "x"})), "a.b")
            .expect("extract_document_id succeeds"),
        "x"
    );
    assert_eq!(
        extract_document_id(&document(json!({"a": {"b.c": "y"}})), "a.b.c")
            .expect("extract_document_id succeeds"),
        "y"
    );
    assert_eq!(
        extract_document_id(&document(json!({"a.b": {"c": "z"}})), "a.b.c")
            .expect("extract_document_id succeeds"),
        "z"
    );
}

#[test]
fn nested_primary_key_skips_non_objects_and_arrays() {
    let error = extract_document_id(&document(json!({"a": 3})), "a.b").unwrap_err();
    assert_eq!(error.code(), "missing_document_id");
    let error = extract_document_id(&document(json!({"a": [{"b": 1}]})), "a.b").unwrap_err();
    assert_eq!(error.code(), "missing_document_id");
}

#[test]
fn nested_primary_key_matching_twice_is_too_many() {
    let first = document(json!({"a": {"b": 1}, "a.b": 2}));
    let error = extract_document_id(&first, "a.b").unwrap_err();
    assert_eq!(error.code(), "invalid_document_id");
    assert_eq!(
        error.to_string(),
        r#"Document have too many matching `a.b` attribute: `{"a":{"b":1},"a.b":2}`."#
    );
}

#[test]
fn nested_primary_key_with_invalid_value_reports_the_value() {
    let error = extract_document_id(&document(json!({"a": {"b": 1.5}})), "a.b").unwrap_err();
    assert_eq!(error.code(), "invalid_document_id");
    assert!(
        error
            .to_string()
            .starts_with("Document identifier `1.5` is invalid.")
    );
}
