//! Changes of the dynamic search rules, as the `dsrUpdate` and `dsrClear` tasks carry them:
//! a `PATCH /dynamic-search-rules/{uid}` body (decoded here, also in the 1.41 form), a
//! deletion, or clearing every rule; and the rules after a batch of them.
//!
//! Invariants:
//! - a body decodes to Meilisearch 1.50's fields; a 1.41 body reads as 1.50 (`priority` as
//!   `precedence`, a list of `conditions` merged into their parts, see
//!   `legacy_dynamic_search_rules`), and one whose conditions can never hold is refused;
//! - a patch changes exactly the fields it names: a value sets, `null` resets (an absent
//!   `description`/`precedence`, `active: true`, no conditions, no actions);
//! - deleting a rule that is not there changes nothing and is no error, as in 1.50;
//! - the changes of a batch apply in task order, each to the rules the previous left.

use deserr::Deserr;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::dynamic_search_rules::{Conditions, DynamicSearchRule, DynamicSearchRules, RuleAction};
use super::legacy_dynamic_search_rules::{LegacyCondition, merged};
use crate::decode::JsonError;
use crate::errors::{Code, ResponseError, codes};
use crate::settings::setting::Setting;

/// The body of `PATCH /dynamic-search-rules/{uid}`: each field absent, `null` (reset) or set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserr, Serialize, Deserialize)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct RulePatch {
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleDescription>)]
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    pub description: Setting<String>,
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRulePriority>)]
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    pub precedence: Setting<u64>,
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleActive>)]
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    pub active: Setting<bool>,
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleConditions>)]
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    pub conditions: Setting<Conditions>,
    #[deserr(default, error = JsonError<codes::InvalidDynamicSearchRuleActions>)]
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    pub actions: Setting<Vec<RuleAction>>,
}

/// `value` as a patch field: set when there is one, else reset.
fn or_reset<T>(value: Option<T>) -> Setting<T> {
    value.map_or(Setting::Reset, Setting::Set)
}

/// The field 1.41 named `precedence`.
const LEGACY_PRECEDENCE_FIELD: &str = "priority";
const PRECEDENCE_FIELD: &str = "precedence";
const CONDITIONS_FIELD: &str = "conditions";

impl RulePatch {
    /// Decodes a `PATCH` body, in the 1.50 or the 1.41 form.
    pub fn decode(body: Value) -> Result<RulePatch, ResponseError> {
        let body = match body {
            Value::Object(fields) => Value::Object(from_legacy_form(fields)?),
            other => other,
        };
        crate::decode::decode_json_value::<RulePatch, JsonError>(body)
    }

    /// The patch that makes any rule under `rule`'s uid into `rule`: every field named.
    pub fn replacing(rule: &DynamicSearchRule) -> RulePatch {
        RulePatch {
            description: or_reset(rule.description.clone()),
            precedence: or_reset(rule.precedence),
            active: Setting::Set(rule.active),
            conditions: Setting::Set(rule.conditions.clone()),
            actions: Setting::Set(rule.actions.clone()),
        }
    }

    /// The patch as its task's details show it (`rule`): the fields it names.
    pub fn to_json(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(fields)) => fields,
            _ => Map::new(),
        }
    }

    /// `rule` with this patch applied.
    fn applied_to(self, mut rule: DynamicSearchRule) -> DynamicSearchRule {
        let RulePatch {
            description,
            precedence,
            active,
            conditions,
            actions,
        } = self;
        match description {
            Setting::Set(description) => rule.description = Some(description),
            Setting::Reset => rule.description = None,
            Setting::NotSet => {}
        }
        match precedence {
            Setting::Set(precedence) => rule.precedence = Some(precedence),
            Setting::Reset => rule.precedence = None,
            Setting::NotSet => {}
        }
        active.apply_to(&mut rule.active, || true);
        conditions.apply_to(&mut rule.conditions, Conditions::default);
        actions.apply_to(&mut rule.actions, Vec::new);
        rule
    }
}

