//! Dynamic search rules (experimental feature `dynamicSearchRules`): instance-wide rules that
//! pin documents at given positions of search results when their conditions hold, as
//! Meilisearch 1.50 keeps them — a rule per uid, changed by `dsrUpdate` and `dsrClear` tasks
//! (see `dynamic_search_rule_patch` for the changes and `legacy_dynamic_search_rules` for
//! the 1.41 form, still read).
//!
//! A rule: `uid` (shaped like an index uid), `description`, `precedence` (lower wins, absent
//! is lowest), `active`, `conditions` (each part optional, all must hold: `query` with
//! `isEmpty` or `words`, `time` with `start` and `end`) and `actions` (`{"selector":
//! {"indexUid", "id"}, "action": {"type": "pin", "position"}}`).
//!
//! Invariants:
//! - the JSON form (answers, the persisted file, dumps) is Meilisearch 1.50's: `description`
//!   and `precedence` only when set, `active`, `conditions` and `actions` always, dates in
//!   RFC 3339;
//! - a query condition does not hold both `isEmpty: true` and `words`, and a time condition's
//!   `start` is not after its `end` (checked when decoded, and when a 1.41 rule is read);
//! - a file or dump written in the 1.41 form (`priority`, a list of conditions) reads as the
//!   same rules in the 1.50 form; a 1.41 rule whose conditions can never hold together is
//!   left out with a warning, as Meilisearch's upgrade leaves it out.

use std::collections::BTreeMap;
use std::convert::Infallible;

use deserr::{DeserializeError, Deserr, ErrorKind, ValuePointerRef};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::auth::expiration::ExpirationDateError;
use crate::auth::index_pattern::is_valid_index_uid;
use crate::decode::JsonError;
use crate::errors::{Code, ResponseError};

use super::legacy_dynamic_search_rules::StoredRule;

/// File (in the data directory) that holds the rules.
pub const DYNAMIC_SEARCH_RULES_FILE_NAME: &str = "dynamic-search-rules.json";

/// The discussion `feature_not_enabled` points to for the rules.
pub const DYNAMIC_SEARCH_RULES_LINK: &str = "https://github.com/orgs/meilisearch/discussions/884";

/// The index uid Meilisearch shows on the rules' tasks (their queue is an index of its own).
pub const DYNAMIC_SEARCH_RULES_TASK_INDEX: &str = ".meili_dsr";

/// Every rule of the instance, by uid (the order listings and dumps follow).
pub type DynamicSearchRules = BTreeMap<String, DynamicSearchRule>;

/// One rule, in its JSON form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "StoredRule")]
pub struct DynamicSearchRule {
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Lower values win; `None` ranks after every number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precedence: Option<u64>,
    pub active: bool,
    pub conditions: Conditions,
    pub actions: Vec<RuleAction>,
}

/// What must hold for a rule to apply: each part that is there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(
    rename_all = camelCase,
    deny_unknown_fields,
    validate = validate_conditions -> JsonError,
    where_predicate = __Deserr_E: deserr::MergeWithError<ExpirationDateError>
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Conditions {
    /// When the search happens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[deserr(default)]
    pub time: Option<TimeCondition>,
    /// What the query holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[deserr(default)]
    pub query: Option<QueryCondition>,
}

/// The search happens between `start` and `end` (each bound optional, inclusive).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(
    rename_all = camelCase,
    deny_unknown_fields,
    where_predicate = __Deserr_E: deserr::MergeWithError<ExpirationDateError>
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimeCondition {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[deserr(default, try_from(Option<String>) = parse_optional_date -> ExpirationDateError)]
    pub start: Option<OffsetDateTime>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[deserr(default, try_from(Option<String>) = parse_optional_date -> ExpirationDateError)]
    pub end: Option<OffsetDateTime>,
}

/// The query is empty (`isEmpty: true`) or not (`false`), or holds every word of `words`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueryCondition {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[deserr(default)]
    pub is_empty: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[deserr(default)]
    pub words: Option<String>,
}

/// One action of a rule: the document it selects and what is done with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(
    rename_all = camelCase,
    deny_unknown_fields,
    where_predicate = __Deserr_E: deserr::MergeWithError<IndexUidError>
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleAction {
    pub selector: Selector,
    pub action: PinAction,
}

/// The document an action selects: by id, in one index or (without `indexUid`) in any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[deserr(default, try_from(Option<String>) = checked_index_uid -> IndexUidError)]
    pub index_uid: Option<String>,
    pub id: String,
}

/// What an action does: `{"type": "pin", "position": n}` puts the document at `n` (from 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(tag = "type", rename_all = camelCase, deny_unknown_fields)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum PinAction {
    Pin { position: u32 },
}

