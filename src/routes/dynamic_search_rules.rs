//! `/dynamic-search-rules` (feature `dynamicSearchRules`): list (`POST`, with a body), get,
//! create or update (`PATCH`), delete one (`DELETE /{uid}`) or all (`DELETE`) of the
//! instance's rules. As in Meilisearch 1.50, changes are tasks (`dsrUpdate`, `dsrClear`,
//! answered 202 with `customMetadata`); the scheduler applies, persists and replicates them
//! (see `crate::tasks::dynamic_search_rules`). A 1.41 client's body is accepted too. In a
//! sharded network they are writes like any other (see [`crate::proxy`]): the leader
//! forwards each to every remote, a follower refuses a user's change with `not_leader`.
//!
//! Invariants, in Meilisearch's order (its extractors run before its handler): the key is
//! checked first, then the path's uid (an invalid one is a plain-text 404, as actix answers a
//! path that does not deserialize), then the body, and only then the feature gate.

use serde_json::{Value, json};

use crate::auth::index_pattern::is_valid_index_uid;
use crate::control::dynamic_search_rule_patch::RulePatch;
use crate::control::dynamic_search_rules::{DynamicSearchRule, not_found, routes_not_enabled};
use crate::decode::JsonError;
use crate::errors::{ResponseError, codes};
use crate::http::{Request, Response};
use crate::routes::documents::custom_metadata;
use crate::routes::indexes::{register_write, write_headers};
use crate::routes::{Services, body};
use crate::search::rule_matching::normalized_words;
use crate::tasks::model::KindWithContent;

/// `limit` of a listing when absent.
pub const LIST_LIMIT_DEFAULT: usize = 20;

/// The body of `POST /dynamic-search-rules`.
#[derive(Debug, deserr::Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct ListRules {
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleOffset>)]
    offset: usize,
    #[deserr(default = LIST_LIMIT_DEFAULT, error = JsonError<codes::InvalidDynamicSearchRuleLimit>)]
    limit: usize,
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleFilter>)]
    filter: Option<ListFilter>,
}

/// `filter` of a listing: every criterion given must hold.
#[derive(Debug, deserr::Deserr)]
#[deserr(
    error = JsonError<codes::InvalidDynamicSearchRuleFilter>,
    rename_all = camelCase,
    deny_unknown_fields
)]
struct ListFilter {
    /// Words searched in the rules' `description` and `conditions.query.words` (1.50).
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleFilterQuery>)]
    query: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleFilterActive>)]
    active: Option<bool>,
    /// Patterns (`*` at either end) one of which must match the rule's whole uid (1.41's
    /// filter, still accepted).
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleFilterAttributePatterns>)]
    attribute_patterns: Option<Vec<String>>,
}

impl ListFilter {
    /// Whether `rule` passes the criteria other than `query`.
    fn accepts(&self, rule: &DynamicSearchRule) -> bool {
        let uid_matches = self.attribute_patterns.as_ref().is_none_or(|patterns| {
            patterns
                .iter()
                .any(|pattern| pattern_matches(pattern, &rule.uid))
        });
        uid_matches && self.active.is_none_or(|active| active == rule.active)
    }
}

/// The rules among `rules` that the words of `query` find, as Meilisearch 1.50's listing
/// finds them: a rule is found when its `description` and `conditions.query.words` hold every
/// word of the query (whole words, normalized); when none holds them all, the last word is
/// left out, and so on, until some rule is found or no word is left (then: none).
fn found_by_query<'rule>(
    rules: Vec<&'rule DynamicSearchRule>,
    query: &str,
) -> Vec<&'rule DynamicSearchRule> {
    let mut words = normalized_words(query);
    if words.is_empty() {
        return rules;
    }
    let rule_words: Vec<Vec<String>> = rules.iter().map(|rule| searchable_words(rule)).collect();
    while !words.is_empty() {
        let found: Vec<&DynamicSearchRule> = rules
            .iter()
            .zip(&rule_words)
            .filter(|(_, held)| words.iter().all(|word| held.contains(word)))
            .map(|(rule, _)| *rule)
            .collect();
        if !found.is_empty() {
            return found;
        }
        words.pop();
    }
    Vec::new()
}

/// The normalized words a listing's `query` searches in `rule`.
fn searchable_words(rule: &DynamicSearchRule) -> Vec<String> {
    let mut words = rule
        .description
        .as_deref()
        .map(normalized_words)
        .unwrap_or_default();
    if let Some(query_words) = rule
        .conditions
        .query
        .as_ref()
        .and_then(|query| query.words.as_deref())
    {
        words.extend(normalized_words(query_words));
    }
    words
}

