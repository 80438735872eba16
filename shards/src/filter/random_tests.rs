//! Seeded randomized tests: the parser never panics on arbitrary input, and evaluation over the
//! in-memory source agrees with a naive per-document model.
//!
//! `SHARDS_RANDOM_SEED` and `SHARDS_RANDOM_CASES` change the seed and the number of cases; the
//! seed is printed so that a failure can be replayed.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::{
    Condition, Expression, Filter, FilterableRules, MemoryFacetSource, evaluate, normalize_facet,
};

const DEFAULT_SEED: u64 = 0x5eed_f11e_0000_0001;
const DEFAULT_CASES: usize = 400;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// xorshift64: small, deterministic, good enough to pick test inputs.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const PIECES: &[&str] = &[
    "a",
    "b.c",
    "12",
    "-3.5",
    "1e",
    ".5",
    "AND",
    "OR",
    "NOT",
    "IN",
    "TO",
    "EXISTS",
    "IS",
    "NULL",
    "EMPTY",
    "CONTAINS",
    "STARTS WITH",
    " ",
    "  ",
    "\n",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    "!=",
    ">",
    ">=",
    "<",
    "<=",
    "!",
    "'",
    "\"",
    "\\",
    "\\'",
    "\\x4",
    "\\u{1F600}",
    "\\u12",
    "_geoRadius",
    "_geoBoundingBox",
    "_geoPolygon",
    "_geoPoint",
    "_geo",
    "_vectors",
    ".",
    ".fragments",
    "🐻",
    "é",
    "\u{a0}",
    "_geoRadius(1, 2, 3)",
    "_geoPolygon([1,2],[3,4],[5,6])",
    "a = 1",
    "b IN [1, 2]",
    "c 1 TO 2",
    "'single'",
];

#[test]
fn parser_never_panics_and_errors_render() {
    let seed = setting("SHARDS_RANDOM_SEED", DEFAULT_SEED);
    let cases = setting("SHARDS_RANDOM_CASES", DEFAULT_CASES as u64) as usize * 10;
    println!("parser_never_panics_and_errors_render: seed {seed}, {cases} cases");
    let mut random = Random(seed.max(1));
    for _ in 0..cases {
        let mut text = String::new();
        for _ in 0..1 + random.below(12) {
            text.push_str(random.pick(PIECES));
        }
        match Filter::parse(&text) {
            Ok(Some(filter)) => {
                let mut attributes = Vec::new();
                filter.expression().attributes(usize::MAX, &mut attributes);
                for token in attributes {
                    assert!(filter.located(token, "m").contains(&text), "input {text:?}");
                }
            }
            Ok(None) => assert!(text.trim().is_empty()),
            Err(error) => assert!(error.message.ends_with(&text), "input {text:?}: {error}"),
        }
    }
}

const NUMBERS: &[f64] = &[-1.0, 0.0, 1.5, 2.0, 10.0];
const STRINGS: &[&str] = &["Alpha", "beta", "10", "", "ÉTÉ", "alphabet", "b"];
const FIELDS: &[&str] = &["a", "b", "c"];
const OPERANDS: &[&str] = &[
    "1.5", "2", "10", "-1", "alpha", "Beta", "'été'", "b", "''", "true", "0",
];

fn random_scalar(random: &mut Random) -> Value {
    match random.below(5) {
        0 => json!(random.pick(NUMBERS)),
        1 | 2 => json!(random.pick(STRINGS)),
        3 => json!(random.below(2) == 0),
        _ => Value::Null,
    }
}

fn random_document(random: &mut Random) -> Value {
    let mut object = serde_json::Map::new();
    for field in FIELDS {
        match random.below(5) {
            0 => {}
            1 => {
                let elements = (0..random.below(3))
                    .map(|_| random_scalar(random))
                    .collect();
                object.insert((*field).to_owned(), Value::Array(elements));
            }
            _ => {
                object.insert((*field).to_owned(), random_scalar(random));
            }
        }
    }
    Value::Object(object)
}

fn random_atom(random: &mut Random) -> String {
    let field = random.pick(FIELDS);
    let operand = random.pick(OPERANDS);
    let other = random.pick(OPERANDS);
    match random.below(12) {
        0 => format!("{field} = {operand}"),
        1 => format!("{field} != {operand}"),
        2 => format!("{field} > {operand}"),
        3 => format!("{field} <= {operand}"),
        4 => format!("{field} {operand} TO {other}"),
        5 => format!("{field} IN [{operand}, {other}]"),
        6 => format!("{field} EXISTS"),
        7 => format!("{field} IS NULL"),
        8 => format!("{field} IS EMPTY"),
        9 => format!("{field} CONTAINS {operand}"),
        10 => format!("{field} STARTS WITH {operand}"),
        _ => format!("{field} >= {operand}"),
    }
}

fn random_filter(random: &mut Random, depth: usize) -> String {
    if depth == 0 || random.below(3) == 0 {
        return random_atom(random);
    }
    match random.below(4) {
        0 => format!(
            "{} AND {}",
            random_filter(random, depth - 1),
            random_filter(random, depth - 1)
        ),
        1 => format!(
            "{} OR {}",
            random_filter(random, depth - 1),
            random_filter(random, depth - 1)
        ),
        2 => format!("NOT {}", random_filter(random, depth - 1)),
        _ => format!("({})", random_filter(random, depth - 1)),
    }
}

