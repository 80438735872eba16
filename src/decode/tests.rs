//! End-to-end checks of the decode layer on realistic request types: the
//! `PATCH /experimental-features` body, a search body, a `GET /tasks`-like and a
//! `GET /search`-like query. Every expected message is written out by hand from
//! Meilisearch v1.41's answers.

#![allow(clippy::unwrap_used)]

use std::fmt;

use deserr::Deserr;

use super::json::{
    check_json_content_type, decode_json_body, decode_json_request, decode_serde_json_body,
};
use super::payload::BodyReadFailure;
use super::query::{FromQueryParameter, Param, decode_query};
use super::star_or::{OptionStarOr, OptionStarOrList};
use super::{JsonError, QueryError};
use crate::errors::{Code, ResponseError, codes};

const JSON: Option<&[u8]> = Some(b"application/json");

/// The body of `PATCH /experimental-features`.
#[derive(Debug, Default, PartialEq, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct ExperimentalFeaturesPatch {
    #[deserr(default)]
    metrics: Option<bool>,
    #[deserr(default)]
    logs_route: Option<bool>,
    #[deserr(default)]
    edit_documents_by_function: Option<bool>,
    #[deserr(default)]
    contains_filter: Option<bool>,
    #[deserr(default)]
    dynamic_search_rules: Option<bool>,
    #[deserr(default)]
    network: Option<bool>,
    #[deserr(default)]
    get_task_documents_route: Option<bool>,
    #[deserr(default)]
    task_queue_compaction_route: Option<bool>,
    #[deserr(default)]
    composite_embedders: Option<bool>,
    #[deserr(default)]
    chat_completions: Option<bool>,
    #[deserr(default)]
    multimodal: Option<bool>,
    #[deserr(default)]
    foreign_keys: Option<bool>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserr)]
#[deserr(rename_all = camelCase)]
enum MatchingStrategy {
    #[default]
    Last,
    All,
    Frequency,
}

/// A float in `[0, 1]`, refused with a custom message otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Deserr)]
#[deserr(try_from(f64) = RankingScoreThreshold::new -> RankingScoreThresholdError)]
struct RankingScoreThreshold(f64);

#[derive(Debug)]
struct RankingScoreThresholdError;

impl fmt::Display for RankingScoreThresholdError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(
            "the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`.",
        )
    }
}

impl std::error::Error for RankingScoreThresholdError {}

impl RankingScoreThreshold {
    fn new(value: f64) -> Result<Self, RankingScoreThresholdError> {
        if (0.0..=1.0).contains(&value) {
            Ok(RankingScoreThreshold(value))
        } else {
            Err(RankingScoreThresholdError)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Deserr)]
#[deserr(try_from(f32) = SemanticRatio::new -> SemanticRatioError)]
struct SemanticRatio(f32);

impl Default for SemanticRatio {
    fn default() -> Self {
        SemanticRatio(0.5)
    }
}

#[derive(Debug)]
struct SemanticRatioError;

impl fmt::Display for SemanticRatioError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(
            "the value of `semanticRatio` is invalid, expected a float between `0.0` and `1.0`.",
        )
    }
}

impl std::error::Error for SemanticRatioError {}

impl SemanticRatio {
    fn new(value: f32) -> Result<Self, SemanticRatioError> {
        if (0.0..=1.0).contains(&value) {
            Ok(SemanticRatio(value))
        } else {
            Err(SemanticRatioError)
        }
    }
}

/// A nested object whose own problems carry the `hybrid` field's code, except for fields
/// that name their own.
#[derive(Debug, PartialEq, Deserr)]
#[deserr(error = JsonError<codes::InvalidSearchHybridQuery>, rename_all = camelCase, deny_unknown_fields)]
struct HybridQuery {
    #[deserr(default, error = JsonError<codes::InvalidSearchSemanticRatio>)]
    semantic_ratio: SemanticRatio,
    #[deserr(error = JsonError<codes::InvalidSearchEmbedder>)]
    embedder: String,
}

