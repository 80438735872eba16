//! Dynamic search rules (experimental feature `dynamicSearchRules`): instance-wide rules that
//! pin documents at given positions of search results when their conditions hold, as
//! Meilisearch 1.41 keeps them — a rule per uid, changed synchronously by
//! `PATCH`/`DELETE /dynamic-search-rules/{uid}`.
//!
//! A rule: `uid` (shaped like an index uid), `description`, `priority` (lower wins, absent is
//! lowest), `active`, `conditions` (all must hold: `{"scope": "query", "isEmpty" | "contains"}`,
//! `{"scope": "time", "start", "end"}`) and `actions` (`{"selector": {"indexUid", "id"},
//! "action": {"type": "pin", "position"}}`).
//!
//! Invariants:
//! - the JSON form (answers, the persisted file, dumps) is Meilisearch's: `description` and
//!   `priority` only when set, `active` and `conditions` always, dates in RFC 3339;
//! - a stored rule has at least one action (creating without actions, or setting them empty
//!   or `null`, is refused with `invalid_dynamic_search_rule_actions`);
//! - a query condition holds exactly one of `isEmpty` and `contains`, and a time condition's
//!   `start` is not after its `end` (checked when decoded).

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
use crate::settings::setting::Setting;

/// File (in the data directory) that holds the rules.
pub const DYNAMIC_SEARCH_RULES_FILE_NAME: &str = "dynamic-search-rules.json";

/// The discussion `feature_not_enabled` points to for the rules.
pub const DYNAMIC_SEARCH_RULES_LINK: &str = "https://github.com/orgs/meilisearch/discussions/884";

/// Every rule of the instance, by uid (the order listings and dumps follow).
pub type DynamicSearchRules = BTreeMap<String, DynamicSearchRule>;

/// One rule, in its JSON form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicSearchRule {
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Lower values win; `None` ranks after every number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u64>,
    #[serde(default = "active_by_default")]
    pub active: bool,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    pub actions: Vec<RuleAction>,
}

fn active_by_default() -> bool {
    true
}

/// What must hold for a rule to apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(tag = "scope", rename_all = camelCase, validate = validate_condition -> JsonError)]
#[serde(tag = "scope", rename_all = "camelCase")]
pub enum Condition {
    /// The query text is empty (`isEmpty`) or contains a text (`contains`).
    #[deserr(rename_all = camelCase)]
    #[serde(rename_all = "camelCase")]
    Query {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[deserr(default)]
        is_empty: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[deserr(default)]
        contains: Option<String>,
    },
    /// The search happens between `start` and `end` (each bound optional, inclusive).
    #[deserr(rename_all = camelCase)]
    #[serde(rename_all = "camelCase")]
    Time {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "time::serde::rfc3339::option"
        )]
        #[deserr(default, try_from(Option<String>) = parse_optional_date -> ExpirationDateError)]
        start: Option<OffsetDateTime>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "time::serde::rfc3339::option"
        )]
        #[deserr(default, try_from(Option<String>) = parse_optional_date -> ExpirationDateError)]
        end: Option<OffsetDateTime>,
    },
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[deserr(default)]
    pub id: Option<String>,
}

/// What an action does: `{"type": "pin", "position": n}` puts the document at `n` (from 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[deserr(tag = "type", rename_all = camelCase, deny_unknown_fields)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum PinAction {
    Pin { position: u32 },
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

/// An RFC 3339 date; any other text is refused with the message of Meilisearch's date errors.
fn parse_optional_date(
    text: Option<String>,
) -> Result<Option<OffsetDateTime>, ExpirationDateError> {
    text.map(|text| OffsetDateTime::parse(&text, &Rfc3339).map_err(|_| ExpirationDateError(text)))
        .transpose()
}

/// The checks deserr cannot express: one of `isEmpty` and `contains`, `start` before `end`.
fn validate_condition<E: DeserializeError>(
    condition: Condition,
    location: ValuePointerRef,
) -> Result<Condition, E> {
    let refusal = match &condition {
        Condition::Query {
            is_empty: Some(_),
            contains: Some(_),
        } => Some("either `isEmpty` or `contains` can be used, not all at once".to_owned()),
        Condition::Query {
            is_empty: None,
            contains: None,
        } => Some("at least `isEmpty` or `contains` must be used".to_owned()),
        Condition::Time {
            start: Some(start),
            end: Some(end),
        } if start > end => Some(format!(
            "`end` (`{end}`) should be later than `start` (`{start}`)"
        )),
        _ => None,
    };
    match refusal {
        Some(msg) => Err(deserr::take_cf_content(E::error::<Infallible>(
            None,
            ErrorKind::Unexpected { msg },
            location,
        ))),
        None => Ok(condition),
    }
}

