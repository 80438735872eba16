//! Behaviour examples of validation and evaluation over the in-memory facet source.

#![allow(clippy::unwrap_used)]

use roaring::RoaringBitmap;
use serde_json::{Value, json};

use super::{
    EnabledFeatures, Filter, FilterErrorKind, FilterableRules, MemoryFacetSource, evaluate,
};
use crate::network_shards::NetworkShards;

fn documents() -> Vec<Value> {
    vec![
        json!({"id": 0, "title": "Hello World", "price": 10, "tags": ["a", "b"], "color": null,
               "_geo": {"lat": 48.8566, "lng": 2.3522}}),
        json!({"id": 1, "title": "hello", "price": 20.5, "tags": [], "color": "Red",
               "_geo": {"lat": "45.764", "lng": "4.8357"}}),
        json!({"id": 2, "title": "Bonjour", "price": "30", "nested": {"a": {"b": 3}}, "color": "",
               "empty_obj": {}, "eq_x": 5, "cmp_only": 7}),
        json!({"id": 3, "title": "ÉCOLE", "price": -5, "tags": ["A"], "flag": true,
               "nested": [{"a": {"b": 4}}, {"a": {"b": null}}],
               "_geo": {"lat": -33.8688, "lng": 151.2093}}),
        json!({"id": 4}),
    ]
}

fn source() -> MemoryFacetSource {
    let documents = documents();
    let mut source = MemoryFacetSource::from_documents(
        documents
            .iter()
            .enumerate()
            .map(|(id, document)| (id as u32, document)),
    );
    source.assign_shard("shard-a", 0);
    source.assign_shard("shard-a", 1);
    source.assign_shard("shard-b", 2);
    source
}

fn rules() -> FilterableRules {
    FilterableRules::from_setting(&json!([
        "title", "price", "tags", "color", "nested", "flag", "_geo", "empty_obj",
        {"attributePatterns": ["eq_*"]},
        {"attributePatterns": ["cmp_only"], "features": {"filter": {"equality": false, "comparison": true}}}
    ]))
    .expect("from_setting succeeds")
}

/// The network shards the filters of these examples are evaluated against.
fn network_shards() -> NetworkShards {
    NetworkShards::new([
        "shard-a".to_owned(),
        "shard-b".to_owned(),
        "shard-c".to_owned(),
    ])
}

#[track_caller]
fn parsed(filter: &str) -> Filter {
    Filter::parse(filter)
        .expect("parse succeeds")
        .expect("the value exists")
        .with_network_shards(Some(network_shards()))
}

#[track_caller]
fn selected(filter: &str) -> Vec<u32> {
    let parsed = parsed(filter);
    match evaluate(&parsed, &rules(), &source()) {
        Ok(documents) => documents.into_iter().collect(),
        Err(error) => panic!("{filter:?} failed: {error}"),
    }
}

#[track_caller]
fn refused(filter: &str, rules: &FilterableRules) -> String {
    let error = evaluate(&parsed(filter), rules, &source()).unwrap_err();
    let expected = if filter.contains("_shard") {
        FilterErrorKind::Shard
    } else {
        FilterErrorKind::Index
    };
    assert_eq!(error.kind, expected, "{filter:?}");
    error.message
}

#[test]
fn equality_is_normalized_and_matches_numbers_and_strings() {
    let examples: [(&str, &[u32]); 10] = [
        ("title = hello", &[1]),
        ("title = \"HELLO WORLD\"", &[0]),
        ("title = 'école'", &[3]),
        ("title = '  École '", &[3]),
        ("price = 10", &[0]),
        ("price = 30", &[2]),
        ("price = 10.0", &[0]),
        ("tags = a", &[0, 3]),
        ("flag = true", &[3]),
        ("title != hello", &[0, 2, 3, 4]),
    ];
    for (filter, expected) in examples {
        assert_eq!(selected(filter), expected, "{filter}");
    }
}

