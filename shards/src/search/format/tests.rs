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
    let matcher = QueryMatcher::new(
        &TextSettings::default(),
        q,
        words_per_term,
        &QueryLanguages::default(),
    );
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
    let matcher = QueryMatcher::new(
        &TextSettings::default(),
        q,
        words_per_term,
        &QueryLanguages::default(),
    );
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

fn crop(attributes: &[&str], crop_length: usize, marker: &str) -> FormatOptions {
    FormatOptions {
        attributes_to_crop: attributes.iter().map(|name| (*name).to_owned()).collect(),
        crop_length,
        crop_marker: marker.to_owned(),
        ..FormatOptions::default()
    }
}

const OVERVIEW: &str = "A young wizard discovers his magic powers and attends a school of \
                        witchcraft where he makes friends and enemies.";

#[test]
fn crop_keeps_the_window_around_the_match_with_the_custom_marker() {
    let mut options = crop(&["overview"], 5, "[…]");
    options.attributes_to_highlight = vec!["overview".to_owned()];
    let out = formatted(
        "school",
        &words(&[&["school"]]),
        json!({"overview": OVERVIEW}),
        &options,
    );
    assert_eq!(
        out,
        json!({"overview": "[…]attends a <em>school</em> of witchcraft[…]"})
    );
}

#[test]
fn crop_without_match_starts_at_the_beginning() {
    let out = formatted(
        "dragon",
        &words(&[&["dragon"]]),
        json!({"overview": OVERVIEW}),
        &crop(&["overview"], 3, "…"),
    );
    assert_eq!(out, json!({"overview": "A young wizard…"}));
}

#[test]
fn crop_adds_no_marker_when_the_text_is_not_cut() {
    let out = formatted(
        "wizard",
        &words(&[&["wizard"]]),
        json!({"title": "The wizard returns"}),
        &crop(&["title"], 10, "…"),
    );
    assert_eq!(out, json!({"title": "The wizard returns"}));
}

#[test]
fn crop_length_zero_keeps_the_whole_text() {
    let out = formatted(
        "school",
        &words(&[&["school"]]),
        json!({"overview": OVERVIEW}),
        &crop(&["overview"], 0, "…"),
    );
    assert_eq!(out, json!({"overview": OVERVIEW}));
}

#[test]
fn crop_length_of_an_attribute_overrides_crop_length() {
    let out = formatted(
        "magic",
        &words(&[&["magic"]]),
        json!({"overview": OVERVIEW, "tagline": "magic is might and might is magic"}),
        &crop(&["overview:1", "tagline"], 3, "…"),
    );
    assert_eq!(
        out,
        json!({"overview": "…magic…", "tagline": "magic is might…"})
    );
}

#[test]
fn crop_window_prefers_more_distinct_query_words() {
    let mut options = crop(&["text"], 4, "…");
    options.attributes_to_highlight = vec!["text".to_owned()];
    let out = formatted(
        "red fox",
        &words(&[&["red"], &["fox"]]),
        json!({"text": "red a b c d e f g h i j k l m the red fox runs"}),
        &options,
    );
    assert_eq!(out, json!({"text": "…the <em>red</em> <em>fox</em> runs"}));
}

#[test]
fn crop_of_a_phrase_longer_than_the_window_cuts_its_end() {
    let mut options = crop(&["text"], 3, "…");
    options.attributes_to_highlight = vec!["text".to_owned()];
    let out = formatted(
        "\"one two three four five\"",
        &words(&[&["one", "two", "three", "four", "five"]]),
        json!({"text": "one two three four five six"}),
        &options,
    );
    assert_eq!(out, json!({"text": "<em>one two three</em>…"}));
}

#[test]
fn wildcard_crop_is_overridden_by_a_later_attribute_entry() {
    let out = formatted(
        "",
        &[],
        json!({"a": "one two three four", "b": "one two three four"}),
        &crop(&["*:1", "b:2"], 10, "…"),
    );
    assert_eq!(out, json!({"a": "one…", "b": "one two…"}));
}

