//! The dynamic search rules' 1.41 form, still read: a rule file or dump written before
//! 1.50, and a `PATCH` body a 1.41 client sends (`priority`, `conditions` as a list).
//!
//! In 1.41 a rule had `priority` and a list of conditions, each with a `scope`: `query`
//! (`isEmpty` or `contains`) or `time` (`start`, `end`); every condition had to hold. The
//! 1.50 form has `precedence` and one condition per part. A list becomes the part it
//! describes as Meilisearch's upgrade makes it: the `contains` texts join into `words`,
//! `isEmpty` values must agree, time windows intersect (the latest start, the earliest end).
//!
//! Invariants: a 1.50 rule reads unchanged; a list whose conditions cannot hold together
//! (disagreeing `isEmpty`, windows that do not meet) converts to nothing, never to a rule
//! that would apply; an action without a selected `id` (1.41 allowed it, it selected nothing)
//! is dropped.

use std::convert::Infallible;

use deserr::{DeserializeError, Deserr, ErrorKind, ValuePointerRef};
use serde::Deserialize;
use time::OffsetDateTime;

use super::dynamic_search_rules::{
    Conditions, DynamicSearchRule, PinAction, QueryCondition, RuleAction, Selector, TimeCondition,
    parse_optional_date,
};
use crate::auth::expiration::ExpirationDateError;
use crate::decode::JsonError;

/// A rule as a file or a dump holds it, in either form.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredRule {
    uid: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, alias = "priority")]
    precedence: Option<u64>,
    #[serde(default = "active_by_default")]
    active: bool,
    #[serde(default)]
    conditions: StoredConditions,
    #[serde(default)]
    actions: Vec<StoredAction>,
}

fn active_by_default() -> bool {
    true
}

/// `conditions` in either form.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum StoredConditions {
    Parts(Conditions),
    List(Vec<LegacyCondition>),
}

impl Default for StoredConditions {
    fn default() -> Self {
        StoredConditions::Parts(Conditions::default())
    }
}

/// An action whose selector may lack its `id` (1.41).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredAction {
    selector: StoredSelector,
    action: PinAction,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredSelector {
    #[serde(default)]
    index_uid: Option<String>,
    #[serde(default)]
    id: Option<String>,
}

/// One condition of a 1.41 list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Deserr)]
#[deserr(tag = "scope", rename_all = camelCase, validate = validate_legacy -> JsonError)]
#[serde(tag = "scope", rename_all = "camelCase")]
pub enum LegacyCondition {
    #[deserr(rename_all = camelCase)]
    #[serde(rename_all = "camelCase")]
    Query {
        #[serde(default)]
        #[deserr(default)]
        is_empty: Option<bool>,
        #[serde(default)]
        #[deserr(default)]
        contains: Option<String>,
    },
    #[deserr(rename_all = camelCase)]
    #[serde(rename_all = "camelCase")]
    Time {
        #[serde(default, with = "time::serde::rfc3339::option")]
        #[deserr(default, try_from(Option<String>) = parse_optional_date -> ExpirationDateError)]
        start: Option<OffsetDateTime>,
        #[serde(default, with = "time::serde::rfc3339::option")]
        #[deserr(default, try_from(Option<String>) = parse_optional_date -> ExpirationDateError)]
        end: Option<OffsetDateTime>,
    },
}

impl TryFrom<StoredRule> for DynamicSearchRule {
    type Error = String;

    fn try_from(stored: StoredRule) -> Result<DynamicSearchRule, String> {
        let conditions = match stored.conditions {
            StoredConditions::Parts(conditions) => conditions,
            StoredConditions::List(list) => merged(&list).ok_or_else(|| {
                format!(
                    "the conditions of rule `{}` can never hold together",
                    stored.uid
                )
            })?,
        };
        let actions = stored
            .actions
            .into_iter()
            .filter_map(|action| {
                let id = action.selector.id?;
                Some(RuleAction {
                    selector: Selector {
                        index_uid: action.selector.index_uid,
                        id,
                    },
                    action: action.action,
                })
            })
            .collect();
        Ok(DynamicSearchRule {
            uid: stored.uid,
            description: stored.description,
            precedence: stored.precedence,
            active: stored.active,
            conditions,
            actions,
        })
    }
}

/// The 1.50 parts of a 1.41 list, `None` when its conditions cannot hold together.
pub fn merged(list: &[LegacyCondition]) -> Option<Conditions> {
    let mut conditions = Conditions::default();
    for condition in list {
        match condition {
            LegacyCondition::Query { is_empty, contains } => {
                let query = conditions.query.get_or_insert_with(QueryCondition::default);
                if let (Some(held), Some(new)) = (query.is_empty, *is_empty)
                    && held != new
                {
                    return None;
                }
                query.is_empty = query.is_empty.or(*is_empty);
                if let Some(text) = contains {
                    query.words = Some(match query.words.take() {
                        Some(words) => format!("{words} {text}"),
                        None => text.clone(),
                    });
                }
            }
            LegacyCondition::Time { start, end } => {
                let time = conditions.time.get_or_insert_with(TimeCondition::default);
                time.start = latest(time.start, *start);
                time.end = earliest(time.end, *end);
            }
        }
    }
    conditions.contradiction().is_none().then_some(conditions)
}

