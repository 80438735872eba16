//! Shard behaviour: batches survive reopening, replay is a no-op, an uncommitted batch changes
//! nothing, deletions clear every index, ids are allocated deterministically, `fields`
//! selection, listing with filter/offset/limit/sort, and statistics.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

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
    Shard::open(&path.join("shard.pages"), options()).expect("open succeeds")
}

fn filtered(shard: &Shard, text: &str) -> Vec<u32> {
    let snapshot = shard.read().expect("read succeeds");
    let rules = snapshot.settings().filterable_rules().clone();
    let filter = Filter::parse(text)
        .expect("parse succeeds")
        .expect("the value exists");
    let source = snapshot.facet_source();
    let result = evaluate(&filter, &rules, &source).expect("evaluate succeeds");
    assert!(source.take_error().is_none());
    result.into_iter().collect()
}

#[test]
fn committed_batches_survive_reopen_and_replay_is_a_no_op() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    {
        let shard = open(directory.path());
        shard
            .set_filterable_fields(&json!(["year"]))
            .expect("set_filterable_fields succeeds");
        let outcome = shard
            .apply(
                7,
                vec![
                    replace("a", json!({"id": "a", "year": 2020})),
                    replace("b", json!({"id": "b", "year": 2021})),
                ],
            )
            .expect("apply succeeds");
        assert_eq!(outcome.replaced, 2);
    }
    let shard = open(directory.path());
    let snapshot = shard.read().expect("read succeeds");
    assert_eq!(snapshot.applied_batch(), Some(7));
    assert_eq!(snapshot.count(), 2);
    drop(snapshot);
    let replay = shard
        .apply(7, vec![Operation::DeleteAll])
        .expect("apply succeeds");
    assert!(replay.already_applied);
    let older = shard
        .apply(
            3,
            vec![Operation::Delete {
                external_id: "a".into(),
            }],
        )
        .expect("apply succeeds");
    assert!(older.already_applied);
    assert_eq!(shard.read().expect("read succeeds").count(), 2);
    assert_eq!(filtered(&shard, "year = 2020"), vec![0]);
}

#[test]
fn dropping_a_prepared_batch_changes_nothing() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .set_filterable_fields(&json!(["year"]))
        .expect("set_filterable_fields succeeds");
    shard
        .apply(1, vec![replace("a", json!({"year": 1}))])
        .expect("apply succeeds");
    let before = shard.stats().expect("stats succeeds");
    {
        let mut prepared = shard.prepare(2).expect("prepare succeeds");
        prepared
            .apply_chunk(vec![replace("b", json!({"year": 2}))])
            .expect("apply_chunk succeeds");
        prepared
            .apply_chunk(vec![Operation::Delete {
                external_id: "a".into(),
            }])
            .expect("apply_chunk succeeds");
    }
    let snapshot = shard.read().expect("read succeeds");
    assert_eq!(snapshot.applied_batch(), Some(1));
    assert_eq!(snapshot.count(), 1);
    assert!(
        snapshot
            .internal_id("b")
            .expect("internal_id succeeds")
            .is_none()
    );
    drop(snapshot);
    assert_eq!(filtered(&shard, "year EXISTS"), vec![0]);
    assert_eq!(
        shard.stats().expect("stats succeeds").number_of_documents,
        before.number_of_documents
    );
    drop(shard);
    let reopened = open(directory.path());
    assert_eq!(
        reopened.read().expect("read succeeds").applied_batch(),
        Some(1)
    );
}

#[test]
fn chunks_of_one_batch_commit_together() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .set_filterable_fields(&json!(["n"]))
        .expect("set_filterable_fields succeeds");
    let mut prepared = shard.prepare(1).expect("prepare succeeds");
    prepared
        .apply_chunk(vec![
            replace("a", json!({"n": 1})),
            replace("b", json!({"n": 2})),
        ])
        .expect("apply_chunk succeeds");
    prepared
        .apply_chunk(vec![
            replace("a", json!({"n": 3})),
            Operation::Delete {
                external_id: "b".into(),
            },
        ])
        .expect("apply_chunk succeeds");
    assert_eq!(shard.read().expect("read succeeds").count(), 0);
    let outcome = prepared.commit().expect("commit succeeds");
    assert_eq!((outcome.replaced, outcome.deleted), (3, 1));
    assert_eq!(filtered(&shard, "n = 3"), vec![0]);
    assert!(filtered(&shard, "n < 3").is_empty());
}

