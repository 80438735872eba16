//! A JSON template with one placeholder string (`"{{text}}"`, `"{{embedding}}"`) either
//! once, or inside the first item of an array whose second item is the repeat marker
//! (`["{{text}}", "{{..}}"]`): the shape of a REST embedder's `request` and `response`.
//!
//! Invariants: a parsed template has exactly one placeholder position, single or repeated,
//! never both; the repeat marker is only ever the second item of one array, not nested in
//! another repeated item; errors carry Meilisearch's wording and paths.

use serde_json::{Map, Value};

use super::value_path::{PathComponent, ValuePath, path_with_root, set_at};

/// Where a repeated placeholder sits.
#[derive(Debug, Clone)]
pub struct Repeated {
    /// The first item of the array, repeated once per value.
    pub item: Value,
    /// The path to the array.
    pub to_array: ValuePath,
    /// The path to the placeholder inside one item.
    pub in_item: ValuePath,
}

/// Where the placeholder sits.
#[derive(Debug, Clone)]
pub enum Shape {
    Single(ValuePath),
    Repeated(Repeated),
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct InjectableTemplate {
    template: Value,
    shape: Shape,
}

/// Why a template is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    NestedRepeat(ValuePath),
    RepeatNotInArray(ValuePath),
    BadRepeatIndex(ValuePath, usize),
    MissingPlaceholderInRepeated(ValuePath),
    MultipleRepeat(ValuePath, ValuePath),
    MultiplePlaceholder(ValuePath, ValuePath),
    MissingPlaceholder,
    BothRepeatedAndSingle {
        single: ValuePath,
        to_array: ValuePath,
        in_item: ValuePath,
    },
}

/// Prefixes every path of `error` with `prefix`.
fn prepend(error: TemplateError, prefix: &[PathComponent]) -> TemplateError {
    let join = |path: ValuePath| prefix.iter().cloned().chain(path).collect();
    match error {
        TemplateError::NestedRepeat(path) => TemplateError::NestedRepeat(join(path)),
        TemplateError::RepeatNotInArray(path) => TemplateError::RepeatNotInArray(join(path)),
        TemplateError::BadRepeatIndex(path, index) => {
            TemplateError::BadRepeatIndex(join(path), index)
        }
        TemplateError::MissingPlaceholderInRepeated(path) => {
            TemplateError::MissingPlaceholderInRepeated(join(path))
        }
        TemplateError::MultipleRepeat(path, previous) => {
            TemplateError::MultipleRepeat(join(path), join(previous))
        }
        TemplateError::MultiplePlaceholder(path, previous) => {
            TemplateError::MultiplePlaceholder(join(path), join(previous))
        }
        TemplateError::MissingPlaceholder => TemplateError::MissingPlaceholder,
        TemplateError::BothRepeatedAndSingle {
            single,
            to_array,
            in_item,
        } => TemplateError::BothRepeatedAndSingle {
            single: join(single),
            to_array: join(to_array),
            in_item,
        },
    }
}

