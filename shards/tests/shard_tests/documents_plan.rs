//! Flattening of nested documents, field distribution, and folding a batch into a write plan.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use shards::documents::Document;
use shards::documents::flatten::{FieldDistribution, count_document, flatten, uncount_document};
use shards::documents::operation::{
    BatchPlan, MissingDocumentPolicy, Outcome, PlannedDocument, merge_top_level,
};
use shards::rendezvous::rendezvous_winner;

fn document(value: Value) -> Document {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn flat_documents_flatten_to_themselves() {
    let flat = json!({"id": "287947", "title": "Shazam!", "genres": ["Action", "Comedy"]});
    assert_eq!(Value::Object(flatten(&document(flat.clone()))), flat);
}

#[test]
fn nested_objects_get_dotted_paths_and_keep_intermediates() {
    let flattened = flatten(&document(json!({"a": {"b": 1, "c": [{"d": 2}, {"d": 3}]}})));
    assert_eq!(
        Value::Object(flattened.clone()),
        json!({"a.b": 1, "a.c.d": [2, 3], "a": {"b": 1, "c": [{"d": 2}, {"d": 3}]}, "a.c": [{"d": 2}, {"d": 3}]})
    );
    let paths: Vec<&String> = flattened.keys().collect();
    assert_eq!(paths, ["a.b", "a.c.d", "a", "a.c"]);
}

#[test]
fn scalars_from_arrays_are_always_in_arrays_and_nested_arrays_flatten() {
    let flattened = flatten(&document(
        json!({"a": [1], "b": [[1, [2]], {"c": 3}], "e": []}),
    ));
    assert_eq!(flattened["a"], json!([1]));
    assert_eq!(flattened["b"], json!([1, 2]));
    assert_eq!(
        flattened["b.c"],
        json!(3),
        "a leaf of an object in an array stays a scalar"
    );
    assert_eq!(flattened["e"], json!([]));
    let flattened = flatten(&document(
        json!({"a": [42, {"b": "c"}, {"b": "d"}, [], [{}]]}),
    ));
    assert_eq!(
        Value::Object(flattened),
        json!({"a": [42], "a.b": ["c", "d"]})
    );
}

#[test]
fn colliding_paths_collect_values_into_an_array() {
    let flattened = flatten(&document(json!({"a": {"b": 1}, "a.b": 2})));
    assert_eq!(flattened["a.b"], json!([1, 2]));
    let flattened = flatten(&document(json!({"a": [{"b": [1]}, {"b": 2}]})));
    assert_eq!(flattened["a.b"], json!([1, 2]));
}

#[test]
fn field_distribution_counts_top_level_fields_except_vectors() {
    let mut distribution = FieldDistribution::new();
    let first = document(json!({"id": 1, "a": {"b": 1}, "_vectors": {}, "_geo": null}));
    let second = document(json!({"id": 2, "c": 1}));
    count_document(&mut distribution, &first);
    count_document(&mut distribution, &second);
    let expected: FieldDistribution = [("_geo", 1), ("a", 1), ("c", 1), ("id", 2)]
        .map(|(k, v)| (k.to_string(), v))
        .into();
    assert_eq!(distribution, expected);
    uncount_document(&mut distribution, &first);
    let expected: FieldDistribution = [("c", 1), ("id", 1)]
        .map(|(k, v)| (k.to_string(), v))
        .into();
    assert_eq!(distribution, expected);
}

const CREATE: MissingDocumentPolicy = MissingDocumentPolicy::Create;
const SKIP: MissingDocumentPolicy = MissingDocumentPolicy::Skip;

fn written(onto_stored: bool, value: Value) -> Outcome {
    Outcome::Written {
        onto_stored,
        document: document(value),
    }
}

#[test]
fn later_replacement_wins() {
    let mut plan = BatchPlan::new();
    plan.replace("1".into(), document(json!({"id": 1, "a": 1})), CREATE);
    plan.replace("1".into(), document(json!({"id": 1, "b": 2})), CREATE);
    assert_eq!(
        plan.documents["1"],
        PlannedDocument::Unconditional(written(false, json!({"id": 1, "b": 2})))
    );
}

#[test]
fn update_merges_top_level_fields_onto_earlier_replacement() {
    let mut plan = BatchPlan::new();
    plan.replace(
        "1".into(),
        document(json!({"id": 1, "a": {"x": 1}, "b": 1})),
        CREATE,
    );
    plan.update(
        "1".into(),
        document(json!({"id": 1, "a": {"y": 2}, "c": 3})),
        CREATE,
    );
    assert_eq!(
        plan.documents["1"],
        PlannedDocument::Unconditional(written(
            false,
            json!({"id": 1, "a": {"y": 2}, "b": 1, "c": 3})
        ))
    );
}

#[test]
fn updates_without_tombstone_merge_onto_the_stored_document() {
    let mut plan = BatchPlan::new();
    plan.update("1".into(), document(json!({"id": 1, "a": 1})), CREATE);
    plan.update("1".into(), document(json!({"id": 1, "b": 2})), CREATE);
    let expected = written(true, json!({"id": 1, "a": 1, "b": 2}));
    assert_eq!(
        plan.documents["1"],
        PlannedDocument::Unconditional(expected)
    );
}

#[test]
fn update_after_deletion_starts_from_scratch() {
    let mut plan = BatchPlan::new();
    plan.update("1".into(), document(json!({"id": 1, "a": 1})), CREATE);
    plan.delete("1".into());
    plan.update("1".into(), document(json!({"id": 1, "b": 2})), CREATE);
    assert_eq!(
        plan.documents["1"],
        PlannedDocument::Unconditional(written(false, json!({"id": 1, "b": 2})))
    );
}

#[test]
fn skip_creation_depends_on_whether_the_document_is_stored() {
    let mut plan = BatchPlan::new();
    plan.update("1".into(), document(json!({"id": 1, "a": 1})), SKIP);
    let planned = &plan.documents["1"];
    assert_eq!(
        planned.outcome(true),
        &written(true, json!({"id": 1, "a": 1}))
    );
    assert_eq!(planned.outcome(false), &Outcome::Untouched);

    plan.update("1".into(), document(json!({"id": 1, "b": 2})), CREATE);
    let planned = &plan.documents["1"];
    assert_eq!(
        planned.outcome(true),
        &written(true, json!({"id": 1, "a": 1, "b": 2}))
    );
    assert_eq!(
        planned.outcome(false),
        &written(false, json!({"id": 1, "b": 2}))
    );

    let mut plan = BatchPlan::new();
    plan.delete("2".into());
    plan.replace("2".into(), document(json!({"id": 2})), SKIP);
    assert_eq!(
        plan.documents["2"],
        PlannedDocument::Unconditional(Outcome::Deleted)
    );
}

#[test]
fn delete_all_deletes_planned_and_stored_documents_then_later_writes_apply() {
    let mut plan = BatchPlan::new();
    plan.replace("1".into(), document(json!({"id": 1})), CREATE);
    plan.delete_all();
    plan.update("2".into(), document(json!({"id": 2})), CREATE);
    plan.update("3".into(), document(json!({"id": 3})), SKIP);
    assert!(plan.delete_all_stored);
    assert_eq!(
        plan.documents["1"],
        PlannedDocument::Unconditional(Outcome::Deleted)
    );
    assert_eq!(
        plan.documents["2"],
        PlannedDocument::Unconditional(written(false, json!({"id": 2})))
    );
    assert_eq!(
        plan.documents["3"],
        PlannedDocument::Unconditional(Outcome::Deleted)
    );
}

#[test]
fn delete_by_filter_deletes_matching_stored_and_planned_documents() {
    let mut plan = BatchPlan::new();
    plan.replace(
        "1".into(),
        document(json!({"id": 1, "color": "red"})),
        CREATE,
    );
    plan.replace(
        "2".into(),
        document(json!({"id": 2, "color": "blue"})),
        CREATE,
    );
    plan.delete_by_filter(["9".to_string(), "2".to_string()], |document| {
        document["color"] == "red"
    });
    assert_eq!(
        plan.documents["1"],
        PlannedDocument::Unconditional(Outcome::Deleted)
    );
    assert_eq!(
        plan.documents["2"],
        PlannedDocument::Unconditional(written(false, json!({"id": 2, "color": "blue"}))),
        "the stored version matched, but the batch replaced it with one that does not"
    );
    assert_eq!(
        plan.documents["9"],
        PlannedDocument::Unconditional(Outcome::Deleted)
    );
}

#[test]
fn merge_keeps_positions_of_existing_fields() {
    let mut base = document(json!({"a": 1, "b": 2}));
    merge_top_level(&mut base, document(json!({"c": 3, "a": 4})));
    let keys: Vec<&String> = base.keys().collect();
    assert_eq!(keys, ["a", "b", "c"]);
    assert_eq!(base["a"], 4);
}

#[test]
fn folding_is_deterministic_whatever_the_interleaving_of_other_ids() {
    let seed = 0x5eed_u64;
    println!("seed {seed}");
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let operations: Vec<(u64, u64, u64)> = (0..400)
        .map(|_| (next() % 8, next() % 4, next() % 5))
        .collect();
    let build = |reverse_other_ids: bool| {
        let mut per_id: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = Default::default();
        for (id, kind, value) in &operations {
            per_id.entry(*id).or_default().push((*kind, *value));
        }
        let mut plan = BatchPlan::new();
        let ids: Vec<u64> = if reverse_other_ids {
            per_id.keys().rev().copied().collect()
        } else {
            per_id.keys().copied().collect()
        };
        for id in ids {
            for (kind, value) in &per_id[&id] {
                let body = document(json!({"id": id, format!("f{value}"): value}));
                match kind {
                    0 => {
                        plan.replace(id.to_string(), body, CREATE);
                    }
                    1 => {
                        plan.update(id.to_string(), body, CREATE);
                    }
                    2 => {
                        plan.update(id.to_string(), body, SKIP);
                    }
                    _ => plan.delete(id.to_string()),
                }
            }
        }
        plan
    };
    assert_eq!(build(false), build(true));
}

#[test]
fn additions_answer_whether_the_plan_meets_their_id_for_the_first_time() {
    let mut plan = BatchPlan::new();
    assert!(plan.replace("a".to_string(), document(json!({"id": "a"})), CREATE));
    assert!(!plan.update(
        "a".to_string(),
        document(json!({"id": "a", "x": 1})),
        CREATE
    ));
    assert!(plan.update("b".to_string(), document(json!({"id": "b"})), SKIP));
    assert!(!plan.replace("b".to_string(), document(json!({"id": "b"})), CREATE));
    plan.delete("c".to_string());
    // A deletion planned the id first: the addition is not the plan's first sight of it.
    assert!(!plan.replace("c".to_string(), document(json!({"id": "c"})), CREATE));
    plan.delete("a".to_string());
    assert!(!plan.replace("a".to_string(), document(json!({"id": "a"})), CREATE));
    assert_eq!(plan.documents.len(), 3);
}

#[test]
fn split_by_shard_routes_each_id_to_its_rendezvous_winner() {
    let mut plan = BatchPlan::new();
    for id in 0..50 {
        plan.replace(id.to_string(), document(json!({"id": id})), CREATE);
    }
    let shards = ["shard-a", "shard-b", "shard-c"];
    let split = plan.split_by_shard(&shards);
    assert_eq!(split.iter().map(Vec::len).sum::<usize>(), 50);
    for (position, documents) in split.iter().enumerate() {
        for (id, _) in documents {
            assert_eq!(rendezvous_winner(shards, id), Some(shards[position]));
        }
    }
    assert!(split.iter().all(|documents| !documents.is_empty()));
}

#[test]
fn only_updates_and_conditional_plans_depend_on_the_stored_document() {
    let mut plan: BatchPlan = BatchPlan::new();
    let body = || document(json!({"title": "x"}));
    plan.replace("replaced".into(), body(), MissingDocumentPolicy::Create);
    plan.update("updated".into(), body(), MissingDocumentPolicy::Create);
    plan.replace("skipped".into(), body(), MissingDocumentPolicy::Skip);
    plan.delete("deleted".into());
    plan.replace(
        "deleted later".into(),
        body(),
        MissingDocumentPolicy::Create,
    );
    plan.delete("deleted later".into());
    let depends = |id: &str| plan.documents[id].depends_on_stored();
    assert!(!depends("replaced"), "{:?}", plan.documents["replaced"]);
    assert!(depends("updated"), "{:?}", plan.documents["updated"]);
    assert!(depends("skipped"), "{:?}", plan.documents["skipped"]);
    assert!(!depends("deleted"));
    assert!(!depends("deleted later"));
}