#[test]
fn empty_crop_marker_writes_nothing_at_the_cuts() {
    let out = formatted(
        "school",
        &words(&[&["school"]]),
        json!({"overview": OVERVIEW}),
        &crop(&["overview"], 1, ""),
    );
    assert_eq!(out, json!({"overview": "school"}));
}

#[test]
fn numbers_become_strings_and_booleans_and_null_stay() {
    let out = formatted(
        "42",
        &words(&[&["42"]]),
        json!({"id": 42, "price": 9.5, "stock": true, "note": null, "sizes": [42, 43]}),
        &highlight(&["id"]),
    );
    assert_eq!(
        out,
        json!({
            "id": "<em>42</em>",
            "price": "9.5",
            "stock": true,
            "note": null,
            "sizes": ["42", "43"]
        })
    );
}

#[test]
fn nested_objects_and_arrays_are_formatted_element_wise() {
    let document = json!({
        "author": {"name": "Tolkien", "born": 1892},
        "tags": ["ring quest", "rings of power", "elves"],
        "title": "The Hobbit"
    });
    let out = formatted(
        "tolkien ring",
        &words(&[&["tolkien"], &["ring", "rings"]]),
        document,
        &highlight(&["author.name", "tags"]),
    );
    assert_eq!(
        out,
        json!({
            "author": {"name": "<em>Tolkien</em>", "born": "1892"},
            "tags": ["<em>ring</em> quest", "<em>ring</em>s of power", "elves"],
            "title": "The Hobbit"
        })
    );
}

#[test]
fn highlighting_an_ancestor_highlights_its_leaves() {
    let out = formatted(
        "tolkien",
        &words(&[&["tolkien"]]),
        json!({"author": {"name": "Tolkien", "alias": ["Tolkien", "JRRT"]}}),
        &highlight(&["author"]),
    );
    assert_eq!(
        out,
        json!({"author": {"name": "<em>Tolkien</em>", "alias": ["<em>Tolkien</em>", "JRRT"]}})
    );
}

#[test]
fn formatted_holds_retrieved_and_highlighted_attributes_in_document_order() {
    let matcher = QueryMatcher::new(
        &TextSettings::default(),
        "lord",
        &words(&[&["lord"]]),
        &QueryLanguages::default(),
    );
    let document = object(json!({"id": 1, "title": "Lord", "overview": "a lord", "year": 1954}));
    let retrieved = object(json!({"id": 1, "year": 1954}));
    let hit = format_hit(
        &matcher,
        &document,
        &retrieved,
        &all_fields(),
        &highlight(&["overview"]),
    );
    let formatted = Value::Object(hit.formatted.expect("formatted succeeds"));
    assert_eq!(
        formatted,
        json!({"id": "1", "overview": "a <em>lord</em>", "year": "1954"})
    );
    let keys: Vec<&String> = match &formatted {
        Value::Object(map) => map.keys().collect(),
        _ => unreachable!(),
    };
    assert_eq!(keys, ["id", "overview", "year"]);
    assert_eq!(hit.matches_position, None);
}

#[test]
fn formatted_keeps_only_the_retrieved_part_of_a_nested_object() {
    let matcher = QueryMatcher::new(
        &TextSettings::default(),
        "x",
        &words(&[&["x"]]),
        &QueryLanguages::default(),
    );
    let document = object(json!({"id": 1, "doggo": {"name": "rex", "age": 3}}));
    let retrieved = object(json!({"doggo": {"name": "rex"}}));
    let hit = format_hit(
        &matcher,
        &document,
        &retrieved,
        &all_fields(),
        &highlight(&["id"]),
    );
    assert_eq!(
        hit.formatted.map(Value::Object),
        Some(json!({"id": "1", "doggo": {"name": "rex"}}))
    );
}

