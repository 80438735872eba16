//! Property test: after random replace/delete/clear sequences, every generated filter evaluated
//! through the shard's persisted facet indexes equals the in-memory reference source built from
//! a model of the documents. Seeds are printed; `SHARD_MODEL_CASES` raises the case count.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};
use shards::filter::{Filter, FilterableRules, MemoryFacetSource, evaluate};
use shards::shard::{Operation, Shard};
use storage_engine::{Options, SyncMode};

const CASES_DEFAULT: u64 = 6;
const OPERATIONS_PER_CASE: u64 = 120;
const FILTERS_PER_CHECK: u64 = 40;

struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const COLORS: [&str; 5] = ["Red", "red ", "blue", "Green", "ÉCRU"];

fn random_value(random: &mut Random) -> Value {
    match random.below(9) {
        0 => Value::Null,
        1 => json!(""),
        2 => json!([]),
        3 => json!(random.below(6)),
        4 => json!(random.below(6) as f64 - 2.5),
        5 => json!([random.pick(&COLORS), random.below(4)]),
        6 => json!(random.pick(&COLORS)),
        7 => json!(random.below(2) == 0),
        _ => json!({"x": random.below(5), "y": random.pick(&COLORS)}),
    }
}

fn random_document(random: &mut Random) -> Map<String, Value> {
    let mut document = Map::new();
    for field in ["color", "size", "tags", "nested", "other"] {
        if random.below(4) != 0 {
            document.insert(field.to_owned(), random_value(random));
        }
    }
    if random.below(3) == 0 {
        let latitude = random.below(20) as f64 - 10.0;
        let longitude = random.below(20) as f64 - 10.0;
        document.insert(
            "_geo".to_owned(),
            json!({"lat": latitude, "lng": longitude}),
        );
    }
    document
}

fn random_condition(random: &mut Random) -> String {
    let field = random.pick(&[
        "color", "size", "tags", "nested", "nested.x", "nested.y", "unknown",
    ]);
    let number = random.below(6) as f64 - 2.0;
    let color = random.pick(&["red", "RED", "blue", "green", "écru", "true", "false"]);
    match random.below(12) {
        0 => format!("{field} = {color}"),
        1 => format!("{field} != {color}"),
        2 => format!("{field} > {number}"),
        3 => format!("{field} <= {number}"),
        4 => format!("{field} {number} TO {}", number + 2.0),
        5 => format!("{field} EXISTS"),
        6 => format!("{field} IS NULL"),
        7 => format!("{field} IS EMPTY"),
        8 => format!("{field} IN [{color}, {number}]"),
        9 => format!(
            "{field} STARTS WITH {}",
            color.chars().take(2).collect::<String>()
        ),
        10 => format!("_geoRadius(0, 0, {})", random.below(4) * 300_000),
        _ => format!("NOT {field} = {number}"),
    }
}

fn random_filter(random: &mut Random) -> String {
    match random.below(4) {
        0 => format!(
            "{} AND {}",
            random_condition(random),
            random_condition(random)
        ),
        1 => format!(
            "({}) OR {}",
            random_condition(random),
            random_condition(random)
        ),
        _ => random_condition(random),
    }
}

fn collect_paths(value: &Value, base: &str, paths: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                let path = if base.is_empty() {
                    key.clone()
                } else {
                    format!("{base}.{key}")
                };
                paths.insert(path.clone());
                collect_paths(inner, &path, paths);
            }
        }
        Value::Array(elements) => {
            for element in elements {
                collect_paths(element, base, paths);
            }
        }
        _ => {}
    }
}

fn run_case(seed: u64) {
    println!("shard_model seed {seed}");
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let options = Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    };
    let shard = Shard::open(&directory.path().join("shard.pages"), options).expect("open succeeds");
    let setting = json!(["color", "size", "tags", "nested", "_geo"]);
    shard
        .set_filterable_fields(&setting)
        .expect("set_filterable_fields succeeds");
    let rules = FilterableRules::from_setting(&setting).expect("from_setting succeeds");
    let mut random = Random(seed | 1);
    let mut model: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut seen_paths = BTreeSet::new();
    let mut batch_uid = 0;
    for step in 0..OPERATIONS_PER_CASE {
        let mut operations = Vec::new();
        for _ in 0..1 + random.below(4) {
            let external_id = format!("d{}", random.below(25));
            match random.below(10) {
                0..=5 => {
                    let document = random_document(&mut random);
                    collect_paths(&Value::Object(document.clone()), "", &mut seen_paths);
                    model.insert(external_id.clone(), document.clone());
                    operations.push(Operation::Replace {
                        external_id,
                        document,
                    });
                }
                6..=8 => {
                    model.remove(&external_id);
                    operations.push(Operation::Delete { external_id });
                }
                _ if random.below(8) == 0 => {
                    model.clear();
                    operations.push(Operation::DeleteAll);
                }
                _ => {}
            }
        }
        batch_uid += 1;
        shard.apply(batch_uid, operations).expect("apply succeeds");
        if step == OPERATIONS_PER_CASE / 2 {
            // Change the setting mid-way and back: the rebuild must equal incremental indexing.
            shard
                .set_filterable_fields(&json!(["color"]))
                .expect("set_filterable_fields succeeds");
            shard
                .set_filterable_fields(&setting)
                .expect("set_filterable_fields succeeds");
        }
        check(&shard, &rules, &model, &seen_paths, &mut random, seed, step);
    }
}

fn check(
    shard: &Shard,
    rules: &FilterableRules,
    model: &BTreeMap<String, Map<String, Value>>,
    seen_paths: &BTreeSet<String>,
    random: &mut Random,
    seed: u64,
    step: u64,
) {
    let snapshot = shard.read().expect("read succeeds");
    assert_eq!(
        snapshot.count(),
        model.len() as u64,
        "seed {seed} step {step}"
    );
    let stored_fields: BTreeSet<String> = snapshot
        .fields()
        .expect("fields succeeds")
        .into_iter()
        .collect();
    assert_eq!(&stored_fields, seen_paths, "seed {seed} step {step}");
    let mut documents = Vec::new();
    for (external_id, document) in model {
        let id = snapshot
            .internal_id(external_id)
            .expect("internal_id succeeds")
            .expect("model document is stored");
        assert_eq!(
            snapshot
                .document_by_id(id, None)
                .expect("document_by_id succeeds")
                .as_ref(),
            Some(document)
        );
        documents.push((id, Value::Object(document.clone())));
    }
    let mut memory = MemoryFacetSource::from_documents(documents.iter().map(|(id, d)| (*id, d)));
    for path in seen_paths {
        memory.add_known_field(path);
    }
    let source = snapshot.facet_source();
    for _ in 0..FILTERS_PER_CHECK {
        let text = random_filter(random);
        let filter = Filter::parse(&text)
            .expect("parse succeeds")
            .expect("not blank");
        let expected = evaluate(&filter, rules, &memory);
        let actual = evaluate(&filter, rules, &source);
        assert!(source.take_error().is_none());
        assert_eq!(actual, expected, "seed {seed} step {step} filter {text}");
    }
}

#[test]
fn persisted_facets_answer_every_filter_like_the_in_memory_model() {
    let cases = std::env::var("SHARD_MODEL_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(CASES_DEFAULT);
    for case in 0..cases {
        run_case(0x5eed_0000 + case * 7919);
    }
}
