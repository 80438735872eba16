//! Shard behaviour: batches survive reopening, replay is a no-op, an uncommitted batch changes
//! nothing, deletions clear every index, ids are allocated deterministically, `fields`
//! selection, listing with filter/offset/limit/sort, and statistics.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::{Map, Value, json};
use shards::filter::{Filter, evaluate};
use shards::shard::{ListQuery, Operation, Shard, SortRule};
use storage_engine::{Options, SyncMode};

fn options() -> Options {
    Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("test documents are objects"),
    }
}

fn replace(id: &str, document: Value) -> Operation {
    Operation::Replace {
        external_id: id.to_owned(),
        document: object(document),
    }
}

fn open(path: &Path) -> Shard {
    Shard::open(&path.join("shard.pages"), options()).unwrap()
}

fn filtered(shard: &Shard, text: &str) -> Vec<u32> {
    let snapshot = shard.read().unwrap();
    let rules = snapshot.settings().filterable_rules().clone();
    let filter = Filter::parse(text).unwrap().unwrap();
    let source = snapshot.facet_source();
    let result = evaluate(&filter, &rules, &source).unwrap();
    assert!(source.take_error().is_none());
    result.into_iter().collect()
}

#[test]
fn committed_batches_survive_reopen_and_replay_is_a_no_op() {
    let directory = tempfile::tempdir().unwrap();
    {
        let shard = open(directory.path());
        shard.set_filterable_fields(&json!(["year"])).unwrap();
        let outcome = shard
            .apply(
                7,
                vec![
                    replace("a", json!({"id": "a", "year": 2020})),
                    replace("b", json!({"id": "b", "year": 2021})),
                ],
            )
            .unwrap();
        assert_eq!(outcome.replaced, 2);
    }
    let shard = open(directory.path());
    let snapshot = shard.read().unwrap();
    assert_eq!(snapshot.applied_batch(), Some(7));
    assert_eq!(snapshot.count(), 2);
    drop(snapshot);
    let replay = shard.apply(7, vec![Operation::DeleteAll]).unwrap();
    assert!(replay.already_applied);
    let older = shard
        .apply(
            3,
            vec![Operation::Delete {
                external_id: "a".into(),
            }],
        )
        .unwrap();
    assert!(older.already_applied);
    assert_eq!(shard.read().unwrap().count(), 2);
    assert_eq!(filtered(&shard, "year = 2020"), vec![0]);
}

#[test]
fn dropping_a_prepared_batch_changes_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let shard = open(directory.path());
    shard.set_filterable_fields(&json!(["year"])).unwrap();
    shard
        .apply(1, vec![replace("a", json!({"year": 1}))])
        .unwrap();
    let before = shard.stats().unwrap();
    {
        let mut prepared = shard.prepare(2).unwrap();
        prepared
            .apply_chunk(vec![replace("b", json!({"year": 2}))])
            .unwrap();
        prepared
            .apply_chunk(vec![Operation::Delete {
                external_id: "a".into(),
            }])
            .unwrap();
    }
    let snapshot = shard.read().unwrap();
    assert_eq!(snapshot.applied_batch(), Some(1));
    assert_eq!(snapshot.count(), 1);
    assert!(snapshot.internal_id("b").unwrap().is_none());
    drop(snapshot);
    assert_eq!(filtered(&shard, "year EXISTS"), vec![0]);
    assert_eq!(
        shard.stats().unwrap().number_of_documents,
        before.number_of_documents
    );
    drop(shard);
    let reopened = open(directory.path());
    assert_eq!(reopened.read().unwrap().applied_batch(), Some(1));
}

#[test]
fn chunks_of_one_batch_commit_together() {
    let directory = tempfile::tempdir().unwrap();
    let shard = open(directory.path());
    shard.set_filterable_fields(&json!(["n"])).unwrap();
    let mut prepared = shard.prepare(1).unwrap();
    prepared
        .apply_chunk(vec![
            replace("a", json!({"n": 1})),
            replace("b", json!({"n": 2})),
        ])
        .unwrap();
    prepared
        .apply_chunk(vec![
            replace("a", json!({"n": 3})),
            Operation::Delete {
                external_id: "b".into(),
            },
        ])
        .unwrap();
    assert_eq!(shard.read().unwrap().count(), 0);
    let outcome = prepared.commit().unwrap();
    assert_eq!((outcome.replaced, outcome.deleted), (3, 1));
    assert_eq!(filtered(&shard, "n = 3"), vec![0]);
    assert!(filtered(&shard, "n < 3").is_empty());
}

