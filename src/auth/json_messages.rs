//! The few JSON-body error messages the key bodies need, worded exactly as Meilisearch's
//! deserr layer words them (reference §0.3).
//!
//! This is a stopgap: the shared decode layer (`src/decode/`) will produce these messages for
//! every route; when it lands, `auth::body` switches to it and this file goes away. Each
//! function returns only the message; the caller picks the error code.
//!
//! Invariants: locations are JSON-pointer-ish paths (`.actions[0]`), omitted at the root;
//! found values print as `<kind>: \`<compact JSON>\``, or `null`.

use serde_json::Value;

/// The kind of a JSON value, with its article, as deserr names it.
pub fn kind_description(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_u64() => "a positive integer",
        Value::Number(number) if number.is_i64() => "a negative integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A found value: its kind and its compact JSON, or `null`.
fn found_description(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        other => format!("{}: `{}`", kind_description(other), other),
    }
}

/// `" at `.x`"` for a location, nothing at the root.
fn at_location(location: &str) -> String {
    if location.is_empty() {
        String::new()
    } else {
        format!(" at `{location}`")
    }
}

/// A value of the wrong JSON type.
pub fn invalid_type(location: &str, expected: &str, found: &Value) -> String {
    format!(
        "Invalid value type{}: expected {expected}, but found {}",
        at_location(location),
        found_description(found)
    )
}

/// A value of the right type that failed a custom check.
pub fn invalid_value(location: &str, detail: &str) -> String {
    format!("Invalid value{}: {detail}", at_location(location))
}

/// A required top-level field that is absent.
pub fn missing_field(field: &str) -> String {
    format!("Missing field `{field}`")
}

/// A top-level key the body does not accept.
pub fn unknown_field(field: &str, accepted: &[&str]) -> String {
    format!(
        "Unknown field `{field}`: {}expected one of {}",
        did_you_mean(field, accepted),
        backquoted_list(accepted)
    )
}

/// A string that is not one of the accepted values.
pub fn unknown_value(value: &str, location: &str, accepted: &[&str]) -> String {
    format!(
        "Unknown value `{value}`{}: {}expected one of {}",
        at_location(location),
        did_you_mean(value, accepted),
        backquoted_list(accepted)
    )
}

/// A top-level key that may not be changed.
pub fn immutable_field(field: &str, accepted: &[&str]) -> String {
    format!(
        "Immutable field `{field}`: expected one of {}",
        backquoted_list(accepted)
    )
}

fn backquoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The typo budget by length of the received string (in bytes, as deserr counts it).
fn typos_allowed(received: &str) -> Option<usize> {
    match received.len() {
        0..=3 => None,
        4..=7 => Some(1),
        8..=12 => Some(2),
        13..=17 => Some(3),
        18..=24 => Some(4),
        _ => Some(5),
    }
}

/// `did you mean `x`? ` for the closest accepted string within the typo budget (the first
/// of equally close ones), or nothing.
pub fn did_you_mean(received: &str, accepted: &[&str]) -> String {
    let Some(budget) = typos_allowed(received) else {
        return String::new();
    };
    accepted
        .iter()
        .map(|candidate| (candidate, strsim::damerau_levenshtein(received, candidate)))
        .filter(|(_, distance)| *distance <= budget)
        .min_by_key(|(_, distance)| *distance)
        .map(|(candidate, _)| format!("did you mean `{candidate}`? "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_are_worded_like_deserr() {
        assert_eq!(
            invalid_type(".limit", "a string", &json!(13)),
            "Invalid value type at `.limit`: expected a string, but found a positive integer: `13`"
        );
        assert_eq!(
            invalid_type("", "an object", &Value::Null),
            "Invalid value type: expected an object, but found null"
        );
        assert_eq!(kind_description(&json!(-1)), "a negative integer");
        assert_eq!(kind_description(&json!(1.5)), "a number");
        assert_eq!(
            invalid_type(".name", "a string", &json!(["doggo"])),
            "Invalid value type at `.name`: expected a string, but found an array: `[\"doggo\"]`"
        );
    }

    #[test]
    fn did_you_mean_follows_the_length_budget() {
        let accepted = [
            "description",
            "name",
            "uid",
            "actions",
            "indexes",
            "expiresAt",
        ];
        assert_eq!(
            unknown_field("expires_at", &accepted),
            "Unknown field `expires_at`: did you mean `expiresAt`? expected one of \
             `description`, `name`, `uid`, `actions`, `indexes`, `expiresAt`"
        );
        assert_eq!(did_you_mean("nam", &accepted), "");
        assert_eq!(did_you_mean("nmae", &accepted), "did you mean `name`? ");
        assert_eq!(did_you_mean("doggo", &accepted), "");
    }
}