/// Whether `pattern` matches the whole of `uid`: `*` matches everything, a leading or
/// trailing `*` (or both) matches any end (or both), anything else only itself.
fn pattern_matches(pattern: &str, uid: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), Some(_)) => uid.contains(rest.strip_suffix('*').unwrap_or(rest)),
        (Some(suffix), None) => uid.ends_with(suffix),
        (None, Some(prefix)) => uid.starts_with(prefix),
        (None, None) => pattern == uid,
    }
}

/// `POST /dynamic-search-rules`: the rules the filter accepts, paginated.
pub fn list(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let listing: ListRules = body::json::<ListRules, JsonError>(request)?;
    check_enabled(services)?;
    let rules = services.control.dynamic_search_rules();
    let mut accepted: Vec<&DynamicSearchRule> = rules
        .values()
        .filter(|rule| {
            listing
                .filter
                .as_ref()
                .is_none_or(|filter| filter.accepts(rule))
        })
        .collect();
    if let Some(query) = listing
        .filter
        .as_ref()
        .and_then(|filter| filter.query.as_deref())
    {
        accepted = found_by_query(accepted, query);
    }
    let results: Vec<Value> = accepted
        .iter()
        .skip(listing.offset)
        .take(listing.limit)
        .map(|rule| json!(rule))
        .collect();
    let answer = json!({
        "results": results,
        "offset": listing.offset,
        "limit": listing.limit,
        "total": accepted.len(),
    });
    Ok(Response::json(200, answer.to_string()))
}

/// `GET /dynamic-search-rules/{uid}`.
pub fn get(services: &Services, uid: &str) -> Result<Response, ResponseError> {
    if let Some(refusal) = refused_path_uid(uid) {
        return Ok(refusal);
    }
    check_enabled(services)?;
    let rules = services.control.dynamic_search_rules();
    let rule = rules.get(uid).ok_or_else(|| not_found(uid))?;
    Ok(Response::json(200, json!(rule).to_string()))
}

/// `PATCH /dynamic-search-rules/{uid}`: enqueues a `dsrUpdate` task that creates the rule
/// or patches it.
pub async fn update(
    services: &Services,
    request: &Request,
    uid: &str,
) -> Result<Response, ResponseError> {
    if let Some(refusal) = refused_path_uid(uid) {
        return Ok(refusal);
    }
    let metadata = custom_metadata(request)?;
    let body: serde_json::Value = body::json::<serde_json::Value, JsonError>(request)?;
    let patch = RulePatch::decode(body)?;
    check_enabled(services)?;
    let kind = KindWithContent::DsrUpdate {
        rule_uid: uid.to_owned(),
        update: Some(patch),
    };
    register_write(services, write_headers(services, request)?, kind, metadata).await
}

/// `DELETE /dynamic-search-rules/{uid}`: enqueues a `dsrUpdate` task that deletes the rule.
pub async fn delete(
    services: &Services,
    request: &Request,
    uid: &str,
) -> Result<Response, ResponseError> {
    if let Some(refusal) = refused_path_uid(uid) {
        return Ok(refusal);
    }
    let metadata = custom_metadata(request)?;
    check_enabled(services)?;
    let kind = KindWithContent::DsrUpdate {
        rule_uid: uid.to_owned(),
        update: None,
    };
    register_write(services, write_headers(services, request)?, kind, metadata).await
}

/// `DELETE /dynamic-search-rules`: enqueues a `dsrClear` task that deletes every rule.
pub async fn clear(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let metadata = custom_metadata(request)?;
    check_enabled(services)?;
    let headers = write_headers(services, request)?;
    register_write(services, headers, KindWithContent::DsrClear, metadata).await
}

/// The feature gate of every route.
fn check_enabled(services: &Services) -> Result<(), ResponseError> {
    if services.control.features().dynamic_search_rules {
        Ok(())
    } else {
        Err(routes_not_enabled())
    }
}

/// A path uid that is no index uid: Meilisearch's path extractor answers actix's plain-text
/// 404 with the uid error's message.
fn refused_path_uid(uid: &str) -> Option<Response> {
    if is_valid_index_uid(uid) {
        return None;
    }
    let message = ResponseError::invalid_index_uid(uid).message;
    Some(Response {
        status: 404,
        headers: vec![(
            std::borrow::Cow::Borrowed("content-type"),
            PLAIN_TEXT.to_owned(),
        )],
        body: message.into_bytes(),
        stream: None,
    })
}

/// The content type of actix's plain-text error answers.
const PLAIN_TEXT: &str = "text/plain; charset=utf-8";