/// The scalar values of a field, each with whether it is the key's own value.
fn field_values<'a>(document: &'a Value, field: &str) -> Option<Vec<(&'a Value, bool)>> {
    match document.get(field)? {
        Value::Array(elements) => Some(elements.iter().map(|element| (element, false)).collect()),
        value => Some(vec![(value, true)]),
    }
}

/// What the string form of a stored scalar is for filtering, if any.
fn stored_string(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !text.is_empty() => Some(normalize_facet(text)),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|number| number.is_finite())
}

fn model_comparison(value: &Value, condition: &Condition) -> bool {
    let number = value.as_f64();
    let string = stored_string(value);
    let compare =
        |operand: &str, numbers: fn(f64, f64) -> bool, strings: fn(&str, &str) -> bool| {
            number
                .zip(finite(operand))
                .is_some_and(|(stored, operand)| numbers(stored, operand))
                || string
                    .as_deref()
                    .is_some_and(|stored| strings(stored, operand))
        };
    match condition {
        Condition::Equal(operand) => {
            number
                .zip(finite(&operand.value))
                .is_some_and(|(stored, wanted)| stored == wanted)
                || string.as_deref() == Some(normalize_facet(&operand.value).as_str())
        }
        Condition::GreaterThan(operand) => compare(&operand.value, |s, o| s > o, |s, o| s > o),
        Condition::GreaterThanOrEqual(operand) => {
            compare(&operand.value, |s, o| s >= o, |s, o| s >= o)
        }
        Condition::LowerThan(operand) => compare(&operand.value, |s, o| s < o, |s, o| s < o),
        Condition::LowerThanOrEqual(operand) => {
            compare(&operand.value, |s, o| s <= o, |s, o| s <= o)
        }
        Condition::Between { from, to } => {
            number
                .zip(finite(&from.value).zip(finite(&to.value)))
                .is_some_and(|(stored, (low, high))| low <= stored && stored <= high)
                || string.as_deref().is_some_and(|stored| {
                    from.value.as_str() <= stored && stored <= to.value.as_str()
                })
        }
        Condition::Contains { word, .. } => {
            string.is_some_and(|stored| stored.contains(&normalize_facet(&word.value)))
        }
        Condition::StartsWith { word, .. } => {
            string.is_some_and(|stored| stored.starts_with(&normalize_facet(&word.value)))
        }
        _ => unreachable!("presence conditions are handled by the caller"),
    }
}

fn model_condition(document: &Value, field: &str, condition: &Condition, known: &[&str]) -> bool {
    // As in Meilisearch, a field no document has selects nothing, even with `!=`.
    if !known.contains(&field) {
        return false;
    }
    if let Condition::NotEqual(operand) = condition {
        return !model_condition(document, field, &Condition::Equal(operand.clone()), known);
    }
    let Some(values) = field_values(document, field) else {
        return false;
    };
    match condition {
        Condition::Exists => true,
        Condition::Null => values.iter().any(|(value, own)| *own && value.is_null()),
        Condition::Empty => match document.get(field) {
            Some(Value::Array(elements)) => elements.is_empty(),
            Some(Value::String(text)) => text.is_empty(),
            _ => false,
        },
        Condition::StartsWith { word, .. } if normalize_facet(&word.value).is_empty() => true,
        other => values
            .iter()
            .any(|(value, _)| model_comparison(value, other)),
    }
}

fn model(document: &Value, expression: &Expression, known: &[&str]) -> bool {
    match expression {
        Expression::Not(inner) => !model(document, inner, known),
        Expression::And(children) => children.iter().all(|child| model(document, child, known)),
        Expression::Or(children) => children.iter().any(|child| model(document, child, known)),
        Expression::Condition {
            attribute,
            condition,
        } => model_condition(document, &attribute.value, condition, known),
        Expression::In { attribute, values } => values.iter().any(|value| {
            model_condition(
                document,
                &attribute.value,
                &Condition::Equal(value.clone()),
                known,
            )
        }),
        other => unreachable!("not generated: {other:?}"),
    }
}

#[test]
fn evaluation_agrees_with_a_naive_model() {
    let seed = setting("SHARDS_RANDOM_SEED", DEFAULT_SEED);
    let cases = setting("SHARDS_RANDOM_CASES", DEFAULT_CASES as u64) as usize;
    println!("evaluation_agrees_with_a_naive_model: seed {seed}, {cases} cases");
    let mut random = Random(seed.max(1));
    let rules = FilterableRules::from_setting(&json!(FIELDS)).expect("from_setting succeeds");
    for case in 0..cases {
        let documents: Vec<Value> = (0..1 + random.below(12))
            .map(|_| random_document(&mut random))
            .collect();
        let source = MemoryFacetSource::from_documents(
            documents
                .iter()
                .enumerate()
                .map(|(id, document)| (id as u32, document)),
        );
        let known: Vec<&str> = FIELDS
            .iter()
            .copied()
            .filter(|field| {
                documents
                    .iter()
                    .any(|document| document.get(field).is_some())
            })
            .collect();
        let text = random_filter(&mut random, 3);
        let filter = Filter::parse(&text)
            .expect("parse succeeds")
            .expect("the value exists");
        let selected: Vec<u32> = evaluate(&filter, &rules, &source)
            .expect("evaluate succeeds")
            .into_iter()
            .collect();
        let expected: Vec<u32> = documents
            .iter()
            .enumerate()
            .filter(|(_, document)| model(document, filter.expression(), &known))
            .map(|(id, _)| id as u32)
            .collect();
        assert_eq!(
            selected, expected,
            "case {case} seed {seed} filter {text:?} documents {documents:?}"
        );
    }
}