#[test]
fn deletions_clear_every_index_and_free_ids_are_reused_smallest_first() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .set_filterable_fields(&json!(["tag", "_geo"]))
        .expect("set_filterable_fields succeeds");
    shard
        .apply(
            1,
            vec![
                replace("a", json!({"tag": "X", "_geo": {"lat": 1, "lng": 2}})),
                replace("b", json!({"tag": null})),
                replace("c", json!({"tag": ""})),
            ],
        )
        .expect("apply succeeds");
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
        .expect("apply succeeds");
    for text in [
        "tag = x",
        "tag IS NULL",
        "_geoRadius(1, 2, 10)",
        "tag EXISTS AND tag IS NOT EMPTY",
    ] {
        assert!(filtered(&shard, text).is_empty(), "{text}");
    }
    assert_eq!(filtered(&shard, "tag IS EMPTY"), vec![2]);
    let stats = shard.stats().expect("stats succeeds");
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
        .expect("apply succeeds");
    let snapshot = shard.read().expect("read succeeds");
    let ids: Vec<_> = ["d", "e", "f"]
        .iter()
        .map(|id| {
            snapshot
                .internal_id(id)
                .expect("internal_id succeeds")
                .expect("the value exists")
        })
        .collect();
    assert_eq!(ids, vec![0, 1, 3]);
    drop(snapshot);
    shard
        .apply(
            4,
            vec![Operation::DeleteAll, replace("g", json!({"tag": "w"}))],
        )
        .expect("apply succeeds");
    let snapshot = shard.read().expect("read succeeds");
    assert_eq!(snapshot.count(), 1);
    assert_eq!(
        snapshot.internal_id("g").expect("internal_id succeeds"),
        Some(0)
    );
    assert!(
        snapshot
            .fields()
            .expect("fields succeeds")
            .contains(&"_geo".to_owned()),
        "the fields map only grows"
    );
    drop(snapshot);
    assert_eq!(filtered(&shard, "tag = w"), vec![0]);
    assert!(filtered(&shard, "tag IS EMPTY").is_empty());
}

#[test]
fn documents_keep_their_key_order_and_fields_selection_works() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .apply(
            1,
            vec![replace(
                "a",
                json!({"zeta": 1, "alpha": {"inner": 2, "other": 3}, "mid": [1]}),
            )],
        )
        .expect("apply succeeds");
    let snapshot = shard.read().expect("read succeeds");
    let id = snapshot
        .internal_id("a")
        .expect("internal_id succeeds")
        .expect("the value exists");
    let json = String::from_utf8(
        snapshot
            .document_json(id)
            .expect("document_json succeeds")
            .expect("the value exists"),
    )
    .expect("from_utf8 succeeds");
    assert_eq!(
        json,
        r#"{"zeta":1,"alpha":{"inner":2,"other":3},"mid":[1]}"#
    );
    let fields = vec!["mid".to_owned(), "alpha.other".to_owned()];
    let selected = snapshot
        .document("a", Some(&fields))
        .expect("document succeeds")
        .expect("the value exists");
    assert_eq!(
        Value::Object(selected),
        json!({"alpha": {"other": 3}, "mid": [1]})
    );
    assert!(
        snapshot
            .document("missing", None)
            .expect("document succeeds")
            .is_none()
    );
}

#[test]
fn listing_filters_pages_and_sorts_numbers_before_strings_missing_last() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .set_facet_settings(&json!(["group"]), &["rank".to_owned(), "group".to_owned()])
        .expect("set_facet_settings succeeds");
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
        .expect("apply succeeds");
    let snapshot = shard.read().expect("read succeeds");
    let list = |query: ListQuery| -> (Vec<u32>, u64) {
        let (documents, total) = snapshot
            .documents(&query, None)
            .expect("documents succeeds");
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
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .apply(
            1,
            vec![
                replace("a", json!({"id": "a", "n": {"x": 1}})),
                replace("b", json!({"id": "b"})),
            ],
        )
        .expect("apply succeeds");
    let stats = shard.stats().expect("stats succeeds");
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
        .expect("apply succeeds");
    let after = shard.stats().expect("stats succeeds");
    assert!(after.raw_document_bytes < stats.raw_document_bytes);
    assert_eq!(after.field_distribution.get("n"), None);
}

/// Documents a range filter must select for its union to be kept by the commit's view
/// (`range_unions::CACHED_DOCUMENTS_MIN`, with a margin).
const KEPT_RANGE_DOCUMENTS: u32 = 5_000;

