//! Paths inside a JSON value, as the `request` and `response` templates name them in
//! their error messages (`` `response.data[0].embedding` ``).
//!
//! Invariant: a path only ever walks keys and indexes that exist in the template it was
//! taken from, so [`set_at`] on a copy of that template always finds its target.

use std::fmt::Write as _;

use serde_json::Value;

/// One step down a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathComponent {
    Key(String),
    Index(usize),
}

/// The steps from a template's root to one of its values.
pub type ValuePath = Vec<PathComponent>;

/// `` `root.key[0]` `` for `path` below `root`.
pub fn path_with_root<'path>(
    root: &str,
    path: impl IntoIterator<Item = &'path PathComponent>,
) -> String {
    let mut text = format!("`{root}");
    for component in path {
        let _ = match component {
            PathComponent::Key(key) => write!(text, ".{key}"),
            PathComponent::Index(index) => write!(text, "[{index}]"),
        };
    }
    text.push('`');
    text
}

/// Replaces the value at `path` in `target` by `value`; false when the path does not lead
/// to a value (never for a path taken from the same template).
pub fn set_at(target: &mut Value, path: &[PathComponent], value: Value) -> bool {
    let mut current = target;
    for component in path {
        let next = match component {
            PathComponent::Key(key) => current.get_mut(key.as_str()),
            PathComponent::Index(index) => current.get_mut(*index),
        };
        match next {
            Some(next) => current = next,
            None => return false,
        }
    }
    *current = value;
    true
}

/// How a value the server sent is named in an extraction error: the size of a container,
/// the JSON text of anything else.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Array(array) => format!("an array of size {}", array.len()),
        Value::Object(object) => format!("an object with {} field(s)", object.len()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_print_with_their_root_and_values_are_set() {
        let path = vec![
            PathComponent::Key("data".to_owned()),
            PathComponent::Index(0),
            PathComponent::Key("embedding".to_owned()),
        ];
        assert_eq!(
            path_with_root("response", &path),
            "`response.data[0].embedding`"
        );
        let mut value = json!({"data": [{"embedding": null}]});
        assert!(set_at(&mut value, &path, json!([1.0])));
        assert_eq!(value, json!({"data": [{"embedding": [1.0]}]}));
        assert!(!set_at(&mut value, &[PathComponent::Index(3)], json!(1)));
        assert_eq!(describe(&json!([1, 2])), "an array of size 2");
        assert_eq!(describe(&json!({"a": 1})), "an object with 1 field(s)");
        assert_eq!(describe(&json!("x")), "\"x\"");
    }
}