/// The body's 1.41 fields in their 1.50 form: `priority` (when `precedence` is absent)
/// becomes `precedence`, a `conditions` list becomes its parts. Anything else is left to
/// the 1.50 decoding, which refuses what neither form allows.
fn from_legacy_form(mut fields: Map<String, Value>) -> Result<Map<String, Value>, ResponseError> {
    if !fields.contains_key(PRECEDENCE_FIELD)
        && let Some(priority) = fields.remove(LEGACY_PRECEDENCE_FIELD)
    {
        fields.insert(PRECEDENCE_FIELD.to_owned(), priority);
    }
    if let Some(Value::Array(list)) = fields.get(CONDITIONS_FIELD) {
        let list = decode_legacy_conditions(Value::Array(list.clone()))?;
        let parts = merged(&list).ok_or_else(conditions_never_hold)?;
        let parts = serde_json::to_value(parts)
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        fields.insert(CONDITIONS_FIELD.to_owned(), parts);
    }
    Ok(fields)
}

/// A 1.41 `conditions` list, refused with 1.41's messages at `.conditions[i]`.
fn decode_legacy_conditions(list: Value) -> Result<Vec<LegacyCondition>, ResponseError> {
    #[derive(Deserr)]
    #[deserr(error = JsonError, rename_all = camelCase)]
    struct LegacyBody {
        #[deserr(error = JsonError<codes::InvalidDynamicSearchRuleConditions>)]
        conditions: Vec<LegacyCondition>,
    }
    let body = serde_json::json!({ CONDITIONS_FIELD: list });
    crate::decode::decode_json_value::<LegacyBody, JsonError>(body).map(|body| body.conditions)
}

fn conditions_never_hold() -> ResponseError {
    ResponseError::new(
        Code::InvalidDynamicSearchRuleConditions,
        "Invalid value at `.conditions`: the conditions can never hold together".to_owned(),
    )
}

/// A change of the rules, carried by a task and applied on the control core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleChange {
    /// Creates rule `uid` from `patch`, or patches it.
    Upsert { uid: String, patch: RulePatch },
    /// Deletes rule `uid` (nothing when there is none).
    Delete { uid: String },
    /// Deletes every rule.
    Clear,
}

/// What one change did: the rules it created, changed or deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeOutcome {
    pub affected_rules: u64,
}

/// The rules after `changes`, in order, and what each did.
pub fn apply_changes(
    rules: &DynamicSearchRules,
    changes: Vec<RuleChange>,
) -> (DynamicSearchRules, Vec<ChangeOutcome>) {
    let mut rules = rules.clone();
    let outcomes = changes
        .into_iter()
        .map(|change| apply_change(&mut rules, change))
        .collect();
    (rules, outcomes)
}