#[test]
fn no_formatted_without_a_highlighted_or_cropped_known_attribute() {
    let matcher = QueryMatcher::new(
        &TextSettings::default(),
        "lord",
        &words(&[&["lord"]]),
        &QueryLanguages::default(),
    );
    let document = object(json!({"title": "Lord"}));
    let hit = format_hit(
        &matcher,
        &document,
        &document,
        &all_fields(),
        &FormatOptions::default(),
    );
    assert_eq!(hit, FormattedHit::default());
    let unknown = |name: &str| name == "title";
    let fields = FieldVisibility {
        displayed: None,
        is_known: &unknown,
    };
    let hit = format_hit(
        &matcher,
        &document,
        &document,
        &fields,
        &highlight(&["nope"]),
    );
    assert_eq!(hit.formatted, None);
}

#[test]
fn attributes_not_displayed_are_neither_formatted_nor_positioned() {
    let displayed = vec!["title".to_owned()];
    let matcher = QueryMatcher::new(
        &TextSettings::default(),
        "lord",
        &words(&[&["lord"]]),
        &QueryLanguages::default(),
    );
    let document = object(json!({"title": "Lord", "secret": "lord"}));
    let retrieved = object(json!({"title": "Lord"}));
    let fields = FieldVisibility {
        displayed: Some(&displayed),
        is_known: &known,
    };
    let mut options = highlight(&["*", "secret"]);
    options.show_matches_position = true;
    let hit = format_hit(&matcher, &document, &retrieved, &fields, &options);
    assert_eq!(
        hit.formatted.map(Value::Object),
        Some(json!({"title": "<em>Lord</em>"}))
    );
    assert_eq!(
        hit.matches_position.map(Value::Object),
        Some(json!({"title": [{"start": 0, "length": 4}]}))
    );
}

#[test]
fn matches_position_gives_byte_offsets_in_multibyte_text() {
    // "Crème" is 6 bytes and "brûlée" 8: "Paris" starts at byte 19.
    let out = positions(
        "brulee paris",
        &words(&[&["brulee"], &["paris"]]),
        json!({"dessert": "Crème brûlée à Paris"}),
        None,
    );
    assert_eq!(
        out,
        json!({"dessert": [{"start": 7, "length": 8}, {"start": 19, "length": 5}]})
    );
}

#[test]
fn matches_position_of_a_prefix_counts_the_matched_original_bytes() {
    // "café" as prefix of "Cafés": 4 characters, 5 bytes (é is 2).
    let out = positions(
        "café",
        &words(&[&["cafe"]]),
        json!({"name": "Cafés de Tōkyō"}),
        None,
    );
    assert_eq!(out, json!({"name": [{"start": 0, "length": 5}]}));
}

#[test]
fn matches_position_of_cjk_words() {
    let out = positions(
        "日本",
        &words(&[&["日本"]]),
        json!({"title": "Visit 日本 today"}),
        None,
    );
    assert_eq!(out, json!({"title": [{"start": 6, "length": 6}]}));
}

#[test]
fn matches_position_of_nested_fields_uses_dotted_paths_and_indices() {
    let out = positions(
        "ring",
        &words(&[&["ring"]]),
        json!({
            "lore": {"artifact": "the one ring"},
            "tags": ["ring", "elves", "a ring"],
            "year": 1954
        }),
        None,
    );
    // An array keeps the matches of its last element that has any, as Meilisearch does.
    assert_eq!(
        out,
        json!({
            "lore.artifact": [{"start": 8, "length": 4}],
            "tags": [{"start": 2, "length": 4, "indices": [2]}]
        })
    );
}

#[test]
fn matches_position_keys_are_sorted_and_numbers_match() {
    let out = positions(
        "1954 lord",
        &words(&[&["1954"], &["lord"]]),
        json!({"year": 1954, "title": "Lord"}),
        None,
    );
    let keys: Vec<String> = match &out {
        Value::Object(map) => map.keys().cloned().collect(),
        _ => unreachable!(),
    };
    assert_eq!(keys, ["title", "year"]);
    assert_eq!(
        out,
        json!({"title": [{"start": 0, "length": 4}], "year": [{"start": 0, "length": 4}]})
    );
}

