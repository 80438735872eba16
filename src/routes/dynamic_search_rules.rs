//! `/dynamic-search-rules` (feature `dynamicSearchRules`): list (`POST`, with a body), get,
//! create or update (`PATCH`: 201 when created, 200 when updated) and delete (204) the
//! instance's rules. Synchronous, as in Meilisearch 1.41: the control core applies, persists
//! and replicates each change before the answer.
//!
//! Invariants, in Meilisearch's order (its extractors run before its handler): the key is
//! checked first, then the path's uid (an invalid one is a plain-text 404, as actix answers a
//! path that does not deserialize), then the body, and only then the feature gate.

use serde_json::{Value, json};

use crate::auth::index_pattern::is_valid_index_uid;
use crate::control::dynamic_search_rules::{
    DynamicSearchRule, RuleChange, RuleOutcome, RulePatch, not_found, routes_not_enabled,
};
use crate::decode::JsonError;
use crate::errors::{ResponseError, codes};
use crate::http::{Request, Response};
use crate::routes::{Services, body};

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
    /// Patterns (`*` at either end) one of which must match the rule's whole uid.
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleFilterAttributePatterns>)]
    attribute_patterns: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleFilterActive>)]
    active: Option<bool>,
}

impl ListFilter {
    fn accepts(&self, rule: &DynamicSearchRule) -> bool {
        let uid_matches = self.attribute_patterns.as_ref().is_none_or(|patterns| {
            patterns
                .iter()
                .any(|pattern| pattern_matches(pattern, &rule.uid))
        });
        uid_matches && self.active.is_none_or(|active| active == rule.active)
    }
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
    let accepted: Vec<&DynamicSearchRule> = rules
        .values()
        .filter(|rule| {
            listing
                .filter
                .as_ref()
                .is_none_or(|filter| filter.accepts(rule))
        })
        .collect();
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

/// `PATCH /dynamic-search-rules/{uid}`: creates the rule (201) or patches it (200).
pub async fn update(
    services: &Services,
    request: &Request,
    uid: &str,
) -> Result<Response, ResponseError> {
    if let Some(refusal) = refused_path_uid(uid) {
        return Ok(refusal);
    }
    let patch: RulePatch = body::json::<RulePatch, JsonError>(request)?;
    check_enabled(services)?;
    let change = RuleChange::Upsert {
        uid: uid.to_owned(),
        patch,
    };
    match services.control.change_dynamic_search_rules(change).await? {
        RuleOutcome::Upserted { rule, created } => {
            let status = if created { 201 } else { 200 };
            Ok(Response::json(status, json!(rule).to_string()))
        }
        RuleOutcome::Deleted => Err(ResponseError::internal("an upsert deleted a rule")),
    }
}

/// `DELETE /dynamic-search-rules/{uid}`.
pub async fn delete(services: &Services, uid: &str) -> Result<Response, ResponseError> {
    if let Some(refusal) = refused_path_uid(uid) {
        return Ok(refusal);
    }
    check_enabled(services)?;
    let change = RuleChange::Delete {
        uid: uid.to_owned(),
    };
    services.control.change_dynamic_search_rules(change).await?;
    Ok(Response::empty(204))
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