#[test]
fn comparisons_cover_numbers_and_strings() {
    let examples: [(&str, &[u32]); 8] = [
        // 20.5 as a number, and the string "30" because "30" > "10" byte-wise.
        ("price > 10", &[1, 2]),
        ("price >= 10", &[0, 1, 2]),
        ("price < 0", &[3]),
        ("price <= -5", &[3]),
        ("price 0 TO 20.5", &[0, 1]),
        ("price 20.5 TO 0", &[]),
        ("NOT price > 10", &[0, 3, 4]),
        ("title > h", &[0, 1]),
    ];
    for (filter, expected) in examples {
        assert_eq!(selected(filter), expected, "{filter}");
    }
}

#[test]
fn presence_operators_follow_the_value_kinds() {
    let examples: [(&str, &[u32]); 11] = [
        ("color IS NULL", &[0]),
        ("color IS NOT NULL", &[1, 2, 3, 4]),
        ("color IS EMPTY", &[2]),
        ("color EXISTS", &[0, 1, 2]),
        ("color NOT EXISTS", &[3, 4]),
        ("tags IS EMPTY", &[1]),
        ("empty_obj IS EMPTY", &[2]),
        ("nested EXISTS", &[2, 3]),
        ("nested.a.b = 3", &[2]),
        ("nested.a.b = 4", &[3]),
        ("nested.a.b IS NULL", &[3]),
    ];
    for (filter, expected) in examples {
        assert_eq!(selected(filter), expected, "{filter}");
    }
}

#[test]
fn word_operators_and_boolean_structure() {
    let examples: [(&str, &[u32]); 9] = [
        ("title CONTAINS ELL", &[0, 1]),
        ("title NOT CONTAINS ell", &[2, 3, 4]),
        ("title STARTS WITH hel", &[0, 1]),
        ("title STARTS WITH ''", &[0, 1, 2, 3]),
        ("title IN [hello, bonjour, nope]", &[1, 2]),
        ("title NOT IN [hello]", &[0, 2, 3, 4]),
        ("tags = a AND price < 0", &[3]),
        ("tags = b OR price = 30", &[0, 2]),
        ("(tags = a OR title = hello) AND NOT price = 10", &[1, 3]),
    ];
    for (filter, expected) in examples {
        assert_eq!(selected(filter), expected, "{filter}");
    }
}

#[test]
fn geo_filters_select_by_distance_and_box() {
    let examples: [(&str, &[u32]); 6] = [
        ("_geoRadius(48.8566, 2.3522, 1000)", &[0]),
        ("_geoRadius(46, 3, 400000)", &[0, 1]),
        ("_geoRadius(48.8566, 2.3522, 0)", &[0]),
        ("_geoBoundingBox([50, 5], [45, 2])", &[0, 1]),
        ("_geoBoundingBox([-30, -170], [-40, 150])", &[3]),
        ("NOT _geoRadius(46, 3, 400000)", &[2, 3, 4]),
    ];
    for (filter, expected) in examples {
        assert_eq!(selected(filter), expected, "{filter}");
    }
}

#[test]
fn geo_arguments_are_checked_with_meilisearch_messages() {
    let rules = rules();
    assert_eq!(
        refused("_geoRadius(100, 2, 10)", &rules),
        "Bad latitude `100`. Latitude must be contained between -90 and 90 degrees.\n12:15 _geoRadius(100, 2, 10)"
    );
    assert_eq!(
        refused("_geoRadius(10, 200, 10)", &rules),
        "Bad longitude `200`. Longitude must be contained between -180 and 180 degrees. Hint: try using `-160` instead.\n16:19 _geoRadius(10, 200, 10)"
    );
    assert_eq!(
        refused("_geoRadius(10, 20, 10, 2)", &rules),
        "Invalid resolution `2`. Resolution must be between 3 and 1000.\n24:25 _geoRadius(10, 20, 10, 2)"
    );
    assert_eq!(
        refused("_geoBoundingBox([1, 2], [3, 4])", &rules),
        "The top latitude `1` is below the bottom latitude `3`.\n29:30 _geoBoundingBox([1, 2], [3, 4])"
    );
    assert_eq!(
        refused("_geoRadius(1e400, 2, 10)", &rules),
        "Non finite floats are not supported\n12:17 _geoRadius(1e400, 2, 10)"
    );
    assert_eq!(
        refused("_geoPolygon([1, 2], [3, 4], [5, 6])", &rules),
        "Attribute `_geojson` is not filterable. Available filterable attribute patterns are: `_geo`, `cmp_only`, `color`, `empty_obj`, `eq_*`, `flag`, `nested`, `price`, `tags`, `title`.\n14:15 _geoPolygon([1, 2], [3, 4], [5, 6])"
    );
    let no_geo = FilterableRules::from_setting(&json!(["title"])).expect("from_setting succeeds");
    assert_eq!(
        refused("_geoRadius(1, 2, 10)", &no_geo),
        "Attribute `_geo/_geojson` is not filterable. Available filterable attribute patterns are: `title`.\n12:13 _geoRadius(1, 2, 10)"
    );
}