#[test]
fn a_kept_range_union_answers_its_commit_only() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .set_filterable_fields(&json!(["n", "tag"]))
        .expect("set_filterable_fields succeeds");
    let documents = (0..KEPT_RANGE_DOCUMENTS)
        .map(|n| replace(&n.to_string(), json!({"n": n % 10, "tag": "common"})))
        .collect();
    shard.apply(1, documents).expect("apply succeeds");
    let everything: Vec<u32> = (0..KEPT_RANGE_DOCUMENTS).collect();
    // Twice on one commit: the second answer comes from the kept union, and is the same.
    for _ in 0..2 {
        assert_eq!(filtered(&shard, "n >= 0"), everything);
        assert_eq!(filtered(&shard, "tag = common"), everything);
        assert_eq!(filtered(&shard, "n > 4").len(), everything.len() / 2);
        assert_eq!(
            filtered(&shard, "n >= 0 AND NOT n > 4").len(),
            everything.len() / 2
        );
    }
    // A new commit sees its own documents: a new one in the range, one deleted from it.
    shard
        .apply(
            2,
            vec![
                replace("new", json!({"n": 7, "tag": "common"})),
                Operation::Delete {
                    external_id: "3".into(),
                },
            ],
        )
        .expect("apply succeeds");
    let after = filtered(&shard, "n >= 0");
    assert_eq!(after.len(), everything.len());
    assert!(!after.contains(&3));
    let added = shard
        .read()
        .expect("read succeeds")
        .internal_id("new")
        .expect("internal_id succeeds")
        .expect("the new document exists");
    assert!(after.contains(&added));
    assert_eq!(filtered(&shard, "tag = common"), after);
    assert_eq!(filtered(&shard, "n > 4").len(), everything.len() / 2 + 1);
}

/// The stored value of `field` of the document `external_id`, if it is stored.
fn stored_field(shard: &Shard, external_id: &str, field: &str) -> Option<Value> {
    let snapshot = shard.read().expect("read succeeds");
    let document = snapshot
        .document(external_id, None)
        .expect("the document reads")?;
    document.get(field).cloned()
}

#[test]
fn documents_created_under_assigned_ids_are_found_again_within_their_batch() {
    // Unbounded, the batch's new ids wait in memory until the commit; bounded to nothing,
    // every chunk's are written before the next chunk runs.
    for bound in [usize::MAX, 1] {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let shard = open(directory.path());
        shard.bound_pending_changes(bound);
        shard
            .set_filterable_fields(&json!(["n"]))
            .expect("set_filterable_fields succeeds");
        let mut prepared = shard.prepare(1).expect("prepare succeeds");
        prepared.assign_ids([
            ("a".to_owned(), 10),
            ("b".to_owned(), 11),
            ("c".to_owned(), 12),
        ]);
        prepared
            .apply_chunk(vec![
                replace("a", json!({"n": 1})),
                replace("b", json!({"n": 2})),
                replace("c", json!({"n": 3})),
            ])
            .expect("apply_chunk succeeds");
        prepared
            .apply_chunk(vec![
                replace("a", json!({"n": 4})),
                Operation::Delete {
                    external_id: "b".into(),
                },
            ])
            .expect("apply_chunk succeeds");
        let outcome = prepared.commit().expect("commit succeeds");
        assert_eq!((outcome.replaced, outcome.deleted), (4, 1), "bound {bound}");
        assert_eq!(shard.read().expect("read succeeds").count(), 2);
        assert_eq!(
            stored_field(&shard, "a", "n"),
            Some(json!(4)),
            "bound {bound}"
        );
        assert_eq!(stored_field(&shard, "b", "n"), None, "bound {bound}");
        assert_eq!(
            stored_field(&shard, "c", "n"),
            Some(json!(3)),
            "bound {bound}"
        );
        // The assigned internal ids are the documents' ids: `a` kept 10 when replaced.
        assert_eq!(filtered(&shard, "n >= 3"), vec![10, 12], "bound {bound}");

        // The next batch finds them in the tree.
        let outcome = shard
            .apply(
                2,
                vec![
                    replace("c", json!({"n": 5})),
                    Operation::Delete {
                        external_id: "a".into(),
                    },
                ],
            )
            .expect("apply succeeds");
        assert_eq!((outcome.replaced, outcome.deleted), (1, 1), "bound {bound}");
        assert_eq!(filtered(&shard, "n >= 0"), vec![12], "bound {bound}");
    }
}