impl TemplateError {
    /// Meilisearch's explanation, for the template named `root`.
    pub fn message(&self, root: &str, placeholder: &str, repeat: &str) -> String {
        let at = |path: &ValuePath| path_with_root(root, path);
        match self {
            TemplateError::NestedRepeat(path) => format!(
                r#"in {}: "{repeat}" appears nested inside of a value that is itself repeated"#,
                at(path)
            ),
            TemplateError::RepeatNotInArray(path) => {
                format!(r#"in {}: "{repeat}" appears outside of an array"#, at(path))
            }
            TemplateError::BadRepeatIndex(path, index) => format!(
                r#"in {}: "{repeat}" expected at position #1, but found at position #{index}"#,
                at(path)
            ),
            TemplateError::MissingPlaceholderInRepeated(path) => format!(
                r#"in {}: Expected "{placeholder}" inside of the repeated value"#,
                at(path)
            ),
            TemplateError::MultipleRepeat(path, previous) => format!(
                r#"in {}: Found "{repeat}", but it was already present in {}"#,
                at(path),
                at(previous)
            ),
            TemplateError::MultiplePlaceholder(path, previous) => format!(
                r#"in {}: Found "{placeholder}", but it was already present in {}"#,
                at(path),
                at(previous)
            ),
            TemplateError::MissingPlaceholder => {
                format!(r#"in `{root}`: "{placeholder}" not found"#)
            }
            TemplateError::BothRepeatedAndSingle {
                single,
                to_array,
                in_item,
            } => {
                let first = to_array
                    .iter()
                    .chain(std::iter::once(&PathComponent::Index(0)))
                    .chain(in_item.iter());
                format!(
                    r#"in {}: Found "{placeholder}", but it was already present in {} (repeated)"#,
                    at(single),
                    path_with_root(root, first)
                )
            }
        }
    }
}

/// The walk over a template that finds the placeholder.
struct Parser<'marker> {
    placeholder: &'marker str,
    repeat: &'marker str,
    /// True inside a repeated item, where no other repeat may appear.
    nested: bool,
    single: Option<ValuePath>,
    repeated: Option<Repeated>,
}

impl Parser<'_> {
    fn value(&mut self, value: &Value, path: &mut ValuePath) -> Result<(), TemplateError> {
        match value {
            Value::String(text) => self.string(text, path),
            Value::Array(items) => self.array(items, path),
            Value::Object(object) => self.object(object, path),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }

    fn string(&mut self, text: &str, path: &ValuePath) -> Result<(), TemplateError> {
        if text == self.placeholder {
            if let Some(previous) = &self.single {
                return Err(TemplateError::MultiplePlaceholder(
                    path.clone(),
                    previous.clone(),
                ));
            }
            self.single = Some(path.clone());
        }
        if text == self.repeat {
            return Err(TemplateError::RepeatNotInArray(path.clone()));
        }
        Ok(())
    }

    fn object(
        &mut self,
        object: &Map<String, Value>,
        path: &mut ValuePath,
    ) -> Result<(), TemplateError> {
        for (key, value) in object {
            path.push(PathComponent::Key(key.clone()));
            self.value(value, path)?;
            path.pop();
        }
        Ok(())
    }

    fn is_repeat(&self, value: &Value) -> bool {
        value.as_str() == Some(self.repeat)
    }

    fn array(&mut self, items: &[Value], path: &mut ValuePath) -> Result<(), TemplateError> {
        if items.len() >= 2 && self.is_repeat(&items[1]) {
            return self.repeated_array(items, path);
        }
        if let Some(position) = items.iter().position(|item| self.is_repeat(item)) {
            return Err(TemplateError::BadRepeatIndex(path.clone(), position));
        }
        for (index, item) in items.iter().enumerate() {
            path.push(PathComponent::Index(index));
            self.value(item, path)?;
            path.pop();
        }
        Ok(())
    }

    /// An array whose second item is the repeat marker.
    fn repeated_array(&mut self, items: &[Value], path: &ValuePath) -> Result<(), TemplateError> {
        if self.nested {
            return Err(TemplateError::NestedRepeat(path.clone()));
        }
        if let Some(previous) = &self.repeated {
            return Err(TemplateError::MultipleRepeat(
                path.clone(),
                previous.to_array.clone(),
            ));
        }
        if self.is_repeat(&items[0]) {
            return Err(TemplateError::BadRepeatIndex(path.clone(), 0));
        }
        if let Some(position) = items[2..].iter().position(|item| self.is_repeat(item)) {
            return Err(TemplateError::BadRepeatIndex(path.clone(), position + 2));
        }
        let mut inner = Parser {
            placeholder: self.placeholder,
            repeat: self.repeat,
            nested: true,
            single: None,
            repeated: None,
        };
        inner
            .value(&items[0], &mut Vec::new())
            .map_err(|error| prepend(error, path))?;
        let in_item = inner.single.ok_or_else(|| {
            let mut item_path = path.clone();
            item_path.push(PathComponent::Index(0));
            TemplateError::MissingPlaceholderInRepeated(item_path)
        })?;
        self.repeated = Some(Repeated {
            item: items[0].clone(),
            to_array: path.clone(),
            in_item,
        });
        Ok(())
    }
}

impl InjectableTemplate {
    /// Parses `template` around `placeholder` and the `repeat` marker.
    pub fn new(template: Value, placeholder: &str, repeat: &str) -> Result<Self, TemplateError> {
        let mut parser = Parser {
            placeholder,
            repeat,
            nested: false,
            single: None,
            repeated: None,
        };
        parser.value(&template, &mut Vec::new())?;
        let shape = match (parser.repeated, parser.single) {
            (None, None) => return Err(TemplateError::MissingPlaceholder),
            (None, Some(single)) => Shape::Single(single),
            (Some(repeated), None) => Shape::Repeated(repeated),
            (Some(repeated), Some(single)) => {
                return Err(TemplateError::BothRepeatedAndSingle {
                    single,
                    to_array: repeated.to_array,
                    in_item: repeated.in_item,
                });
            }
        };
        Ok(InjectableTemplate { template, shape })
    }