#[test]
fn geojson_points_answer_polygons_when_enabled() {
    let documents = [
        json!({"_geojson": {"type": "Point", "coordinates": [2.0, 1.0]}}),
        json!({"_geojson": {"type": "Feature", "geometry": {"type": "Point", "coordinates": [20.0, 10.0]}}}),
    ];
    let source = MemoryFacetSource::from_documents(
        documents
            .iter()
            .enumerate()
            .map(|(id, document)| (id as u32, document)),
    );
    let rules = FilterableRules::from_setting(&json!(["_geojson"])).expect("from_setting succeeds");
    let filter = Filter::parse("_geoPolygon([0, 0], [0, 5], [5, 5], [5, 0])")
        .expect("parse succeeds")
        .expect("the value exists");
    let result: Vec<u32> = evaluate(&filter, &rules, &source)
        .expect("evaluate succeeds")
        .into_iter()
        .collect();
    assert_eq!(result, [0]);
    let filter = Filter::parse("_geoRadius(10, 20, 1000)")
        .expect("parse succeeds")
        .expect("the value exists");
    let result: Vec<u32> = evaluate(&filter, &rules, &source)
        .expect("evaluate succeeds")
        .into_iter()
        .collect();
    assert_eq!(result, [1]);
}

#[test]
fn attributes_must_be_filterable() {
    assert_eq!(
        refused("title = x", &FilterableRules::default()),
        "Attribute `title` is not filterable. This index does not have configured filterable attributes.\n1:6 title = x"
    );
    let rules = FilterableRules::from_setting(&json!(["genres", "title", {"attributePatterns": ["x*"], "features": {"facetSearch": true, "filter": {"equality": false}}}])).expect("from_setting succeeds");
    assert_eq!(
        refused("title = x AND many = Glass", &rules),
        "Attribute `many` is not filterable. Available filterable attribute patterns are: `genres`, `title`.\n15:19 title = x AND many = Glass"
    );
    assert_eq!(
        refused("xylophone = 1", &rules),
        "Attribute `xylophone` is not filterable. Available filterable attribute patterns are: `genres`, `title`.\n1:10 xylophone = 1"
    );
    // Checked before evaluation, even behind an AND that selects nothing.
    assert_eq!(
        refused("title = nothing AND id = 3", &rules),
        "Attribute `id` is not filterable. Available filterable attribute patterns are: `genres`, `title`.\n21:23 title = nothing AND id = 3"
    );
}

#[test]
fn operators_must_be_allowed_by_the_matching_rule() {
    let rules = rules();
    assert_eq!(
        refused("eq_x > 3", &rules),
        "Filter operator `>` is not allowed for the attribute `eq_x`.\n  - Note: allowed operators: OR, AND, NOT, =, !=, IN, IS EMPTY, IS NULL, EXISTS.\n  - Note: field `eq_x` matched rule #8 in `filterableAttributes`\n  - Hint: enable comparison in rule #8 by modifying the features.filter object\n  - Hint: prepend another rule matching `eq_x` with appropriate filter features before rule #8"
    );
    assert_eq!(
        refused("cmp_only IN [7]", &rules),
        "Filter operator `=` is not allowed for the attribute `cmp_only`.\n  - Note: allowed operators: OR, AND, NOT, <, >, <=, >=, TO, IS EMPTY, IS NULL, EXISTS.\n  - Note: field `cmp_only` matched rule #9 in `filterableAttributes`\n  - Hint: enable equality in rule #9 by modifying the features.filter object\n  - Hint: prepend another rule matching `cmp_only` with appropriate filter features before rule #9"
    );
    assert_eq!(selected("eq_x = 5"), [2]);
    assert_eq!(selected("cmp_only > 6"), [2]);
    assert_eq!(selected("cmp_only 7 TO 7"), [2]);
    // An attribute no document has selects nothing before its operator is checked.
    assert!(selected("eq_missing > 3").is_empty());
    // An AND stops at its first empty operand: the forbidden operator after it is not reached.
    assert!(selected("title = nothing AND eq_x > 3").is_empty());
    assert!(refused("eq_x > 3 AND title = nothing", &rules).starts_with("Filter operator `>`"));
}

