//! Expected outputs derived by hand from Meilisearch 1.41's formatting rules (matcher, crop
//! window, `format_fields`, `select_values`). Deterministic: no randomness.
#![allow(clippy::unwrap_used)]

use serde_json::{Map, Value, json};

use super::*;
use crate::analysis::TextSettings;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn known(_: &str) -> bool {
    true
}

fn all_fields() -> FieldVisibility<'static> {
    FieldVisibility {
        displayed: None,
        is_known: &known,
    }
}

fn highlight(attributes: &[&str]) -> FormatOptions {
    FormatOptions {
        attributes_to_highlight: attributes.iter().map(|name| (*name).to_owned()).collect(),
        ..FormatOptions::default()
    }
}

fn words(lists: &[&[&str]]) -> Vec<Vec<String>> {
    lists
        .iter()
        .map(|list| list.iter().map(|word| (*word).to_owned()).collect())
        .collect()
}

/// `_formatted` of `document` (retrieving all of it) for `q` with `words_per_term`.
fn formatted(
    q: &str,
    words_per_term: &[Vec<String>],
    document: Value,
    options: &FormatOptions,
) -> Value {
    let matcher = QueryMatcher::new(&TextSettings::default(), q, words_per_term);
    let document = object(document);
    let hit = format_hit(&matcher, &document, &document, &all_fields(), options);
    Value::Object(hit.formatted.expect("something is formatted"))
}

fn positions(
    q: &str,
    words_per_term: &[Vec<String>],
    document: Value,
    displayed: Option<&[String]>,
) -> Value {
    let matcher = QueryMatcher::new(&TextSettings::default(), q, words_per_term);
    let document = object(document);
    let options = FormatOptions {
        show_matches_position: true,
        ..FormatOptions::default()
    };
    let fields = FieldVisibility {
        displayed,
        is_known: &known,
    };
    let hit = format_hit(&matcher, &document, &document, &fields, &options);
    assert_eq!(hit.formatted, None, "nothing highlighted nor cropped");
    Value::Object(hit.matches_position.expect("positions were asked"))
}

#[test]
fn highlight_wraps_each_matched_word() {
    let out = formatted(
        "lord rings",
        &words(&[&["lord"], &["rings"]]),
        json!({"title": "The Lord of the Rings"}),
        &highlight(&["title"]),
    );
    assert_eq!(
        out,
        json!({"title": "The <em>Lord</em> of the <em>Rings</em>"})
    );
}

#[test]
fn prefix_match_highlights_only_the_typed_characters() {
    let out = formatted(
        "hel",
        &words(&[&["hello"]]),
        json!({"greeting": "hello world, Hel!"}),
        &highlight(&["*"]),
    );
    assert_eq!(
        out,
        json!({"greeting": "<em>hel</em>lo world, <em>Hel</em>!"})
    );
}

#[test]
fn typo_match_highlights_the_whole_word() {
    // "hallo" is a 1-typo derivation of "hello" (not the last word: no prefix).
    let out = formatted(
        "hello world",
        &words(&[&["hello", "hallo"], &["world"]]),
        json!({"text": "Hallo there, world"}),
        &highlight(&["text"]),
    );
    assert_eq!(out, json!({"text": "<em>Hallo</em> there, <em>world</em>"}));
}

#[test]
fn phrase_is_highlighted_only_as_a_whole_sequence() {
    let options = highlight(&["text"]);
    let out = formatted(
        "\"split world\"",
        &words(&[&["split", "world"]]),
        json!({"text": "split the world, then split world"}),
        &options,
    );
    assert_eq!(
        out,
        json!({"text": "split the world, then <em>split world</em>"})
    );
}