#[test]
fn deletions_clear_every_index_and_free_ids_are_reused_smallest_first() {
    let directory = tempfile::tempdir().unwrap();
    let shard = open(directory.path());
    shard
        .set_filterable_fields(&json!(["tag", "_geo"]))
        .unwrap();
    shard
        .apply(
            1,
            vec![
                replace("a", json!({"tag": "X", "_geo": {"lat": 1, "lng": 2}})),
                replace("b", json!({"tag": null})),
                replace("c", json!({"tag": ""})),
            ],
        )
        .unwrap();
    assert_eq!(filtered(&shard, "tag = x"), vec![0]);
    assert_eq!(filtered(&shard, "_geoRadius(1, 2, 10)"), vec![0]);
    shard
        .apply(
            2,
            vec![
                Operation::Delete {
                    external_id: "a".into(),
                },
                Operation::Delete {
                    external_id: "b".into(),
                },
            ],
        )
        .unwrap();
    for text in [
        "tag = x",
        "tag IS NULL",
        "_geoRadius(1, 2, 10)",
        "tag EXISTS AND tag IS NOT EMPTY",
    ] {
        assert!(filtered(&shard, text).is_empty(), "{text}");
    }
    assert_eq!(filtered(&shard, "tag IS EMPTY"), vec![2]);
    let stats = shard.stats().unwrap();
    assert_eq!(stats.number_of_documents, 1);
    assert_eq!(stats.field_distribution.get("tag"), Some(&1));
    assert_eq!(stats.field_distribution.get("_geo"), None);
    shard
        .apply(
            3,
            vec![
                replace("d", json!({"tag": "y"})),
                replace("e", json!({"tag": "z"})),
                replace("f", json!({})),
            ],
        )
        .unwrap();
    let snapshot = shard.read().unwrap();
    let ids: Vec<_> = ["d", "e", "f"]
        .iter()
        .map(|id| snapshot.internal_id(id).unwrap().unwrap())
        .collect();
    assert_eq!(ids, vec![0, 1, 3]);
    drop(snapshot);
    shard
        .apply(
            4,
            vec![Operation::DeleteAll, replace("g", json!({"tag": "w"}))],
        )
        .unwrap();
    let snapshot = shard.read().unwrap();
    assert_eq!(snapshot.count(), 1);
    assert_eq!(snapshot.internal_id("g").unwrap(), Some(0));
    assert!(
        snapshot.fields().unwrap().contains(&"_geo".to_owned()),
        "the fields map only grows"
    );
    drop(snapshot);
    assert_eq!(filtered(&shard, "tag = w"), vec![0]);
    assert!(filtered(&shard, "tag IS EMPTY").is_empty());
}

#[test]
fn documents_keep_their_key_order_and_fields_selection_works() {
    let directory = tempfile::tempdir().unwrap();
    let shard = open(directory.path());
    shard
        .apply(
            1,
            vec![replace(
                "a",
                json!({"zeta": 1, "alpha": {"inner": 2, "other": 3}, "mid": [1]}),
            )],
        )
        .unwrap();
    let snapshot = shard.read().unwrap();
    let id = snapshot.internal_id("a").unwrap().unwrap();
    let json = String::from_utf8(snapshot.document_json(id).unwrap().unwrap()).unwrap();
    assert_eq!(
        json,
        r#"{"zeta":1,"alpha":{"inner":2,"other":3},"mid":[1]}"#
    );
    let fields = vec!["mid".to_owned(), "alpha.other".to_owned()];
    let selected = snapshot.document("a", Some(&fields)).unwrap().unwrap();
    assert_eq!(
        Value::Object(selected),
        json!({"alpha": {"other": 3}, "mid": [1]})
    );
    assert!(snapshot.document("missing", None).unwrap().is_none());
}

#[test]
fn listing_filters_pages_and_sorts_numbers_before_strings_missing_last() {
    let directory = tempfile::tempdir().unwrap();
    let shard = open(directory.path());
    shard
        .set_facet_settings(&json!(["group"]), &["rank".to_owned(), "group".to_owned()])
        .unwrap();
    shard
        .apply(
            1,
            vec![
                replace("a", json!({"rank": 5, "group": 1})),
                replace("b", json!({"rank": "x", "group": 1})),
                replace("c", json!({"rank": -1, "group": 2})),
                replace("d", json!({"group": 2})),
                replace("e", json!({"rank": 5, "group": 2})),
            ],
        )
        .unwrap();
    let snapshot = shard.read().unwrap();
    let list = |query: ListQuery| -> (Vec<u32>, u64) {
        let (documents, total) = snapshot.documents(&query, None).unwrap();
        (documents.into_iter().map(|(id, _)| id).collect(), total)
    };
    assert_eq!(
        list(ListQuery {
            offset: 1,
            limit: 2,
            ..ListQuery::default()
        }),
        (vec![1, 2], 5)
    );
    let ascending = vec![SortRule {
        field: "rank".into(),
        ascending: true,
    }];
    assert_eq!(
        list(ListQuery {
            limit: 10,
            sort: ascending.clone(),
            ..ListQuery::default()
        }),
        (vec![2, 0, 4, 1, 3], 5)
    );
    let descending = vec![
        SortRule {
            field: "rank".into(),
            ascending: false,
        },
        SortRule {
            field: "group".into(),
            ascending: false,
        },
    ];
    assert_eq!(
        list(ListQuery {
            limit: 3,
            sort: descending,
            ..ListQuery::default()
        }),
        (vec![4, 0, 2], 5)
    );
    let group_two = filtered(&shard, "group = 2").into_iter().collect();
    assert_eq!(
        list(ListQuery {
            offset: 1,
            limit: 10,
            filter: Some(group_two),
            sort: ascending
        }),
        (vec![4, 3], 3)
    );
}

#[test]
fn stats_count_documents_bytes_and_top_level_fields() {
    let directory = tempfile::tempdir().unwrap();
    let shard = open(directory.path());
    shard
        .apply(
            1,
            vec![
                replace("a", json!({"id": "a", "n": {"x": 1}})),
                replace("b", json!({"id": "b"})),
            ],
        )
        .unwrap();
    let stats = shard.stats().unwrap();
    assert_eq!(stats.number_of_documents, 2);
    assert!(stats.raw_document_bytes > 0);
    assert_eq!(stats.average_document_bytes, stats.raw_document_bytes / 2);
    assert!(stats.file_bytes >= stats.raw_document_bytes);
    assert_eq!(
        stats.field_distribution.into_iter().collect::<Vec<_>>(),
        vec![("id".into(), 2), ("n".into(), 1)]
    );
    shard
        .apply(2, vec![replace("a", json!({"id": "a"}))])
        .unwrap();
    let after = shard.stats().unwrap();
    assert!(after.raw_document_bytes < stats.raw_document_bytes);
    assert_eq!(after.field_distribution.get("n"), None);
}