/// A slice of `POST /indexes/{uid}/search`.
#[derive(Debug, PartialEq, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct SearchBody {
    #[deserr(default, error = JsonError<codes::InvalidSearchQ>)]
    q: Option<String>,
    #[deserr(default = 0, error = JsonError<codes::InvalidSearchOffset>)]
    offset: usize,
    #[deserr(default = 20, error = JsonError<codes::InvalidSearchLimit>)]
    limit: usize,
    #[deserr(default, error = JsonError<codes::InvalidSearchMatchingStrategy>)]
    matching_strategy: MatchingStrategy,
    #[deserr(default, error = JsonError<codes::InvalidSearchRankingScoreThreshold>)]
    ranking_score_threshold: Option<RankingScoreThreshold>,
    #[deserr(default, error = JsonError<codes::InvalidSearchHybridQuery>)]
    hybrid: Option<HybridQuery>,
    #[deserr(default, error = JsonError<codes::InvalidSearchAttributesToRetrieve>)]
    attributes_to_retrieve: Option<Vec<String>>,
}

/// A body with a required field that has a dedicated `missing_*` code.
#[derive(Debug, PartialEq, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct CreateIndexBody {
    #[deserr(error = JsonError<codes::InvalidIndexUid>, missing_field_error = JsonError::<codes::MissingIndexUid>::missing_field)]
    uid: String,
    #[deserr(default, error = JsonError<codes::InvalidIndexPrimaryKey>)]
    primary_key: Option<String>,
}

fn features(body: &str) -> Result<ExperimentalFeaturesPatch, ResponseError> {
    decode_json_body::<ExperimentalFeaturesPatch, JsonError>(JSON, body.as_bytes())
}

fn search(body: &str) -> Result<SearchBody, ResponseError> {
    decode_json_body::<SearchBody, JsonError>(JSON, body.as_bytes())
}

#[track_caller]
fn assert_error<T: fmt::Debug>(
    result: Result<T, ResponseError>,
    code: Code,
    status: u16,
    message: &str,
) {
    let error = result.unwrap_err();
    assert_eq!(error.message, message);
    assert_eq!(error.code, code, "code for {message}");
    assert_eq!(error.status(), status, "status for {message}");
}

// ---------------------------------------------------------------- content type and raw body

#[test]
fn missing_content_type_is_415_listing_application_json() {
    assert_error(
        decode_json_body::<ExperimentalFeaturesPatch, JsonError>(None, b"{}"),
        Code::MissingContentType,
        415,
        "A Content-Type header is missing. Accepted values for the Content-Type header are: `application/json`",
    );
}

#[test]
fn non_json_content_type_is_415_showing_the_raw_header() {
    let cases: &[(&[u8], &str)] = &[
        (b"text/plain", "text/plain"),
        (b"", ""),
        (
            b"application/xml; charset=utf-8",
            "application/xml; charset=utf-8",
        ),
        (b"json", "json"),
        ("application/jsön".as_bytes(), "unknown"),
    ];
    for (header, shown) in cases {
        assert_error(
            check_json_content_type(Some(header)),
            Code::InvalidContentType,
            415,
            &format!(
                "The Content-Type `{shown}` is invalid. Accepted values for the Content-Type header are: `application/json`"
            ),
        );
    }
}

#[test]
fn json_subtype_or_suffix_is_accepted_with_parameters() {
    let accepted: &[&[u8]] = &[
        b"application/json",
        b"application/json; charset=utf-8",
        b"Application/JSON",
        b"text/json",
        b"application/merge-patch+json",
        b"application/vnd.api+json; charset=utf-8",
    ];
    for header in accepted {
        assert!(
            check_json_content_type(Some(header)).is_ok(),
            "{}",
            String::from_utf8_lossy(header)
        );
    }
}

#[test]
fn empty_body_is_missing_payload() {
    assert_error(
        features(""),
        Code::MissingPayload,
        400,
        "A json payload is missing.",
    );
}