#[test]
fn unknown_attributes_select_nothing_even_negated() {
    assert!(selected("eq_unknown != 3").is_empty());
    let parsed = Filter::parse("eq_unknown != 3")
        .expect("parse succeeds")
        .expect("the value exists");
    let mut source = source();
    source.add_known_field("eq_unknown");
    let all: Vec<u32> = evaluate(&parsed, &rules(), &source)
        .expect("evaluate succeeds")
        .into_iter()
        .collect();
    assert_eq!(all, [0, 1, 2, 3, 4]);
}

#[test]
fn shard_filters_use_shard_membership() {
    assert_eq!(selected("_shard = shard-a"), [0, 1]);
    assert_eq!(selected("_shard != shard-a"), [2, 3, 4]);
    assert_eq!(selected("_shard IN [shard-a, shard-b]"), [0, 1, 2]);
    assert_eq!(selected("NOT _shard IN [shard-a, shard-b]"), [3, 4]);
    assert_eq!(selected("_shard = shard-c"), [] as [u32; 0]);
    assert_eq!(selected("_shard = shard-b OR price = 10"), [0, 2]);
    assert_eq!(
        refused("_shard = nope", &rules()),
        "Shard `nope` does not exist"
    );
    assert_eq!(
        refused("_shard IN [shard-a, nope]", &rules()),
        "Shard `nope` does not exist"
    );
    assert_eq!(
        refused("_shard EXISTS", &rules()),
        "Filter operator `EXISTS is not allowed for the special attribute `_shard`.\n  - Note: allowed operators: =, !=, IN. \n  - Note: other operators are not allowed for the special attribute `_shard`."
    );
    assert_eq!(
        refused("_shard shard-a TO shard-b", &rules()),
        "Filter operator `TO is not allowed for the special attribute `_shard`.\n  - Note: allowed operators: =, !=, IN. \n  - Note: other operators are not allowed for the special attribute `_shard`."
    );
    // Without network shards (a network without a leader) no shard exists.
    let unbound = Filter::parse("_shard = shard-a").unwrap().unwrap();
    let error = evaluate(&unbound, &rules(), &source()).unwrap_err();
    assert_eq!(error.message, "Shard `shard-a` does not exist");
    assert_eq!(
        refused("_shard > a", &rules()),
        "Filter operator `> is not allowed for the special attribute `_shard`.\n  - Note: allowed operators: =, !=, IN. \n  - Note: other operators are not allowed for the special attribute `_shard`."
    );
}

#[test]
fn vector_filters_name_unknown_embedders() {
    assert_eq!(
        refused("_vectors.e EXISTS", &rules()),
        "The embedder `e` does not exist. This index does not have any configured embedders.\n10:11 _vectors.e EXISTS"
    );
    assert!(selected("_vectors EXISTS").is_empty());
}

#[test]
fn json_forms_combine_with_and_and_or() {
    let filter = Filter::from_json(&json!(["tags = a", ["title = hello", "price = 10"]]))
        .expect("from_json succeeds")
        .expect("the value exists");
    let result: RoaringBitmap = evaluate(&filter, &rules(), &source()).expect("evaluate succeeds");
    assert_eq!(result.into_iter().collect::<Vec<_>>(), [0]);
    assert_eq!(
        Filter::from_json(&json!(["", [" "], []])).expect("from_json succeeds"),
        None
    );
    assert_eq!(
        Filter::from_json(&json!(null)).expect("from_json succeeds"),
        None
    );
    let single = Filter::from_json(&json!([["title = hello"]]))
        .expect("from_json succeeds")
        .expect("the value exists");
    assert_eq!(
        single.expression(),
        Filter::parse("title = hello")
            .expect("parse succeeds")
            .expect("the value exists")
            .expression()
    );
}