fn latest(held: Option<OffsetDateTime>, new: Option<OffsetDateTime>) -> Option<OffsetDateTime> {
    match (held, new) {
        (Some(held), Some(new)) => Some(held.max(new)),
        (held, new) => held.or(new),
    }
}

fn earliest(held: Option<OffsetDateTime>, new: Option<OffsetDateTime>) -> Option<OffsetDateTime> {
    match (held, new) {
        (Some(held), Some(new)) => Some(held.min(new)),
        (held, new) => held.or(new),
    }
}

/// 1.41's checks of one condition, with its messages: one of `isEmpty` and `contains`,
/// `start` before `end`.
fn validate_legacy<E: DeserializeError>(
    condition: LegacyCondition,
    location: ValuePointerRef,
) -> Result<LegacyCondition, E> {
    let refusal = match &condition {
        LegacyCondition::Query {
            is_empty: Some(_),
            contains: Some(_),
        } => Some("either `isEmpty` or `contains` can be used, not all at once".to_owned()),
        LegacyCondition::Query {
            is_empty: None,
            contains: None,
        } => Some("at least `isEmpty` or `contains` must be used".to_owned()),
        LegacyCondition::Time {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: serde_json::Value) -> Result<DynamicSearchRule, String> {
        let stored: StoredRule = serde_json::from_value(value).expect("the test data is valid");
        DynamicSearchRule::try_from(stored)
    }

    #[test]
    fn a_rule_of_1_41_reads_in_the_1_50_form() {
        let rule = read(json!({
            "uid": "black-friday",
            "priority": 10,
            "conditions": [
                {"scope": "query", "contains": "black"},
                {"scope": "query", "contains": "friday"},
                {"scope": "time", "start": "2025-11-28T00:00:00Z", "end": "2025-11-30T00:00:00Z"},
                {"scope": "time", "start": "2025-11-29T00:00:00Z"}
            ],
            "actions": [
                {"selector": {"indexUid": "products", "id": "123"}, "action": {"type": "pin", "position": 1}},
                {"selector": {"indexUid": "products"}, "action": {"type": "pin", "position": 2}}
            ]
        }))
        .expect("the test data is valid");
        assert_eq!(
            serde_json::to_value(&rule).expect("the test data is valid"),
            json!({
                "uid": "black-friday",
                "precedence": 10,
                "active": true,
                "conditions": {
                    "time": {"start": "2025-11-29T00:00:00Z", "end": "2025-11-30T00:00:00Z"},
                    "query": {"words": "black friday"}
                },
                "actions": [
                    {"selector": {"indexUid": "products", "id": "123"}, "action": {"type": "pin", "position": 1}}
                ]
            })
        );
    }

    #[test]
    fn a_rule_of_1_50_reads_unchanged() {
        let text = json!({
            "uid": "a",
            "description": "d",
            "precedence": 3,
            "active": false,
            "conditions": {"query": {"isEmpty": false}},
            "actions": []
        });
        let rule = read(text.clone()).expect("the test data is valid");
        assert_eq!(
            serde_json::to_value(&rule).expect("the test data is valid"),
            text
        );
    }

    #[test]
    fn conditions_that_cannot_hold_together_convert_to_nothing() {
        let disagreeing = [
            LegacyCondition::Query {
                is_empty: Some(true),
                contains: None,
            },
            LegacyCondition::Query {
                is_empty: Some(false),
                contains: None,
            },
        ];
        assert_eq!(merged(&disagreeing), None);
        let date = |text: &str| {
            Some(
                OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                    .expect("the test data is valid"),
            )
        };
        let apart = [
            LegacyCondition::Time {
                start: date("2025-01-01T00:00:00Z"),
                end: date("2025-01-02T00:00:00Z"),
            },
            LegacyCondition::Time {
                start: date("2025-02-01T00:00:00Z"),
                end: None,
            },
        ];
        assert_eq!(merged(&apart), None);
        let empty_with_words = [
            LegacyCondition::Query {
                is_empty: Some(true),
                contains: None,
            },
            LegacyCondition::Query {
                is_empty: None,
                contains: Some("x".into()),
            },
        ];
        assert_eq!(merged(&empty_with_words), None);
        assert!(
            read(json!({"uid": "x", "conditions": [
                {"scope": "query", "isEmpty": true}, {"scope": "query", "isEmpty": false}
            ]}))
            .is_err()
        );
    }
}