fn apply_change(rules: &mut DynamicSearchRules, change: RuleChange) -> ChangeOutcome {
    let affected_rules = match change {
        RuleChange::Upsert { uid, patch } => {
            let rule = rules
                .remove(&uid)
                .unwrap_or_else(|| DynamicSearchRule::new(uid.clone()));
            rules.insert(uid, patch.applied_to(rule));
            1
        }
        RuleChange::Delete { uid } => u64::from(rules.remove(&uid).is_some()),
        RuleChange::Clear => {
            let count = rules.len() as u64;
            rules.clear();
            count
        }
    };
    ChangeOutcome { affected_rules }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pin(id: &str, position: u32) -> Value {
        json!({"selector": {"id": id}, "action": {"type": "pin", "position": position}})
    }

    fn upsert(uid: &str, body: Value) -> RuleChange {
        RuleChange::Upsert {
            uid: uid.to_owned(),
            patch: RulePatch::decode(body).expect("the test body decodes"),
        }
    }

    #[test]
    fn a_replacing_patch_makes_any_rule_into_its_rule_and_survives_its_json() {
        let full = RulePatch::decode(json!({
            "description": "promote", "precedence": 3, "active": false,
            "conditions": {"query": {"words": "phone"}}, "actions": [pin("7", 0)]}))
        .expect("the test body decodes");
        let rule = full.applied_to(DynamicSearchRule::new("r".to_owned()));
        let bare = DynamicSearchRule::new("r".to_owned());
        let other = RulePatch::decode(json!({"description": "other", "precedence": 1,
                                             "actions": [pin("9", 2)]}))
        .expect("the test body decodes")
        .applied_to(DynamicSearchRule::new("r".to_owned()));
        for target in [&rule, &bare] {
            let patch = RulePatch::replacing(target);
            let sent = RulePatch::decode(Value::Object(patch.to_json()))
                .expect("a replacing patch decodes");
            assert_eq!(sent, patch);
            assert_eq!(&sent.clone().applied_to(other.clone()), target);
            assert_eq!(&sent.applied_to(bare.clone()), target);
        }
    }

    #[test]
    fn refusals_carry_meilisearch_1_50_codes_and_messages() {
        let cases = [
            (
                json!({"conditions": {"query": {"isEmpty": true, "words": "a"}}}),
                Code::BadRequest,
                "Invalid value at `.conditions.query`: either `isEmpty` or `words` can be used, not both at once",
            ),
            (
                json!({"conditions": {"time": {"start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}}}),
                Code::BadRequest,
                "Invalid value at `.conditions.time`: `end` (`2026-01-01 0:00:00.0 +00:00:00`) should be later than `start` (`2026-02-01 0:00:00.0 +00:00:00`)",
            ),
            (
                json!({"conditions": {"foo": 1}}),
                Code::InvalidDynamicSearchRuleConditions,
                "Unknown field `foo` inside `.conditions`: expected one of `time`, `query`",
            ),
            (
                json!({"conditions": {"query": {"foo": 1}}}),
                Code::InvalidDynamicSearchRuleConditions,
                "Unknown field `foo` inside `.conditions.query`: expected one of `isEmpty`, `words`",
            ),
            (
                json!({"actions": [{"selector": {}, "action": {"type": "pin", "position": 0}}]}),
                Code::InvalidDynamicSearchRuleActions,
                "Missing field `id` inside `.actions[0].selector`",
            ),
            (
                json!({"precedence": "x"}),
                Code::InvalidDynamicSearchRulePriority,
                "Invalid value type at `.precedence`: expected a positive integer, but found a string: `\"x\"`",
            ),
            (
                json!({"unknownField": true}),
                Code::BadRequest,
                "Unknown field `unknownField`: expected one of `description`, `precedence`, `active`, `conditions`, `actions`",
            ),
        ];
        for (body, code, message) in cases {
            let error = RulePatch::decode(body.clone()).unwrap_err();
            assert_eq!(
                (error.code, error.message.as_str()),
                (code, message),
                "{body}"
            );
        }
    }

    #[test]
    fn a_1_41_body_reads_as_1_50_and_keeps_its_refusals() {
        let patch = RulePatch::decode(json!({
            "priority": 4,
            "conditions": [{"scope": "query", "contains": "black friday"}],
            "actions": [pin("1", 0)]
        }))
        .expect("the test data is valid");
        assert_eq!(
            json!(patch.to_json()),
            json!({
                "precedence": 4,
                "conditions": {"query": {"words": "black friday"}},
                "actions": [pin("1", 0)]
            })
        );
        let both = RulePatch::decode(
            json!({"conditions": [{"scope": "query", "isEmpty": false, "contains": "a"}]}),
        )
        .unwrap_err();
        assert_eq!(
            both.message,
            "Invalid value at `.conditions[0]`: either `isEmpty` or `contains` can be used, not all at once"
        );
        let never = RulePatch::decode(json!({"conditions": [
            {"scope": "query", "isEmpty": true}, {"scope": "query", "contains": "a"}
        ]}))
        .unwrap_err();
        assert_eq!(never.code, Code::InvalidDynamicSearchRuleConditions);
    }

    #[test]
    fn changes_apply_in_order_and_count_what_they_touch() {
        let rules = DynamicSearchRules::new();
        let (rules, outcomes) = apply_changes(
            &rules,
            vec![
                upsert(
                    "a",
                    json!({"description": "first", "actions": [pin("1", 0)]}),
                ),
                upsert("a", json!({"precedence": 2})),
                upsert("b", json!({})),
                RuleChange::Delete { uid: "none".into() },
            ],
        );
        let counts: Vec<u64> = outcomes
            .iter()
            .map(|outcome| outcome.affected_rules)
            .collect();
        assert_eq!(counts, [1, 1, 1, 0]);
        assert_eq!(rules["a"].description.as_deref(), Some("first"));
        assert_eq!(rules["a"].precedence, Some(2));
        assert_eq!(rules["a"].actions.len(), 1);
        assert!(rules["b"].actions.is_empty() && rules["b"].active);
        let (rules, _) = apply_changes(
            &rules,
            vec![upsert(
                "a",
                json!({"actions": null, "precedence": null, "conditions": null}),
            )],
        );
        assert_eq!(rules["a"].precedence, None);
        assert!(rules["a"].actions.is_empty());
        let (rules, outcomes) = apply_changes(&rules, vec![RuleChange::Clear]);
        assert!(rules.is_empty());
        assert_eq!(outcomes[0].affected_rules, 2);
    }
}