#[test]
fn syntax_errors_are_malformed_payload_with_serde_json_message() {
    assert_error(
        features(r#"{"malormed": "payload""#),
        Code::MalformedPayload,
        400,
        "The json payload provided is malformed. `EOF while parsing an object at line 1 column 22`.",
    );
    assert_error(
        features("   "),
        Code::MalformedPayload,
        400,
        "The json payload provided is malformed. `EOF while parsing a value at line 1 column 3`.",
    );
    assert_error(
        features("{} x"),
        Code::MalformedPayload,
        400,
        "The json payload provided is malformed. `trailing characters at line 1 column 4`.",
    );
    assert_error(
        features("{\"metrics\": tru}"),
        Code::MalformedPayload,
        400,
        "The json payload provided is malformed. `expected ident at line 1 column 16`.",
    );
}

#[test]
fn plain_serde_routes_report_type_errors_as_json_deserialize_error() {
    let result = decode_serde_json_body::<Vec<String>>(JSON, br#""doggo""#);
    assert_error(
        result,
        Code::BadRequest,
        400,
        "Json deserialize error: invalid type: string \"doggo\", expected a sequence at line 1 column 7",
    );
}

#[test]
fn content_type_is_checked_before_body_read_failures() {
    let too_large = Err(BodyReadFailure::TooLarge {
        content_length: Some(11),
        limit: 10,
    });
    assert_error(
        decode_json_request::<ExperimentalFeaturesPatch, JsonError>(Some(b"text/plain"), too_large),
        Code::InvalidContentType,
        415,
        "The Content-Type `text/plain` is invalid. Accepted values for the Content-Type header are: `application/json`",
    );
    assert_error(
        decode_json_request::<ExperimentalFeaturesPatch, JsonError>(JSON, too_large),
        Code::PayloadTooLarge,
        413,
        "JSON payload (11 bytes) is larger than allowed (limit: 10 bytes).",
    );
    let streamed = Err(BodyReadFailure::TooLarge {
        content_length: None,
        limit: 10,
    });
    assert_error(
        decode_json_request::<ExperimentalFeaturesPatch, JsonError>(JSON, streamed),
        Code::PayloadTooLarge,
        413,
        "JSON payload has exceeded limit (10 bytes).",
    );
    let decoded = decode_json_request::<ExperimentalFeaturesPatch, JsonError>(
        JSON,
        Ok(br#"{"network": true}"#),
    )
    .expect("decode_json_request succeeds");
    assert_eq!(decoded.network, Some(true));
}

// ---------------------------------------------------------------- experimental features

#[test]
fn features_patch_accepts_booleans_and_null() {
    let patch = features(r#"{"metrics": true, "logsRoute": null, "foreignKeys": false}"#)
        .expect("features succeeds");
    assert_eq!(
        patch,
        ExperimentalFeaturesPatch {
            metrics: Some(true),
            foreign_keys: Some(false),
            ..ExperimentalFeaturesPatch::default()
        }
    );
    assert_eq!(
        features("{}").expect("features succeeds"),
        ExperimentalFeaturesPatch::default()
    );
}

#[test]
fn features_patch_wrong_type_is_bad_request_with_found_value() {
    assert_error(
        features(r#"{"metrics": "doggo"}"#),
        Code::BadRequest,
        400,
        "Invalid value type at `.metrics`: expected a boolean, but found a string: `\"doggo\"`",
    );
    assert_error(
        features(r#"{"metrics": 42}"#),
        Code::BadRequest,
        400,
        "Invalid value type at `.metrics`: expected a boolean, but found a positive integer: `42`",
    );
    assert_error(
        features(r#"{"network": {"b": 1, "a": [1.5, -2]}}"#),
        Code::BadRequest,
        400,
        "Invalid value type at `.network`: expected a boolean, but found an object: `{\"b\":1,\"a\":[1.5,-2]}`",
    );
}

#[test]
fn features_patch_unknown_key_lists_every_feature() {
    assert_error(
        features(r#"{"NotAFeature": true}"#),
        Code::BadRequest,
        400,
        "Unknown field `NotAFeature`: expected one of `metrics`, `logsRoute`, `editDocumentsByFunction`, `containsFilter`, `dynamicSearchRules`, `network`, `getTaskDocumentsRoute`, `taskQueueCompactionRoute`, `compositeEmbedders`, `chatCompletions`, `multimodal`, `foreignKeys`",
    );
}

#[test]
fn unknown_key_suggests_the_closest_name_within_the_typo_budget() {
    // "logs_route" has 10 bytes: 2 edits allowed, and it is 2 edits from "logsRoute".
    assert_error(
        features(r#"{"logs_route": true}"#),
        Code::BadRequest,
        400,
        "Unknown field `logs_route`: did you mean `logsRoute`? expected one of `metrics`, `logsRoute`, `editDocumentsByFunction`, `containsFilter`, `dynamicSearchRules`, `network`, `getTaskDocumentsRoute`, `taskQueueCompactionRoute`, `compositeEmbedders`, `chatCompletions`, `multimodal`, `foreignKeys`",
    );
    // 3 bytes: no typo allowed, so no suggestion even for one edit.
    assert_error(
        search(r#"{"qq": "a"}"#),
        Code::BadRequest,
        400,
        "Unknown field `qq`: expected one of `q`, `offset`, `limit`, `matchingStrategy`, `rankingScoreThreshold`, `hybrid`, `attributesToRetrieve`",
    );
    // 4 bytes: one edit allowed.
    assert_error(
        search(r#"{"lmit": 1}"#),
        Code::BadRequest,
        400,
        "Unknown field `lmit`: did you mean `limit`? expected one of `q`, `offset`, `limit`, `matchingStrategy`, `rankingScoreThreshold`, `hybrid`, `attributesToRetrieve`",
    );
    // A transposition is one edit.
    assert_error(
        search(r#"{"lmiit": 1}"#),
        Code::BadRequest,
        400,
        "Unknown field `lmiit`: did you mean `limit`? expected one of `q`, `offset`, `limit`, `matchingStrategy`, `rankingScoreThreshold`, `hybrid`, `attributesToRetrieve`",
    );
    // 7 bytes, two edits from `limit`: over the budget of one.
    assert_error(
        search(r#"{"limmitt": 1}"#),
        Code::BadRequest,
        400,
        "Unknown field `limmitt`: expected one of `q`, `offset`, `limit`, `matchingStrategy`, `rankingScoreThreshold`, `hybrid`, `attributesToRetrieve`",
    );
}

#[test]
fn root_of_the_wrong_type_has_no_location() {
    assert_error(
        features("null"),
        Code::BadRequest,
        400,
        "Invalid value type: expected an object, but found null",
    );
    assert_error(
        features(r#""doggo""#),
        Code::BadRequest,
        400,
        "Invalid value type: expected an object, but found a string: `\"doggo\"`",
    );
}

// ---------------------------------------------------------------- search body

#[test]
fn search_body_defaults_and_values() {
    let body = search(
        r#"{"q": "hello", "limit": 3, "matchingStrategy": "frequency", "rankingScoreThreshold": 0.25, "hybrid": {"embedder": "default"}}"#,
    )
    .expect("search succeeds");
    assert_eq!(body.q.as_deref(), Some("hello"));
    assert_eq!(body.offset, 0);
    assert_eq!(body.limit, 3);
    assert_eq!(body.matching_strategy, MatchingStrategy::Frequency);
    assert_eq!(
        body.ranking_score_threshold,
        Some(RankingScoreThreshold(0.25))
    );
    let hybrid = body.hybrid.expect("`hybrid` holds a value");
    assert_eq!(hybrid.semantic_ratio, SemanticRatio(0.5));
    assert_eq!(hybrid.embedder, "default");
    assert_eq!(search("{}").expect("search succeeds").limit, 20);
}

#[test]
fn wrong_type_inside_a_field_carries_the_field_code() {
    assert_error(
        search(r#"{"limit": "doggo"}"#),
        Code::InvalidSearchLimit,
        400,
        "Invalid value type at `.limit`: expected a positive integer, but found a string: `\"doggo\"`",
    );
    assert_error(
        search(r#"{"limit": -1}"#),
        Code::InvalidSearchLimit,
        400,
        "Invalid value type at `.limit`: expected a positive integer, but found a negative integer: `-1`",
    );
    assert_error(
        search(r#"{"limit": 1.5}"#),
        Code::InvalidSearchLimit,
        400,
        "Invalid value type at `.limit`: expected a positive integer, but found a number: `1.5`",
    );
    assert_error(
        search(r#"{"q": ["a"]}"#),
        Code::InvalidSearchQ,
        400,
        "Invalid value type at `.q`: expected a string, but found an array: `[\"a\"]`",
    );
    assert_error(
        search(r#"{"attributesToRetrieve": ["title", 3]}"#),
        Code::InvalidSearchAttributesToRetrieve,
        400,
        "Invalid value type at `.attributesToRetrieve[1]`: expected a string, but found a positive integer: `3`",
    );
    assert_error(
        search(r#"{"attributesToRetrieve": "title"}"#),
        Code::InvalidSearchAttributesToRetrieve,
        400,
        "Invalid value type at `.attributesToRetrieve`: expected an array, but found a string: `\"title\"`",
    );
    assert_error(
        search(r#"{"rankingScoreThreshold": "doggo"}"#),
        Code::InvalidSearchRankingScoreThreshold,
        400,
        "Invalid value type at `.rankingScoreThreshold`: expected a number, but found a string: `\"doggo\"`",
    );
}

#[test]
fn unknown_enum_value_lists_the_variants() {
    assert_error(
        search(r#"{"matchingStrategy": "doggo"}"#),
        Code::InvalidSearchMatchingStrategy,
        400,
        "Unknown value `doggo` at `.matchingStrategy`: expected one of `last`, `all`, `frequency`",
    );
    assert_error(
        search(r#"{"matchingStrategy": "frequensy"}"#),
        Code::InvalidSearchMatchingStrategy,
        400,
        "Unknown value `frequensy` at `.matchingStrategy`: did you mean `frequency`? expected one of `last`, `all`, `frequency`",
    );
}

#[test]
fn custom_validation_is_invalid_value_with_the_field_code() {
    assert_error(
        search(r#"{"rankingScoreThreshold": 42}"#),
        Code::InvalidSearchRankingScoreThreshold,
        400,
        "Invalid value at `.rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`.",
    );
}

#[test]
fn nested_object_problems_carry_the_top_level_field_code() {
    assert_error(
        search(r#"{"hybrid": {}}"#),
        Code::InvalidSearchHybridQuery,
        400,
        "Missing field `embedder` inside `.hybrid`",
    );
    assert_error(
        search(r#"{"hybrid": {"embedder": "e", "doggo": 1}}"#),
        Code::InvalidSearchHybridQuery,
        400,
        "Unknown field `doggo` inside `.hybrid`: expected one of `semanticRatio`, `embedder`",
    );
    assert_error(
        search(r#"{"hybrid": "e"}"#),
        Code::InvalidSearchHybridQuery,
        400,
        "Invalid value type at `.hybrid`: expected an object, but found a string: `\"e\"`",
    );
    // A nested field with its own code keeps it.
    assert_error(
        search(r#"{"hybrid": {"embedder": "e", "semanticRatio": 2}}"#),
        Code::InvalidSearchSemanticRatio,
        400,
        "Invalid value at `.hybrid.semanticRatio`: the value of `semanticRatio` is invalid, expected a float between `0.0` and `1.0`.",
    );
}

#[test]
fn first_problem_in_body_order_wins() {
    assert_error(
        search(r#"{"doggo": 1, "limit": "x"}"#),
        Code::BadRequest,
        400,
        "Unknown field `doggo`: expected one of `q`, `offset`, `limit`, `matchingStrategy`, `rankingScoreThreshold`, `hybrid`, `attributesToRetrieve`",
    );
    assert_error(
        search(r#"{"limit": "x", "doggo": 1}"#),
        Code::InvalidSearchLimit,
        400,
        "Invalid value type at `.limit`: expected a positive integer, but found a string: `\"x\"`",
    );
}

#[test]
fn missing_required_field_uses_its_dedicated_code() {
    assert_error(
        decode_json_body::<CreateIndexBody, JsonError>(JSON, br#"{"primaryKey": "id"}"#),
        Code::MissingIndexUid,
        400,
        "Missing field `uid`",
    );
    let body = decode_json_body::<CreateIndexBody, JsonError>(JSON, br#"{"uid": "movies"}"#)
        .expect("decode_json_body succeeds");
    assert_eq!(body.uid, "movies");
}

#[test]
fn immutable_field_message_names_the_mutable_fields() {
    let error = JsonError::<codes::BadRequest>::immutable_field(
        "uid",
        &["description", "name"],
        Code::ImmutableApiKeyUid,
    );
    let response = ResponseError::from(error);
    assert_eq!(
        response.message,
        "Immutable field `uid`: expected one of `description`, `name`"
    );
    assert_eq!(response.code, Code::ImmutableApiKeyUid);
}

// ---------------------------------------------------------------- query strings

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskStatus {
    Enqueued,
    Processing,
    Succeeded,
    Failed,
    Canceled,
}

#[derive(Debug)]
struct TaskStatusError(String);

impl fmt::Display for TaskStatusError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "`{}` is not a valid task status. Available statuses are `enqueued`, `processing`, `succeeded`, `failed`, `canceled`.",
            self.0
        )
    }
}

impl std::error::Error for TaskStatusError {}

impl FromQueryParameter for TaskStatus {
    type Err = TaskStatusError;

    fn from_query_parameter(text: &str) -> Result<Self, TaskStatusError> {
        match text {
            "enqueued" => Ok(TaskStatus::Enqueued),
            "processing" => Ok(TaskStatus::Processing),
            "succeeded" => Ok(TaskStatus::Succeeded),
            "failed" => Ok(TaskStatus::Failed),
            "canceled" => Ok(TaskStatus::Canceled),
            other => Err(TaskStatusError(other.to_owned())),
        }
    }
}

/// A slice of `GET /tasks`.
#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct TasksQuery {
    #[deserr(default = Param(20), error = QueryError<codes::InvalidTaskLimit>)]
    limit: Param<u32>,
    #[deserr(default, error = QueryError<codes::InvalidTaskFrom>)]
    from: Option<Param<u32>>,
    #[deserr(default, error = QueryError<codes::InvalidTaskReverse>)]
    reverse: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidTaskUids>)]
    uids: OptionStarOrList<u32>,
    #[deserr(default, error = QueryError<codes::InvalidTaskStatuses>)]
    statuses: OptionStarOrList<TaskStatus>,
}

/// A slice of `GET /indexes/{uid}/search`.
#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct SearchQuery {
    #[deserr(default, error = QueryError<codes::InvalidSearchQ>)]
    q: Option<String>,
    #[deserr(default = Param(20), error = QueryError<codes::InvalidSearchLimit>)]
    limit: Param<usize>,
    #[deserr(default, error = QueryError<codes::InvalidSearchMatchingStrategy>)]
    matching_strategy: MatchingStrategy,
    #[deserr(default, error = QueryError<codes::InvalidSearchDistinct>)]
    distinct: OptionStarOr<String>,
}

fn tasks(query: &str) -> Result<TasksQuery, ResponseError> {
    decode_query::<TasksQuery, QueryError>(query)
}

fn search_query(query: &str) -> Result<SearchQuery, ResponseError> {
    decode_query::<SearchQuery, QueryError>(query)
}

#[test]
fn query_values_are_parsed_from_strings() {
    let query =
        tasks("limit=5&from=7&reverse=true&uids=1,2&statuses=failed").expect("tasks succeeds");
    assert_eq!(*query.limit, 5);
    assert_eq!(query.from.map(Param::into_inner), Some(7));
    assert_eq!(query.reverse.map(Param::into_inner), Some(true));
    assert_eq!(query.uids, OptionStarOrList::List(vec![1, 2]));
    assert_eq!(
        query.statuses,
        OptionStarOrList::List(vec![TaskStatus::Failed])
    );
    let defaults = tasks("").expect("tasks succeeds");
    assert_eq!(*defaults.limit, 20);
    assert_eq!(defaults.uids, OptionStarOrList::None);
}

#[test]
fn query_strings_are_percent_decoded_and_the_last_repeat_wins() {
    let query =
        search_query("q=hello%20world+again&limit=1&limit=2").expect("search_query succeeds");
    assert_eq!(query.q.as_deref(), Some("hello world again"));
    assert_eq!(*query.limit, 2);
}

#[test]
fn unparsable_integer_parameter_uses_the_field_code() {
    assert_error(
        search_query("limit=doggo"),
        Code::InvalidSearchLimit,
        400,
        "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
    );
    assert_error(
        search_query("limit=-1"),
        Code::InvalidSearchLimit,
        400,
        "Invalid value in parameter `limit`: could not parse `-1` as a positive integer",
    );
    assert_error(
        search_query("limit="),
        Code::InvalidSearchLimit,
        400,
        "Invalid value in parameter `limit`: could not parse `` as a positive integer",
    );
    assert_error(
        tasks("from=doggo"),
        Code::InvalidTaskFrom,
        400,
        "Invalid value in parameter `from`: could not parse `doggo` as a positive integer",
    );
}

#[test]
fn unparsable_boolean_parameter_expects_true_or_false() {
    assert_error(
        tasks("reverse=doggo"),
        Code::InvalidTaskReverse,
        400,
        "Invalid value in parameter `reverse`: could not parse `doggo` as a boolean, expected either `true` or `false`",
    );
    assert_error(
        tasks("reverse=True"),
        Code::InvalidTaskReverse,
        400,
        "Invalid value in parameter `reverse`: could not parse `True` as a boolean, expected either `true` or `false`",
    );
}

#[test]
fn unknown_parameter_lists_the_expected_ones() {
    assert_error(
        tasks("lol=1"),
        Code::BadRequest,
        400,
        "Unknown parameter `lol`: expected one of `limit`, `from`, `reverse`, `uids`, `statuses`",
    );
    assert_error(
        tasks("revers=true"),
        Code::BadRequest,
        400,
        "Unknown parameter `revers`: did you mean `reverse`? expected one of `limit`, `from`, `reverse`, `uids`, `statuses`",
    );
}

#[test]
fn unknown_enum_value_in_a_parameter() {
    assert_error(
        search_query("matchingStrategy=doggo"),
        Code::InvalidSearchMatchingStrategy,
        400,
        "Unknown value `doggo` for parameter `matchingStrategy`: expected one of `last`, `all`, `frequency`",
    );
    let query = search_query("matchingStrategy=all").expect("search_query succeeds");
    assert_eq!(query.matching_strategy, MatchingStrategy::All);
}

#[test]
fn custom_parameter_error_keeps_its_wording() {
    assert_error(
        tasks("statuses=doggo"),
        Code::InvalidTaskStatuses,
        400,
        "Invalid value in parameter `statuses`: `doggo` is not a valid task status. Available statuses are `enqueued`, `processing`, `succeeded`, `failed`, `canceled`.",
    );
}

#[test]
fn star_or_list_items_are_located_by_index_only_in_longer_lists() {
    assert_error(
        tasks("uids=1,dogo"),
        Code::InvalidTaskUids,
        400,
        "Invalid value in parameter `uids[1]`: could not parse `dogo` as a positive integer",
    );
    assert_error(
        tasks("uids=dogo"),
        Code::InvalidTaskUids,
        400,
        "Invalid value in parameter `uids`: could not parse `dogo` as a positive integer",
    );
    // The first bad item is reported, even past a star.
    assert_error(
        tasks("uids=cat,*,dog"),
        Code::InvalidTaskUids,
        400,
        "Invalid value in parameter `uids[0]`: could not parse `cat` as a positive integer",
    );
    assert_error(
        tasks("uids=78,hello,world"),
        Code::InvalidTaskUids,
        400,
        "Invalid value in parameter `uids[1]`: could not parse `hello` as a positive integer",
    );
    // A parameter that is not a list does not accept a star.
    assert_error(
        tasks("uids=*&from=*"),
        Code::InvalidTaskFrom,
        400,
        "Invalid value in parameter `from`: could not parse `*` as a positive integer",
    );
    // Empty items are dropped before counting, so this list has one item.
    assert_error(
        tasks("uids=,dogo,"),
        Code::InvalidTaskUids,
        400,
        "Invalid value in parameter `uids`: could not parse `dogo` as a positive integer",
    );
    // A star does not excuse a bad item.
    assert_error(
        tasks("uids=*,dogo"),
        Code::InvalidTaskUids,
        400,
        "Invalid value in parameter `uids[1]`: could not parse `dogo` as a positive integer",
    );
}

#[test]
fn star_anywhere_in_a_list_means_everything() {
    assert_eq!(
        tasks("uids=1,*").expect("tasks succeeds").uids,
        OptionStarOrList::Star
    );
    assert_eq!(
        tasks("uids=*").expect("tasks succeeds").uids,
        OptionStarOrList::Star
    );
    assert_eq!(
        tasks("uids=1,,2").expect("tasks succeeds").uids,
        OptionStarOrList::List(vec![1, 2])
    );
    assert_eq!(
        tasks("uids=").expect("tasks succeeds").uids,
        OptionStarOrList::List(vec![])
    );
    assert_eq!(
        search_query("distinct=*")
            .expect("search_query succeeds")
            .distinct,
        OptionStarOr::Star
    );
    assert_eq!(
        search_query("distinct=genre")
            .expect("search_query succeeds")
            .distinct,
        OptionStarOr::Other("genre".to_owned())
    );
}