impl DynamicSearchRule {
    /// A rule before its first change: active, without conditions nor actions.
    pub fn new(uid: String) -> DynamicSearchRule {
        DynamicSearchRule {
            uid,
            description: None,
            precedence: None,
            active: true,
            conditions: Conditions::default(),
            actions: Vec::new(),
        }
    }
}

/// Why conditions can never hold together: the part at fault and Meilisearch's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contradiction {
    /// `query` or `time`.
    pub part: &'static str,
    pub message: String,
}

impl Conditions {
    /// Why these conditions can never hold together, if they cannot.
    pub fn contradiction(&self) -> Option<Contradiction> {
        if let Some(QueryCondition {
            is_empty: Some(true),
            words: Some(_),
        }) = &self.query
        {
            return Some(Contradiction {
                part: "query",
                message: "either `isEmpty` or `words` can be used, not both at once".to_owned(),
            });
        }
        if let Some(TimeCondition {
            start: Some(start),
            end: Some(end),
        }) = &self.time
            && start > end
        {
            return Some(Contradiction {
                part: "time",
                message: format!("`end` (`{end}`) should be later than `start` (`{start}`)"),
            });
        }
        None
    }
}

/// A selector's `indexUid` that is no index uid (its message is `invalid_index_uid`'s).
#[derive(Debug)]
pub struct IndexUidError(String);

impl std::fmt::Display for IndexUidError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&ResponseError::invalid_index_uid(&self.0).message)
    }
}

impl std::error::Error for IndexUidError {}

/// `uid` when it is absent or a valid index uid (also the check of `POST /render-template`'s
/// `indexUid` fields).
pub fn checked_index_uid(uid: Option<String>) -> Result<Option<String>, IndexUidError> {
    match uid {
        Some(uid) if !is_valid_index_uid(&uid) => Err(IndexUidError(uid)),
        other => Ok(other),
    }
}

/// An RFC 3339 date; any other text is refused with the message of Meilisearch's date errors
/// (also the dates of 1.41's conditions).
pub(super) fn parse_optional_date(
    text: Option<String>,
) -> Result<Option<OffsetDateTime>, ExpirationDateError> {
    text.map(|text| OffsetDateTime::parse(&text, &Rfc3339).map_err(|_| ExpirationDateError(text)))
        .transpose()
}

/// The checks deserr cannot express: not `isEmpty: true` with `words`, `start` before `end`
/// (each refused at the part it is about, with Meilisearch's message and `bad_request`).
fn validate_conditions<E: DeserializeError>(
    conditions: Conditions,
    location: ValuePointerRef,
) -> Result<Conditions, E> {
    let Some(Contradiction { part, message }) = conditions.contradiction() else {
        return Ok(conditions);
    };
    Err(deserr::take_cf_content(E::error::<Infallible>(
        None,
        ErrorKind::Unexpected { msg: message },
        location.push_key(part),
    )))
}

/// `dynamic_search_rule_not_found`.
pub fn not_found(uid: &str) -> ResponseError {
    ResponseError::new(
        Code::DynamicSearchRuleNotFound,
        format!("Dynamic search rule `{uid}` not found."),
    )
}

/// `feature_not_enabled` for the `/dynamic-search-rules` routes.
pub fn routes_not_enabled() -> ResponseError {
    ResponseError::feature_not_enabled(
        "Using the `/dynamic-search-rules` routes",
        "dynamic search rules",
        DYNAMIC_SEARCH_RULES_LINK,
    )
}

/// Reads the persisted rules (none when none were ever saved), in either form (see
/// [`rules_from_json`]).
pub fn load_rules(data_directory: &std::path::Path) -> Result<DynamicSearchRules, String> {
    let path = data_directory.join(DYNAMIC_SEARCH_RULES_FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => rules_from_json(&bytes)
            .map_err(|error| format!("{} is damaged: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(error) => Err(format!("could not read {}: {error}", path.display())),
    }
}

/// The rules of a JSON object of rules by uid, in the 1.50 or 1.41 form; a 1.41 rule whose
/// conditions can never hold together is left out with a warning.
pub fn rules_from_json(bytes: &[u8]) -> Result<DynamicSearchRules, serde_json::Error> {
    let stored: BTreeMap<String, StoredRule> = serde_json::from_slice(bytes)?;
    Ok(stored
        .into_iter()
        .filter_map(|(uid, rule)| match DynamicSearchRule::try_from(rule) {
            Ok(rule) => Some((uid, rule)),
            Err(reason) => {
                tracing::warn!("dynamic search rule left out: {reason}");
                None
            }
        })
        .collect())
}
