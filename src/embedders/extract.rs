//! Reading the embeddings out of a server's answer along a `response` template, with
//! Meilisearch's explanation of where the answer differs from the template.
//!
//! Invariants: a single template yields exactly one embedding, a repeated one yields one
//! per item of the answer's array (the caller checks the count); an error names the path
//! in the template where the answer stopped matching.

use serde_json::Value;

use super::injectable::{InjectableTemplate, Shape};
use super::value_path::{PathComponent, ValuePath, describe, path_with_root};

/// The largest edit distance at which a key of the answer is offered as a suggestion.
const KEY_SUGGESTION_DISTANCE: usize = 2;

/// What the extraction was doing when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Single,
    FindingArray,
    ArrayItem(usize),
}

/// How the answer differs from the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    Missing {
        at: usize,
        path: ValuePath,
        suggestion: Option<String>,
    },
    Wrong {
        found: String,
        at: usize,
        path: ValuePath,
    },
    NotAnEmbedding {
        reason: String,
        path: ValuePath,
    },
}

/// A failed extraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractionError {
    pub mismatch: Mismatch,
    pub context: Context,
}

/// The object or array the message points at, as Meilisearch names it.
enum Named<'path> {
    Object(&'path str),
    ItemInside(&'path str, usize),
    NestedItem(&'path str, usize, usize),
}

fn last_named<'path>(root: &'path str, path: &'path [PathComponent]) -> String {
    let mut named = Named::Object(root);
    for component in path {
        named = match (component, named) {
            (PathComponent::Key(name), _) => Named::Object(name),
            (PathComponent::Index(index), Named::Object(name)) => Named::ItemInside(name, *index),
            (PathComponent::Index(index), Named::ItemInside(name, _)) => {
                Named::NestedItem(name, *index, 0)
            }
            (PathComponent::Index(index), Named::NestedItem(name, _, level)) => {
                Named::NestedItem(name, *index, level.saturating_add(1))
            }
        };
    }
    match named {
        Named::Object(name) => format!("`{name}`"),
        Named::ItemInside(name, index) => format!("item #{index} inside `{name}`"),
        Named::NestedItem(name, index, 0) => {
            format!("item #{index} inside nested array in `{name}`")
        }
        Named::NestedItem(name, index, level) => format!(
            "item #{index} inside nested array ({} levels of nesting) in `{name}`",
            level + 1
        ),
    }
}

fn missing_component(component: Option<&PathComponent>) -> String {
    match component {
        Some(PathComponent::Index(index)) => format!("item #{index}"),
        Some(PathComponent::Key(key)) => format!(r#"key "{key}""#),
        None => "unknown".to_owned(),
    }
}

fn expected_component(component: Option<&PathComponent>) -> String {
    match component {
        Some(PathComponent::Index(index)) => {
            format!("an array with at least {} item(s)", index.saturating_add(1))
        }
        Some(PathComponent::Key(key)) => format!("an object with key `{key}`"),
        None => "unknown".to_owned(),
    }
}

impl ExtractionError {
    /// Meilisearch's explanation for the template named `root`.
    pub fn message(&self, root: &str, placeholder: &str, expected: &str) -> String {
        let context = match self.context {
            Context::Single => format!(r#"extracting a single "{placeholder}""#),
            Context::FindingArray => format!(r#"extracting the array of "{placeholder}"s"#),
            Context::ArrayItem(index) => {
                format!(r#"extracting item #{index} from the array of "{placeholder}"s"#)
            }
        };
        match &self.mismatch {
            Mismatch::Missing {
                at,
                path,
                suggestion,
            } => {
                let before = &path[..*at];
                let hint = suggestion.as_ref().map(|key| {
                    let suggested_key = PathComponent::Key(key.clone());
                    let suggested = before.iter().chain(std::iter::once(&suggested_key));
                    format!(
                        "\n  - Hint: {} has key `{key}`, did you mean {} in embedder configuration?",
                        last_named(root, before),
                        path_with_root(root, suggested)
                    )
                });
                format!(
                    "in {}, while {context}, configuration expects {}, which is missing in response{}",
                    path_with_root(root, before),
                    missing_component(path.get(*at)),
                    hint.unwrap_or_default()
                )
            }
            Mismatch::Wrong { found, at, path } => format!(
                "in {}, while {context}, configuration expects {} to be {} but server sent {found}",
                path_with_root(root, &path[..*at]),
                last_named(root, &path[..*at]),
                expected_component(path.get(*at))
            ),
            Mismatch::NotAnEmbedding { reason, path } => format!(
                "in {}, while {context}, expected {} to be {expected}, but failed to parse server response:\n  - {reason}",
                path_with_root(root, path),
                last_named(root, path)
            ),
        }
    }
}

/// A key of `object` close to the missing `wanted` one.
fn suggest(object: &serde_json::Map<String, Value>, wanted: &str) -> Option<String> {
    object
        .keys()
        .find(|key| {
            let distance = strsim::osa_distance(wanted, key);
            distance > 0 && distance <= KEY_SUGGESTION_DISTANCE
        })
        .cloned()
}

/// The value at `path` in `value`.
fn follow(path: &[PathComponent], value: Value) -> Result<Value, Mismatch> {
    let mut current = value;
    for (at, component) in path.iter().enumerate() {
        let wrong = |current: &Value| Mismatch::Wrong {
            found: describe(current),
            at,
            path: path.to_vec(),
        };
        let missing = |suggestion| Mismatch::Missing {
            at,
            path: path.to_vec(),
            suggestion,
        };
        current = match (component, current) {
            (PathComponent::Key(key), Value::Object(mut object)) => match object.remove(key) {
                Some(next) => next,
                None => return Err(missing(suggest(&object, key))),
            },
            (PathComponent::Index(index), Value::Array(mut items)) if *index < items.len() => {
                items.swap_remove(*index)
            }
            (PathComponent::Index(_), Value::Array(_)) => return Err(missing(None)),
            (_, other) => return Err(wrong(&other)),
        };
    }
    Ok(current)
}

/// The embedding at `path` in `value`.
fn embedding_at(path: &[PathComponent], value: Value) -> Result<Vec<f32>, Mismatch> {
    let found = follow(path, value)?;
    serde_json::from_value(found).map_err(|error| Mismatch::NotAnEmbedding {
        reason: error.to_string(),
        path: path.to_vec(),
    })
}

/// The embeddings of `answer` where `template` puts its placeholder.
pub fn extract(
    template: &InjectableTemplate,
    answer: Value,
) -> Result<Vec<Vec<f32>>, ExtractionError> {
    let fail = |context| move |mismatch| ExtractionError { mismatch, context };
    match template.shape() {
        Shape::Single(path) => Ok(vec![
            embedding_at(path, answer).map_err(fail(Context::Single))?,
        ]),
        Shape::Repeated(repeated) => {
            let array = follow(&repeated.to_array, answer).map_err(fail(Context::FindingArray))?;
            let items = match array {
                Value::Array(items) => items,
                other => {
                    let mut path = repeated.to_array.clone();
                    path.push(PathComponent::Index(0));
                    return Err(fail(Context::FindingArray)(Mismatch::Wrong {
                        found: describe(&other),
                        at: repeated.to_array.len(),
                        path,
                    }));
                }
            };
            items
                .into_iter()
                .enumerate()
                .map(|(index, item)| {
                    embedding_at(&repeated.in_item, item).map_err(fail(Context::ArrayItem(index)))
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn openai_shape() -> InjectableTemplate {
        InjectableTemplate::new(
            json!({"data": [{"embedding": "{{embedding}}"}, "{{..}}"]}),
            "{{embedding}}",
            "{{..}}",
        )
        .expect("valid")
    }

    fn message(answer: Value) -> String {
        extract(&openai_shape(), answer)
            .expect_err("mismatch")
            .message("response", "{{embedding}}", "an array of numbers")
    }

    #[test]
    fn embeddings_are_read_along_the_template() {
        let answer = json!({"data": [{"embedding": [1.0, 2.0]}, {"embedding": [3, 4]}], "x": 1});
        assert_eq!(
            extract(&openai_shape(), answer).expect("read"),
            vec![vec![1.0, 2.0], vec![3.0, 4.0]]
        );
        let single = InjectableTemplate::new(
            json!({"embedding": "{{embedding}}"}),
            "{{embedding}}",
            "{{..}}",
        )
        .expect("valid");
        assert_eq!(
            extract(&single, json!({"embedding": [0.5]})).expect("read"),
            vec![vec![0.5]]
        );
    }

    #[test]
    fn mismatches_are_explained_as_meilisearch_does() {
        assert_eq!(
            message(json!({"dta": []})),
            "in `response`, while extracting the array of \"{{embedding}}\"s, configuration expects key \"data\", which is missing in response\n  - Hint: `response` has key `dta`, did you mean `response.dta` in embedder configuration?"
        );
        assert_eq!(
            message(json!({"data": {"a": 1}})),
            "in `response.data`, while extracting the array of \"{{embedding}}\"s, configuration expects `data` to be an array with at least 1 item(s) but server sent an object with 1 field(s)"
        );
        assert_eq!(
            message(json!({"data": [{"embedding": "no"}]})),
            "in `response.embedding`, while extracting item #0 from the array of \"{{embedding}}\"s, expected `embedding` to be an array of numbers, but failed to parse server response:\n  - invalid type: string \"no\", expected a sequence"
        );
        assert_eq!(
            message(json!([1])),
            "in `response`, while extracting the array of \"{{embedding}}\"s, configuration expects `response` to be an object with key `data` but server sent an array of size 1"
        );
    }
}