    /// Whether the template takes a list of values.
    pub fn is_repeated(&self) -> bool {
        matches!(self.shape, Shape::Repeated(_))
    }

    /// Where the placeholder sits.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The template with `values` in place of the placeholder: the first value for a
    /// single template, one item per value for a repeated one; `None` without values.
    pub fn inject(&self, values: impl IntoIterator<Item = Value>) -> Option<Value> {
        let mut values = values.into_iter();
        let mut rendered = self.template.clone();
        match &self.shape {
            Shape::Single(path) => {
                set_at(&mut rendered, path, values.next()?);
            }
            Shape::Repeated(repeated) => {
                let items: Vec<Value> = values
                    .map(|value| {
                        let mut item = repeated.item.clone();
                        set_at(&mut item, &repeated.in_item, value);
                        item
                    })
                    .collect();
                if items.is_empty() {
                    return None;
                }
                set_at(&mut rendered, &repeated.to_array, Value::Array(items));
            }
        }
        Some(rendered)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(template: Value) -> String {
        InjectableTemplate::new(template, "{{text}}", "{{..}}")
            .expect_err("invalid")
            .message("request", "{{text}}", "{{..}}")
    }

    #[test]
    fn single_and_repeated_templates_inject_their_values() {
        let single =
            InjectableTemplate::new(json!({"input": "{{text}}", "m": 1}), "{{text}}", "{{..}}")
                .expect("valid");
        assert!(!single.is_repeated());
        assert_eq!(
            single.inject([json!("hello")]),
            Some(json!({"input": "hello", "m": 1}))
        );
        let repeated = InjectableTemplate::new(
            json!({"inputs": [{"t": "{{text}}", "k": 2}, "{{..}}"]}),
            "{{text}}",
            "{{..}}",
        )
        .expect("valid");
        assert!(repeated.is_repeated());
        assert_eq!(
            repeated.inject([json!("a"), json!("b")]),
            Some(json!({"inputs": [{"t": "a", "k": 2}, {"t": "b", "k": 2}]}))
        );
        assert_eq!(repeated.inject(Vec::new()), None);
    }

    #[test]
    fn invalid_templates_are_explained_as_meilisearch_does() {
        assert_eq!(
            message(json!({"a": 1})),
            r#"in `request`: "{{text}}" not found"#
        );
        assert_eq!(
            message(json!({"a": "{{text}}", "b": "{{text}}"})),
            r#"in `request.b`: Found "{{text}}", but it was already present in `request.a`"#
        );
        assert_eq!(
            message(json!({"a": "{{..}}"})),
            r#"in `request.a`: "{{..}}" appears outside of an array"#
        );
        assert_eq!(
            message(json!({"a": ["{{text}}", "x", "{{..}}"]})),
            r#"in `request.a`: "{{..}}" expected at position #1, but found at position #2"#
        );
        assert_eq!(
            message(json!({"a": [1, "{{..}}"]})),
            r#"in `request.a[0]`: Expected "{{text}}" inside of the repeated value"#
        );
        assert_eq!(
            message(json!({"a": [[["{{text}}", "{{..}}"]], "{{..}}"]})),
            r#"in `request.a[0]`: "{{..}}" appears nested inside of a value that is itself repeated"#
        );
        assert_eq!(
            message(json!({"a": "{{text}}", "b": ["{{text}}", "{{..}}"]})),
            r#"in `request.a`: Found "{{text}}", but it was already present in `request.b[0]` (repeated)"#
        );
        assert_eq!(
            message(json!({"a": ["{{text}}", "{{..}}"], "b": ["{{text}}", "{{..}}"]})),
            r#"in `request.b`: Found "{{..}}", but it was already present in `request.a`"#
        );
    }
}