#[test]
fn json_type_errors_use_meilisearch_wording() {
    let examples = [
        (
            json!(true),
            "Invalid syntax for the filter parameter: `expected String, Array, found: true`.",
        ),
        (
            json!({"a": 1}),
            "Invalid syntax for the filter parameter: `expected String, Array, found: {\"a\":1}`.",
        ),
        (
            json!(["a = 1", 3]),
            "Invalid syntax for the filter parameter: `expected String, [String], found: 3`.",
        ),
        (
            json!([["a = 1", ["b"]]]),
            "Invalid syntax for the filter parameter: `expected String, found: [\"b\"]`.",
        ),
        // Types are checked before any string is parsed.
        (
            json!(["a &", 3]),
            "Invalid syntax for the filter parameter: `expected String, [String], found: 3`.",
        ),
    ];
    for (value, expected) in examples {
        let error = Filter::from_json(&value).unwrap_err();
        assert_eq!(error.kind, FilterErrorKind::InvalidType);
        assert_eq!(error.message, expected);
    }
}

#[test]
fn errors_in_array_elements_point_into_their_own_string() {
    let error = Filter::from_json(&json!(["a = 1", ["b &"]])).unwrap_err();
    assert_eq!(error.kind, FilterErrorKind::InvalidFilter);
    assert!(error.message.ends_with("\n1:4 b &"), "{}", error.message);
    let filter = Filter::from_json(&json!(["title = x", ["title = y", "nope = 2"]]))
        .expect("from_json succeeds")
        .expect("the value exists");
    let message = evaluate(&filter, &rules(), &source()).unwrap_err().message;
    assert!(message.ends_with("\n1:5 nope = 2"), "{message}");
}

#[test]
fn experimental_operators_need_their_feature() {
    let contains = "Using `CONTAINS` in a filter requires enabling the `contains filter` experimental feature. See https://github.com/orgs/meilisearch/discussions/763";
    let examples = [
        (json!("doggo CONTAINS kefir"), format!("{contains}\n7:15 doggo CONTAINS kefir")),
        (json!("doggo != echo AND doggo CONTAINS kefir"), format!("{contains}\n25:33 doggo != echo AND doggo CONTAINS kefir")),
        (json!(["doggo != echo", "doggo CONTAINS kefir"]), format!("{contains}\n7:15 doggo CONTAINS kefir")),
        (json!(["doggo != echo", ["doggo CONTAINS kefir"]]), format!("{contains}\n7:15 doggo CONTAINS kefir")),
        (json!("a NOT CONTAINS b"), format!("{contains}\n7:15 a NOT CONTAINS b")),
        (json!("_shard = a"), "using a shard filter requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805\n1:7 _shard = a".to_owned()),
        (json!("_vectors EXISTS"), "using a vector filter requires enabling the `multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846\n1:9 _vectors EXISTS".to_owned()),
    ];
    for (value, expected) in examples {
        let filter = Filter::from_json(&value)
            .expect("from_json succeeds")
            .expect("the value exists");
        let error = filter
            .check_features(EnabledFeatures::default())
            .unwrap_err();
        assert_eq!(error.kind, FilterErrorKind::FeatureNotEnabled);
        assert_eq!(error.message, expected);
    }
    let all = EnabledFeatures {
        contains_filter: true,
        network: true,
        multimodal: true,
    };
    let filter = Filter::parse("a CONTAINS b AND _shard = c AND _vectors EXISTS")
        .expect("parse succeeds")
        .expect("the value exists");
    assert!(filter.check_features(all).is_ok());
    // STARTS WITH is not gated in Meilisearch 1.41.
    let filter = Filter::parse("a STARTS WITH b")
        .expect("parse succeeds")
        .expect("the value exists");
    assert!(filter.check_features(EnabledFeatures::default()).is_ok());
}