#[test]
fn phrase_with_a_stop_word_is_not_highlighted_as_in_meilisearch() {
    // Meilisearch's formatter tokenizes without stop words, so a stop-word hole never matches.
    let settings = TextSettings {
        stop_words: ["the".to_owned()].into_iter().collect(),
        ..TextSettings::default()
    };
    let matcher = QueryMatcher::new(
        &settings,
        "\"lord the rings\" lord",
        &words(&[&["lord", "rings"], &["lord"]]),
        &QueryLanguages::default(),
    );
    let document = object(json!({"title": "lord the rings"}));
    let hit = format_hit(
        &matcher,
        &document,
        &document,
        &all_fields(),
        &highlight(&["title"]),
    );
    assert_eq!(
        hit.formatted.map(Value::Object),
        Some(json!({"title": "<em>lord</em> the rings"}))
    );
}

#[test]
fn ngram_word_matches_the_joined_query_words() {
    let out = formatted(
        "sun flower",
        &words(&[&["sun", "sunflower"], &["flower", "sunflower"]]),
        json!({"text": "a sunflower in the sun"}),
        &highlight(&["text"]),
    );
    assert_eq!(
        out,
        json!({"text": "a <em>sunflower</em> in the <em>sun</em>"})
    );
}

#[test]
fn accented_prefix_highlights_the_original_characters() {
    let out = formatted(
        "world",
        &words(&[&["worldole"]]),
        json!({"name": "Ŵôřlḑôle"}),
        &highlight(&["name"]),
    );
    assert_eq!(out, json!({"name": "<em>Ŵôřlḑ</em>ôle"}));
}

#[test]
fn custom_tags_wrap_matches() {
    let mut options = highlight(&["title"]);
    options.highlight_pre_tag = "[".to_owned();
    options.highlight_post_tag = "]".to_owned();
    let out = formatted(
        "rings",
        &words(&[&["rings"]]),
        json!({"title": "The Rings"}),
        &options,
    );
    assert_eq!(out, json!({"title": "The [Rings]"}));
}

#[test]
fn placeholder_search_crops_without_highlighting() {
    let mut options = crop(&["overview"], 2, "…");
    options.attributes_to_highlight = vec!["*".to_owned()];
    let out = formatted("", &[], json!({"overview": OVERVIEW}), &options);
    assert_eq!(out, json!({"overview": "A young…"}));
}

#[test]
fn one_formatter_serves_many_hits() {
    let matcher = QueryMatcher::new(
        &TextSettings::default(),
        "lord",
        &words(&[&["lord"]]),
        &QueryLanguages::default(),
    );
    let documents = [
        object(json!({"title": "Lord"})),
        object(json!({"title": "no match"})),
    ];
    let options = highlight(&["title"]);
    let out: Vec<Value> = matcher.with_hit_formatter(&options, &all_fields(), |formatter| {
        documents
            .iter()
            .map(|document| {
                Value::Object(
                    formatter
                        .format(document, document)
                        .formatted
                        .expect("formatted succeeds"),
                )
            })
            .collect()
    });
    assert_eq!(
        out,
        [
            json!({"title": "<em>Lord</em>"}),
            json!({"title": "no match"})
        ]
    );
}

#[test]
fn prefix_typo_match_highlights_at_most_the_query_word_length() {
    // "helo" (last word, 1 typo) derived to "hello": 4 characters are highlighted.
    let out = formatted(
        "helo",
        &words(&[&["hello"]]),
        json!({"text": "hello helot"}),
        &highlight(&["text"]),
    );
    assert_eq!(out, json!({"text": "<em>hell</em>o <em>helo</em>t"}));
}

#[test]
fn matches_position_of_a_phrase_spans_all_its_words() {
    let out = positions(
        "\"the one ring\"",
        &words(&[&["the", "one", "ring"]]),
        json!({"text": "find the one ring, the one"}),
        None,
    );
    assert_eq!(out, json!({"text": [{"start": 5, "length": 12}]}));
}

#[test]
fn matches_position_is_empty_but_present_without_matches() {
    let out = positions("dragon", &words(&[&["dragon"]]), json!({"t": "a b"}), None);
    assert_eq!(out, json!({}));
}
