//! Settings model checks against Meilisearch 1.41 answers (expected values re-typed by hand).

#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::apply::{StoredSettings, task_details};
use super::decode::{
    SettingsFeatures, decode_settings_body, decode_sub_route_body, reset_sub_route, validate_update,
};
use super::model::Settings;
use crate::errors::Code;

fn patch(body: serde_json::Value) -> Settings {
    decode_settings_body(body).expect("decode_settings_body succeeds")
}

#[track_caller]
fn patch_error(body: serde_json::Value, code: Code, message: &str) {
    let error = decode_settings_body(body).unwrap_err();
    assert_eq!(error.message, message);
    assert_eq!(error.code, code);
}

#[test]
fn fresh_index_view_matches_meilisearch_defaults() {
    let view = StoredSettings::default().view(false, false);
    let expected = json!({
        "displayedAttributes": ["*"],
        "searchableAttributes": ["*"],
        "filterableAttributes": [],
        "sortableAttributes": [],
        "rankingRules": ["words", "typo", "proximity", "attributeRank", "sort", "wordPosition", "exactness"],
        "stopWords": [],
        "nonSeparatorTokens": [],
        "separatorTokens": [],
        "dictionary": [],
        "synonyms": {},
        "distinctAttribute": null,
        "proximityPrecision": "byWord",
        "typoTolerance": {"enabled": true, "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9}, "disableOnWords": [], "disableOnAttributes": [], "disableOnNumbers": false},
        "faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "alpha"}},
        "pagination": {"maxTotalHits": 1000},
        "embedders": {},
        "searchCutoffMs": null,
        "localizedAttributes": null,
        "facetSearch": true,
        "prefixSearch": "indexingTime"
    });
    assert_eq!(
        serde_json::to_string(&view).expect("to_string succeeds"),
        serde_json::to_string(&expected).expect("to_string succeeds")
    );
    assert_eq!(view.as_object().expect("as_object finds a value").len(), 20);
}

#[test]
fn gated_keys_appear_in_order_when_features_are_on() {
    let view = StoredSettings::default().view(true, true);
    let keys: Vec<&String> = view
        .as_object()
        .expect("as_object finds a value")
        .keys()
        .collect();
    assert_eq!(keys[4], "foreignKeys");
    assert_eq!(keys[21], "chat");
    assert_eq!(
        view["chat"],
        json!({"description": "", "documentTemplate": super::model::DEFAULT_DOCUMENT_TEMPLATE, "documentTemplateMaxBytes": 400, "searchParameters": {}})
    );
}

#[test]
fn bad_ranking_rule_is_refused_with_its_location() {
    patch_error(
        json!({"rankingRules": ["words", "foo"]}),
        Code::InvalidSettingsRankingRules,
        "Invalid value at `.rankingRules[1]`: `foo` ranking rule is invalid. Valid ranking rules are words, typo, sort, proximity, attribute, exactness and custom ranking rules.",
    );
    patch_error(
        json!({"rankingRules": ["_geoPoint(1,2):asc"]}),
        Code::InvalidSettingsRankingRules,
        "Invalid value at `.rankingRules[0]`: `_geoPoint` is a reserved keyword and thus can't be used as a ranking rule. `_geoPoint` can only be used for sorting at search time",
    );
    patch_error(
        json!({"rankingRules": ["_geo:asc"]}),
        Code::InvalidSettingsRankingRules,
        "Invalid value at `.rankingRules[0]`: `_geo` is a reserved keyword and thus can't be used as a ranking rule",
    );
}

#[test]
fn mixed_attribute_rules_are_refused_at_enqueue() {
    let update = patch(json!({"rankingRules": ["attribute", "wordPosition"]}));
    let error = validate_update(&update, SettingsFeatures::default()).unwrap_err();
    assert_eq!(error.code, Code::InvalidSettingsRankingRules);
    assert!(error.message.starts_with("Mixed usage of the attribute"));
}

#[test]
fn typo_sizes_out_of_order_are_refused() {
    patch_error(
        json!({"typoTolerance": {"minWordSizeForTypos": {"oneTypo": 9, "twoTypos": 5}}}),
        Code::InvalidSettingsTypoTolerance,
        "Invalid value at `.typoTolerance.minWordSizeForTypos`: `minWordSizeForTypos` setting is invalid. `oneTypo` and `twoTypos` fields should be between `0` and `255`, and `twoTypos` should be greater or equals to `oneTypo` but found `oneTypo: 9` and twoTypos: 5`.",
    );
}

#[test]
fn unknown_top_level_key_is_bad_request() {
    let error = decode_settings_body(json!({"foo": 1})).unwrap_err();
    assert_eq!(error.code, Code::BadRequest);
    assert!(error.message.starts_with("Unknown field `foo`: expected one of `displayedAttributes`, `searchableAttributes`, `filterableAttributes`, `sortableAttributes`, `foreignKeys`, `rankingRules`"), "{}", error.message);
}

#[test]
fn type_errors_carry_the_setting_code() {
    patch_error(
        json!({"stopWords": "doggo"}),
        Code::InvalidSettingsStopWords,
        "Invalid value type at `.stopWords`: expected an array, but found a string: `\"doggo\"`",
    );
    patch_error(
        json!({"proximityPrecision": "byFoo"}),
        Code::InvalidSettingsProximityPrecision,
        "Unknown value `byFoo` at `.proximityPrecision`: expected one of `byWord`, `byAttribute`",
    );
    patch_error(
        json!({"pagination": {"maxTotalHits": 0}}),
        Code::InvalidSettingsPagination,
        "Invalid value at `.pagination.maxTotalHits`: a non-zero integer value lower than `18446744073709551615` was expected, but found a zero",
    );
}

#[test]
fn sub_route_errors_have_no_location() {
    let error = decode_sub_route_body("stop-words", json!("doggo"))
        .expect("decode_sub_route_body succeeds")
        .unwrap_err();
    assert_eq!(error.code, Code::InvalidSettingsStopWords);
    assert_eq!(
        error.message,
        "Invalid value type: expected an array, but found a string: `\"doggo\"`"
    );
    let error = decode_sub_route_body("ranking-rules", json!(["foo"]))
        .expect("decode_sub_route_body succeeds")
        .unwrap_err();
    assert_eq!(error.code, Code::InvalidSettingsRankingRules);
    assert!(
        error
            .message
            .starts_with("Invalid value at `[0]`: `foo` ranking rule"),
        "{}",
        error.message
    );
    assert!(decode_sub_route_body("nope", json!(null)).is_none());
}

#[test]
fn sub_route_null_resets_and_delete_resets() {
    let update = decode_sub_route_body("distinct-attribute", json!(null))
        .expect("decode_sub_route_body succeeds")
        .expect("the value exists");
    assert_eq!(task_details(&update), json!({"distinctAttribute": null}));
    let update = reset_sub_route("displayed-attributes").expect("reset_sub_route succeeds");
    assert_eq!(task_details(&update), json!({"displayedAttributes": ["*"]}));
}

#[test]
fn merge_replaces_resets_and_keeps() {
    let mut stored = StoredSettings::default();
    stored.apply(patch(json!({"stopWords": ["b", "a", "a"], "distinctAttribute": "sku", "typoTolerance": {"enabled": false}}))).expect("apply succeeds");
    stored
        .apply(patch(
            json!({"typoTolerance": {"disableOnNumbers": true}, "distinctAttribute": null}),
        ))
        .expect("apply succeeds");
    let view = stored.view(false, false);
    assert_eq!(view["stopWords"], json!(["a", "b"]));
    assert_eq!(view["distinctAttribute"], json!(null));
    assert_eq!(view["typoTolerance"]["enabled"], json!(false));
    assert_eq!(view["typoTolerance"]["disableOnNumbers"], json!(true));
    stored
        .apply(patch(json!({"displayedAttributes": ["title", "*"]})))
        .expect("apply succeeds");
    assert_eq!(
        stored.view(false, false)["displayedAttributes"],
        json!(["*"])
    );
}

#[test]
fn stored_typo_sizes_out_of_order_fail_the_task() {
    let mut stored = StoredSettings::default();
    let error = stored
        .apply(patch(
            json!({"typoTolerance": {"minWordSizeForTypos": {"oneTypo": 10}}}),
        ))
        .unwrap_err();
    assert_eq!(error.code, Code::InvalidSettingsTypoTolerance);
    assert_eq!(stored, StoredSettings::default());
}

#[test]
fn facet_sort_always_shows_the_star_entry() {
    let mut stored = StoredSettings::default();
    stored
        .apply(patch(
            json!({"faceting": {"sortFacetValuesBy": {"genre": "count"}}}),
        ))
        .expect("apply succeeds");
    assert_eq!(
        stored.view(false, false)["faceting"]["sortFacetValuesBy"],
        json!({"*": "alpha", "genre": "count"})
    );
}

#[test]
fn locales_are_read_back_in_three_letter_form() {
    let update = patch(
        json!({"localizedAttributes": [{"attributePatterns": ["*_ja"], "locales": ["ja", "eng"]}]}),
    );
    assert_eq!(
        task_details(&update)["localizedAttributes"][0]["locales"],
        json!(["ja", "eng"])
    );
    let mut stored = StoredSettings::default();
    stored.apply(update).expect("apply succeeds");
    assert_eq!(
        stored.view(false, false)["localizedAttributes"][0]["locales"],
        json!(["jpn", "eng"])
    );
    let error = decode_settings_body(
        json!({"localizedAttributes": [{"attributePatterns": ["a"], "locales": ["xx"]}]}),
    )
    .unwrap_err();
    assert_eq!(error.code, Code::InvalidSettingsLocalizedAttributes);
    assert!(
        error.message.starts_with(
            "Unknown value `xx` at `.localizedAttributes[0].locales[0]`: expected one of `af`, `ak`"
        ),
        "{}",
        error.message
    );
}

#[test]
fn chat_and_foreign_keys_need_their_features() {
    let update = patch(json!({"chat": {"description": "movies"}}));
    let error = validate_update(&update, SettingsFeatures::default()).unwrap_err();
    assert_eq!(error.code, Code::FeatureNotEnabled);
    assert_eq!(
        error.message,
        "setting `chat` in the index settings requires enabling the `chat completions` experimental feature. See https://github.com/orgs/meilisearch/discussions/835"
    );
    let update = patch(json!({"foreignKeys": [{"foreignIndexUid": "a", "fieldName": "b"}]}));
    let error = validate_update(&update, SettingsFeatures::default()).unwrap_err();
    assert_eq!(
        error.message,
        "setting `foreignKeys` in the index settings requires enabling the `foreign_keys` experimental feature. See https://github.com/orgs/meilisearch/discussions/873"
    );
    let features = SettingsFeatures {
        chat_completions: true,
        foreign_keys: true,
        ..Default::default()
    };
    assert!(validate_update(&update, features).is_ok());
    assert!(validate_update(&Settings::cleared(), SettingsFeatures::default()).is_ok());
}

#[test]
fn details_keep_request_order_and_mask_api_keys() {
    let update = patch(
        json!({"rankingRules": ["typo"], "displayedAttributes": null, "embedders": {"default": {"source": "rest", "apiKey": "My super secret value you will never guess"}}}),
    );
    let details = task_details(&update);
    assert_eq!(
        serde_json::to_string(&details).expect("to_string succeeds"),
        r#"{"displayedAttributes":["*"],"rankingRules":["typo"],"embedders":{"default":{"source":"rest","apiKey":"My suXXXXXX..."}}}"#
    );
}

#[test]
fn stored_settings_round_trip_through_bytes() {
    let mut stored = StoredSettings::default();
    stored.apply(patch(json!({"filterableAttributes": ["a", {"attributePatterns": ["b*"], "features": {"facetSearch": true}}], "rankingRules": ["price:desc"]}))).expect("apply succeeds");
    assert_eq!(
        StoredSettings::from_bytes(&stored.to_bytes()).expect("from_bytes succeeds"),
        stored
    );
    assert_eq!(
        stored.view(false, false)["filterableAttributes"],
        json!(["a", {"attributePatterns": ["b*"], "features": {"facetSearch": true, "filter": {"equality": true, "comparison": false}}}])
    );
}