#[test]
fn an_id_assigned_to_a_stored_document_fails_the_batch_and_changes_nothing() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    shard
        .set_filterable_fields(&json!(["n"]))
        .expect("set_filterable_fields succeeds");
    shard
        .apply(1, vec![replace("a", json!({"n": 1}))])
        .expect("apply succeeds");
    // A caller that wrongly believes `a` is new: the commit refuses to store it twice.
    let mut prepared = shard.prepare(2).expect("prepare succeeds");
    prepared.assign_ids([("a".to_owned(), 5)]);
    prepared
        .apply_chunk(vec![replace("a", json!({"n": 2}))])
        .expect("apply_chunk succeeds");
    assert!(prepared.commit().is_err());
    let snapshot = shard.read().expect("read succeeds");
    assert_eq!(snapshot.count(), 1);
    assert_eq!(snapshot.applied_batch(), Some(1));
    drop(snapshot);
    assert_eq!(stored_field(&shard, "a", "n"), Some(json!(1)));
    assert_eq!(filtered(&shard, "n >= 0"), vec![0]);
}

#[test]
fn stored_external_ids_answers_exactly_the_stored_ones_of_many() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    let stored: Vec<String> = (0..3000).map(|number| format!("doc-{number:05}")).collect();
    shard
        .apply(
            1,
            stored
                .iter()
                .map(|id| replace(id, json!({"n": id})))
                .collect(),
        )
        .expect("apply succeeds");
    // Every third stored id, interleaved with ids never stored, out of order and repeated.
    let mut asked: Vec<String> = Vec::new();
    for number in (0..3000).rev().step_by(3) {
        asked.push(format!("doc-{number:05}"));
        asked.push(format!("doc-{number:05}x"));
        asked.push(format!("absent-{number}"));
    }
    asked.push("doc-00003".to_string());
    asked.push("doc-00003".to_string());
    let snapshot = shard.read().expect("read succeeds");
    let mut expected: Vec<String> = asked
        .iter()
        .filter(|id| snapshot.internal_id(id).expect("lookup").is_some())
        .cloned()
        .collect();
    expected.sort();
    assert_eq!(
        expected.len(),
        1002,
        "1,000 stored ids, and another asked twice"
    );
    let answered = snapshot
        .stored_external_ids(asked)
        .expect("the lookups succeed");
    assert_eq!(answered, expected);
}

/// Letters from a linear congruential generator: text that compression cannot shrink much.
fn incompressible_text(length: usize) -> String {
    let mut state = 0x2545_f491_u64;
    (0..length)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            char::from(b'a' + u8::try_from((state >> 33) % 26).expect("below 26"))
        })
        .collect()
}

#[test]
fn store_sizes_count_every_tree_with_its_overflow_pages_and_the_free_pages() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(directory.path());
    let documents = (0..200)
        .map(|index| {
            replace(
                &index.to_string(),
                json!({"id": index, "text": format!("word{index} shared words")}),
            )
        })
        .collect();
    shard.apply(1, documents).expect("apply succeeds");
    let before = shard.store_sizes().expect("store_sizes succeeds");
    let file_bytes = shard.stats().expect("stats succeeds").file_bytes;
    for part in ["documents", "externalIds", shards::shard::FREE_PAGES_PART] {
        assert!(before.contains_key(part), "{part} in {before:?}");
    }
    assert!(before["documents"] > 0);
    assert_eq!(before[shards::shard::FREE_PAGES_PART], shard.unused_bytes());
    let page_bytes = storage_engine::PAGE_BYTES_DEFAULT as u64;
    assert!(
        before.values().all(|bytes| bytes % page_bytes == 0),
        "{before:?}"
    );
    assert!(
        before.values().sum::<u64>() <= file_bytes,
        "{before:?} in {file_bytes}"
    );

    // A document too large for a leaf goes to an overflow run, counted with its tree.
    let large = incompressible_text(200_000);
    shard
        .apply(
            2,
            vec![replace("large", json!({"id": "large", "blob": large}))],
        )
        .expect("apply succeeds");
    let after = shard.store_sizes().expect("store_sizes succeeds");
    assert!(
        after["documents"] >= before["documents"] + 100_000,
        "{} then {}",
        before["documents"],
        after["documents"]
    );
    let file_bytes = shard.stats().expect("stats succeeds").file_bytes;
    assert!(
        after.values().sum::<u64>() <= file_bytes,
        "{after:?} in {file_bytes}"
    );
}