/// The body of `PATCH /dynamic-search-rules/{uid}`: each field absent, `null` (reset) or set.
#[derive(Debug, Clone, Default, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct RulePatch {
    #[deserr(default, error = JsonError<crate::errors::codes::InvalidDynamicSearchRuleDescription>)]
    pub description: Setting<String>,
    #[deserr(default, error = JsonError<crate::errors::codes::InvalidDynamicSearchRulePriority>)]
    pub priority: Setting<u64>,
    #[deserr(default, error = JsonError<crate::errors::codes::InvalidDynamicSearchRuleActive>)]
    pub active: Setting<bool>,
    #[deserr(default, error = JsonError<crate::errors::codes::InvalidDynamicSearchRuleConditions>)]
    pub conditions: Setting<Vec<Condition>>,
    #[deserr(default, error = JsonError<crate::errors::codes::InvalidDynamicSearchRuleActions>)]
    pub actions: Setting<Vec<RuleAction>>,
}

/// A change of the rules, applied on the control core.
#[derive(Debug, Clone)]
pub enum RuleChange {
    /// Creates rule `uid` from `patch`, or patches it.
    Upsert {
        uid: String,
        patch: RulePatch,
    },
    Delete {
        uid: String,
    },
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleOutcome {
    /// The rule as it now is, and whether it was created.
    Upserted {
        rule: DynamicSearchRule,
        created: bool,
    },
    Deleted,
}

/// The rules after `change`, and what it did.
pub fn apply_change(
    rules: &DynamicSearchRules,
    change: RuleChange,
) -> Result<(DynamicSearchRules, RuleOutcome), ResponseError> {
    let mut rules = rules.clone();
    match change {
        RuleChange::Upsert { uid, patch } => {
            let (rule, created) = match rules.get(&uid) {
                Some(rule) => (patched(rule.clone(), patch, false)?, false),
                None => (patched(new_rule(uid.clone()), patch, true)?, true),
            };
            rules.insert(uid, rule.clone());
            Ok((rules, RuleOutcome::Upserted { rule, created }))
        }
        RuleChange::Delete { uid } => match rules.remove(&uid) {
            Some(_) => Ok((rules, RuleOutcome::Deleted)),
            None => Err(not_found(&uid)),
        },
    }
}

/// A rule before its first patch: active, without conditions nor actions.
fn new_rule(uid: String) -> DynamicSearchRule {
    DynamicSearchRule {
        uid,
        description: None,
        priority: None,
        active: true,
        conditions: Vec::new(),
        actions: Vec::new(),
    }
}

/// `rule` with `patch` applied; a new rule must get actions, none may get an empty list.
fn patched(
    mut rule: DynamicSearchRule,
    patch: RulePatch,
    created: bool,
) -> Result<DynamicSearchRule, ResponseError> {
    let RulePatch {
        description,
        priority,
        active,
        conditions,
        actions,
    } = patch;
    match description {
        Setting::Set(description) => rule.description = Some(description),
        Setting::Reset => rule.description = None,
        Setting::NotSet => {}
    }
    match priority {
        Setting::Set(priority) => rule.priority = Some(priority),
        Setting::Reset => rule.priority = None,
        Setting::NotSet => {}
    }
    active.apply_to(&mut rule.active, active_by_default);
    conditions.apply_to(&mut rule.conditions, Vec::new);
    match actions {
        Setting::Set(actions) if actions.is_empty() => return Err(empty_actions(&rule.uid)),
        Setting::Set(actions) => rule.actions = actions,
        Setting::Reset => return Err(reset_actions(&rule.uid)),
        Setting::NotSet if created => return Err(empty_actions(&rule.uid)),
        Setting::NotSet => {}
    }
    Ok(rule)
}

/// `dynamic_search_rule_not_found`.
pub fn not_found(uid: &str) -> ResponseError {
    ResponseError::new(
        Code::DynamicSearchRuleNotFound,
        format!("Dynamic search rule `{uid}` not found."),
    )
}

fn empty_actions(uid: &str) -> ResponseError {
    ResponseError::new(
        Code::InvalidDynamicSearchRuleActions,
        format!(
            "Cannot set an empty list of actions to a dynamic search rule.\n - Note: for rule `{uid}`."
        ),
    )
}

fn reset_actions(uid: &str) -> ResponseError {
    ResponseError::new(
        Code::InvalidDynamicSearchRuleActions,
        format!("Cannot reset the actions of a dynamic search rule.\n - Note: for rule `{uid}`."),
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

/// Reads the persisted rules (none when none were ever saved).
pub fn load_rules(data_directory: &std::path::Path) -> Result<DynamicSearchRules, String> {
    let path = data_directory.join(DYNAMIC_SEARCH_RULES_FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|error| format!("{} is damaged: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(error) => Err(format!("could not read {}: {error}", path.display())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(body: serde_json::Value) -> Result<RulePatch, ResponseError> {
        crate::decode::decode_json_value::<RulePatch, JsonError>(body)
    }

    fn pin(id: &str, position: u32) -> serde_json::Value {
        json!({"selector": {"id": id}, "action": {"type": "pin", "position": position}})
    }

    #[test]
    fn a_rule_reads_and_writes_as_meilisearch_writes_it() {
        let text = json!({
            "uid": "black-friday",
            "description": "Black Friday",
            "priority": 10,
            "active": true,
            "conditions": [
                {"scope": "query", "isEmpty": true},
                {"scope": "time", "start": "2025-11-28T00:00:00Z", "end": "2025-11-28T23:59:59Z"}
            ],
            "actions": [
                {"selector": {"indexUid": "products", "id": "123"}, "action": {"type": "pin", "position": 1}}
            ]
        });
        let rule: DynamicSearchRule = serde_json::from_value(text.clone()).unwrap();
        assert_eq!(serde_json::to_value(&rule).unwrap(), text);
        let minimal: DynamicSearchRule =
            serde_json::from_value(json!({"uid": "a", "actions": [pin("1", 0)]})).unwrap();
        assert_eq!(
            serde_json::to_value(&minimal).unwrap(),
            json!({"uid": "a", "active": true, "conditions": [], "actions": [pin("1", 0)]})
        );
    }

    #[test]
    fn condition_refusals_carry_meilisearch_codes_and_messages() {
        let both =
            decode(json!({"conditions": [{"scope": "query", "isEmpty": false, "contains": "a"}]}))
                .unwrap_err();
        assert_eq!(both.code, Code::BadRequest);
        assert_eq!(
            both.message,
            "Invalid value at `.conditions[0]`: either `isEmpty` or `contains` can be used, not all at once"
        );
        let neither = decode(json!({"conditions": [{"scope": "query"}]})).unwrap_err();
        assert_eq!(
            neither.message,
            "Invalid value at `.conditions[0]`: at least `isEmpty` or `contains` must be used"
        );
        let reversed = decode(json!({"conditions": [{"scope": "time",
            "start": "2025-11-28T00:00:00Z", "end": "2025-11-27T00:00:00Z"}]}))
        .unwrap_err();
        assert_eq!(
            reversed.message,
            "Invalid value at `.conditions[0]`: `end` (`2025-11-27 0:00:00.0 +00:00:00`) should be later than `start` (`2025-11-28 0:00:00.0 +00:00:00`)"
        );
        let bad_date =
            decode(json!({"conditions": [{"scope": "time", "start": "tomorrow"}]})).unwrap_err();
        assert_eq!(bad_date.code, Code::InvalidDynamicSearchRuleConditions);
        assert!(bad_date.message.starts_with(
            "Invalid value at `.conditions[0].start`: `tomorrow` is not a valid date."
        ));
        let scope = decode(json!({"conditions": [{"scope": "weather"}]})).unwrap_err();
        assert_eq!(scope.code, Code::InvalidDynamicSearchRuleConditions);
    }

    #[test]
    fn action_refusals_carry_the_actions_code() {
        let bad_uid =
            decode(json!({"actions": [{"selector": {"indexUid": "a b"}, "action": {"type": "pin", "position": 0}}]}))
                .unwrap_err();
        assert_eq!(bad_uid.code, Code::InvalidDynamicSearchRuleActions);
        assert!(bad_uid.message.starts_with(
            "Invalid value at `.actions[0].selector.indexUid`: `a b` is not a valid index uid."
        ));
        let unknown = decode(json!({"actions": [{"selector": {}, "action": {"type": "pin", "position": 0}, "x": 1}]}))
            .unwrap_err();
        assert_eq!(unknown.code, Code::InvalidDynamicSearchRuleActions);
        let field = decode(json!({"unknownField": true})).unwrap_err();
        assert_eq!(field.code, Code::BadRequest);
        assert_eq!(
            field.message,
            "Unknown field `unknownField`: expected one of `description`, `priority`, `active`, `conditions`, `actions`"
        );
    }

    #[test]
    fn a_new_rule_needs_actions_and_none_may_be_emptied() {
        let rules = DynamicSearchRules::new();
        let create = |patch| RuleChange::Upsert {
            uid: "r".to_owned(),
            patch,
        };
        let error = apply_change(&rules, create(RulePatch::default())).unwrap_err();
        assert_eq!(
            error.message,
            "Cannot set an empty list of actions to a dynamic search rule.\n - Note: for rule `r`."
        );
        let patch = decode(json!({"actions": [pin("1", 0)], "priority": 3})).unwrap();
        let (rules, outcome) = apply_change(&rules, create(patch)).unwrap();
        assert!(matches!(
            outcome,
            RuleOutcome::Upserted { created: true, .. }
        ));
        let reset = decode(json!({"actions": null})).unwrap();
        let error = apply_change(&rules, create(reset)).unwrap_err();
        assert_eq!(
            error.message,
            "Cannot reset the actions of a dynamic search rule.\n - Note: for rule `r`."
        );
        let (rules, outcome) =
            apply_change(&rules, create(decode(json!({"priority": null})).unwrap())).unwrap();
        let RuleOutcome::Upserted { rule, created } = outcome else {
            panic!("an upsert answers the rule");
        };
        assert!(!created);
        assert_eq!(rule.priority, None);
        assert_eq!(rule.actions.len(), 1);
        let (rules, _) = apply_change(&rules, RuleChange::Delete { uid: "r".into() }).unwrap();
        let error = apply_change(&rules, RuleChange::Delete { uid: "r".into() }).unwrap_err();
        assert_eq!(error.code, Code::DynamicSearchRuleNotFound);
    }
}
