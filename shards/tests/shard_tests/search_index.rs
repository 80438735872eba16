//! The inverted index stays exact: after any sequence of additions, replacements, updates,
//! deletions and `DeleteAll`, and after text settings changes, its trees equal those of a
//! shard built from scratch with the same documents and settings. And scores are
//! shard-independent: a corpus split over two shards and merged by details ranks as one shard.
//!
//! The random corpora use a fixed seed (printed; `SEARCH_INDEX_SEED` replaces it,
//! `SEARCH_INDEX_CASES` sets the number of rounds).

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use serde_json::{Map, Value, json};
use shards::analysis::{RankingRule, TextSettings};
use shards::index::position_chunks::{ChunkDocuments, Occurrences, split_chunk_key};
use shards::search::{MatchingStrategy, SearchQuery, ShardHit, compare_details};
use shards::shard::{Operation, Shard};
use storage_engine::Direction;

const DEFAULT_SEED: u64 = 0x5EA2_C4ED;
const DEFAULT_CASES: u64 = 4;
const WORDS: [&str; 16] = [
    "quick",
    "quack",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "wonderful",
    "ponderful",
    "the",
    "hello",
    "help",
    "helicopter",
    "sun",
    "flower",
];

fn seed() -> u64 {
    let seed = std::env::var("SEARCH_INDEX_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    println!("seed: {seed}");
    seed
}

fn cases() -> u64 {
    std::env::var("SEARCH_INDEX_CASES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// xorshift64*: small, deterministic.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn text(&mut self) -> String {
        let count = 1 + self.below(6);
        (0..count)
            .map(|_| WORDS[self.below(WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(if self.below(4) == 0 { ". " } else { " " })
    }

    fn document(&mut self, id: u64) -> Map<String, Value> {
        let mut document = Map::new();
        document.insert("id".into(), json!(id));
        document.insert("title".into(), json!(self.text()));
        if self.below(2) == 0 {
            document.insert("body".into(), json!([self.text(), {"inner": self.text()}]));
        }
        if self.below(3) == 0 {
            document.insert("count".into(), json!(self.below(100)));
        }
        document
    }
}

fn open(directory: &tempfile::TempDir, name: &str) -> Shard {
    common::open_shard(directory, name)
}

/// The inverted index with internal ids and field ids replaced by external ids and paths.
fn dump(shard: &Shard) -> BTreeMap<String, BTreeSet<String>> {
    let snapshot = shard.read().expect("read succeeds");
    let fields: BTreeMap<u16, String> = snapshot
        .fields_map()
        .expect("fields_map succeeds")
        .iter()
        .map(|(path, id)| (*id, path.clone()))
        .collect();
    let external = |internal: u32| {
        let document = snapshot
            .document_by_id(internal, None)
            .expect("document_by_id succeeds")
            .expect("the value exists");
        document["id"].to_string()
    };
    let read = shard.database().begin_read();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for name in [
        "word_documents",
        "word_position_chunks",
        "field_lengths",
        "word_fields",
        "word_position_buckets",
        "word_pairs",
        "word_pairs_2",
        "word_pairs_3",
        "field_word_counts",
    ] {
        let Some(tree) = read.open_tree(name).expect("open_tree finds a value") else {
            continue;
        };
        for entry in tree
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .expect("range succeeds")
        {
            let (key, value) = entry.expect("`entry` holds a value");
            let line = match name {
                "word_documents" => {
                    let bitmap = shards::shard::decode_bitmap(value).expect("the bitmap decodes");
                    let ids: BTreeSet<String> = bitmap.iter().map(external).collect();
                    format!("{} -> {ids:?}", String::from_utf8_lossy(key))
                }
                "word_pairs" | "word_pairs_2" | "word_pairs_3" => {
                    let split = key
                        .iter()
                        .position(|byte| *byte == 0xFF)
                        .expect("a pair key holds the separator");
                    let bitmap = shards::shard::decode_bitmap(value).expect("the bitmap decodes");
                    let ids: BTreeSet<String> = bitmap.iter().map(external).collect();
                    format!(
                        "{} {} -> {ids:?}",
                        String::from_utf8_lossy(&key[..split]),
                        String::from_utf8_lossy(&key[split + 1..])
                    )
                }
                "field_word_counts" => {
                    let field = u16::from_be_bytes([key[0], key[1]]);
                    let count = u16::from_be_bytes([key[2], key[3]]);
                    let bitmap = shards::shard::decode_bitmap(value).expect("the bitmap decodes");
                    let ids: BTreeSet<String> = bitmap.iter().map(external).collect();
                    format!("{}={count} -> {ids:?}", fields[&field])
                }
                "word_fields" | "word_position_buckets" => {
                    let split = key.len() - 3;
                    let slot = u16::from_be_bytes([key[split + 1], key[split + 2]]);
                    // Field ids differ between shards: name the field by its path.
                    let slot = match name {
                        "word_fields" => fields[&slot].clone(),
                        _ => slot.to_string(),
                    };
                    let bitmap = shards::shard::decode_bitmap(value).expect("the bitmap decodes");
                    let ids: BTreeSet<String> = bitmap.iter().map(external).collect();
                    format!(
                        "{} at {slot} -> {ids:?}",
                        String::from_utf8_lossy(&key[..split])
                    )
                }
                "word_position_chunks" => {
                    // One line per document of the chunk: how the documents are cut into
                    // chunks depends on the order they came in.
                    let (word, first) = split_chunk_key(key).expect("a chunk key");
                    let lines: Vec<String> = ChunkDocuments::new(first, value)
                        .map(|entry| {
                            let (internal, bytes) = entry.expect("the chunk decodes");
                            let mut pairs: Vec<String> = Occurrences::new(bytes)
                                .map(|occurrence| {
                                    let occurrence = occurrence.expect("an occurrence decodes");
                                    format!("{}@{}", fields[&occurrence.field], occurrence.position)
                                })
                                .collect();
                            // Field ids differ between shards: compare by path.
                            pairs.sort();
                            format!(
                                "{} in {} -> {pairs:?}",
                                String::from_utf8_lossy(word),
                                external(internal)
                            )
                        })
                        .collect();
                    out.entry(name.to_owned()).or_default().extend(lines);
                    continue;
                }
                _ => {
                    let internal = u32::from_be_bytes(key.try_into().expect("try_into succeeds"));
                    let mut pairs: Vec<String> = value
                        .chunks(4)
                        .map(|chunk| {
                            let field = u16::from_be_bytes([chunk[0], chunk[1]]);
                            let count = u16::from_be_bytes([chunk[2], chunk[3]]);
                            format!("{}={count}", fields[&field])
                        })
                        .collect();
                    pairs.sort();
                    format!("{} -> {pairs:?}", external(internal))
                }
            };
            out.entry(name.to_owned()).or_default().insert(line);
        }
    }
    out
}

/// A shard holding `documents`, built in one batch after its settings.
fn from_scratch(
    directory: &tempfile::TempDir,
    name: &str,
    settings: &TextSettings,
    documents: &BTreeMap<u64, Map<String, Value>>,
) -> Shard {
    let shard = open(directory, name);
    shard
        .set_text_settings(settings.clone())
        .expect("set_text_settings succeeds");
    let operations = documents
        .iter()
        .map(|(id, document)| Operation::Replace {
            external_id: id.to_string(),
            document: document.clone(),
        })
        .collect();
    shard.apply(1, operations).expect("apply succeeds");
    shard
}

#[test]
fn index_equals_a_rebuild_after_replace_update_delete_and_delete_all() {
    let mut random = Random(seed() | 1);
    for case in 0..cases() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let shard = open(&directory, "live.pages");
        let mut expected: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
        let mut settings = TextSettings::default();
        for batch in 1..=12u64 {
            let mut operations = Vec::new();
            if batch == 10 {
                // At least one DeleteAll in every case, with documents added after it.
                operations.push(Operation::DeleteAll);
                expected.clear();
            }
            for _ in 0..(1 + random.below(8)) {
                let id = random.below(20);
                match random.below(10) {
                    0 if batch % 5 == 0 => {
                        operations.push(Operation::DeleteAll);
                        expected.clear();
                    }
                    0..=2 => {
                        operations.push(Operation::Delete {
                            external_id: id.to_string(),
                        });
                        expected.remove(&id);
                    }
                    3 if expected.contains_key(&id) => {
                        // An update: the caller folds it into a whole document.
                        let mut document = expected[&id].clone();
                        document.insert("title".into(), json!(random.text()));
                        operations.push(Operation::Replace {
                            external_id: id.to_string(),
                            document: document.clone(),
                        });
                        expected.insert(id, document);
                    }
                    _ => {
                        let document = random.document(id);
                        operations.push(Operation::Replace {
                            external_id: id.to_string(),
                            document: document.clone(),
                        });
                        expected.insert(id, document);
                    }
                }
            }
            shard.apply(batch, operations).expect("apply succeeds");
            if batch == 6 {
                settings.stop_words = ["the".to_owned()].into();
                settings.searchable_attributes = Some(vec!["body".to_owned(), "title".to_owned()]);
                assert!(
                    shard
                        .set_text_settings(settings.clone())
                        .expect("set_text_settings succeeds")
                );
            }
            let reference = from_scratch(
                &directory,
                &format!("reference-{batch}.pages"),
                &settings,
                &expected,
            );
            assert_eq!(dump(&shard), dump(&reference), "case {case} batch {batch}");
        }
        // Replaying the last batch changes nothing.
        let before = dump(&shard);
        let outcome = shard
            .apply(12, vec![Operation::DeleteAll])
            .expect("apply succeeds");
        assert!(outcome.already_applied);
        assert_eq!(dump(&shard), before);
    }
}

#[test]
fn settings_that_do_not_change_the_index_do_not_rebuild_it() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory, "shard.pages");
    let mut random = Random(seed() | 1);
    let documents: BTreeMap<u64, _> = (0..10).map(|id| (id, random.document(id))).collect();
    let operations = documents
        .iter()
        .map(|(id, document)| Operation::Replace {
            external_id: id.to_string(),
            document: document.clone(),
        })
        .collect();
    shard.apply(1, operations).expect("apply succeeds");
    let before = dump(&shard);
    let settings = TextSettings {
        ranking_rules: vec![RankingRule::Exactness, RankingRule::Words],
        ..TextSettings::default()
    };
    assert!(
        shard
            .set_text_settings(settings.clone())
            .expect("set_text_settings succeeds")
    );
    assert!(
        !shard
            .set_text_settings(settings.clone())
            .expect("set_text_settings succeeds")
    );
    assert_eq!(dump(&shard), before);
    assert_eq!(
        shard.read().expect("read succeeds").text_settings(),
        &settings
    );
}

/// Merges shards' hits by their details (ties by shard then position), as the server does.
fn merge(lists: Vec<Vec<(String, ShardHit)>>) -> Vec<(String, ShardHit)> {
    let mut all: Vec<(usize, (String, ShardHit))> = lists
        .into_iter()
        .flat_map(|list| list.into_iter().enumerate())
        .collect();
    all.sort_by(|(left_rank, left), (right_rank, right)| {
        compare_details(&left.1.details, &right.1.details).then(left_rank.cmp(right_rank))
    });
    all.into_iter().map(|(_, hit)| hit).collect()
}

fn named_hits(shard: &Shard, query: &SearchQuery) -> (Vec<(String, ShardHit)>, u64) {
    let snapshot = shard.read().expect("read succeeds");
    let hits = snapshot.search(query).expect("search succeeds");
    let named = hits
        .hits
        .into_iter()
        .map(|hit| {
            let document = snapshot
                .document_by_id(hit.id, None)
                .expect("document_by_id succeeds")
                .expect("the value exists");
            (document["id"].to_string(), hit)
        })
        .collect();
    (named, hits.total)
}

/// Hits grouped into runs of equal details: the order inside a run is a free tie-break.
fn runs(hits: &[(String, ShardHit)]) -> Vec<(BTreeSet<String>, String)> {
    let mut runs: Vec<(BTreeSet<String>, String)> = Vec::new();
    let mut previous: Option<&ShardHit> = None;
    for (name, hit) in hits {
        let same = previous.is_some_and(|before| {
            compare_details(&before.details, &hit.details) == std::cmp::Ordering::Equal
        });
        if !same {
            runs.push((
                BTreeSet::new(),
                format!("{:.12} {:?}", hit.score, hit.details),
            ));
        }
        runs.last_mut()
            .expect("last_mut finds a value")
            .0
            .insert(name.clone());
        previous = Some(hit);
    }
    runs
}

#[test]
fn scores_are_shard_independent_so_merged_shards_rank_as_one() {
    let mut random = Random(seed() | 1);
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let settings = TextSettings {
        searchable_attributes: Some(vec!["title".to_owned(), "body".to_owned()]),
        ..TextSettings::default()
    };
    let documents: BTreeMap<u64, _> = (0..60).map(|id| (id, random.document(id))).collect();
    let (even, odd): (BTreeMap<u64, _>, BTreeMap<u64, _>) = documents
        .clone()
        .into_iter()
        .partition(|(id, _)| random.below(2) == 0 || *id == 0);
    let whole = from_scratch(&directory, "whole.pages", &settings, &documents);
    let first = from_scratch(&directory, "first.pages", &settings, &even);
    let second = from_scratch(&directory, "second.pages", &settings, &odd);
    let strategies = [
        MatchingStrategy::Last,
        MatchingStrategy::All,
        MatchingStrategy::Frequency,
    ];
    let mut non_empty = 0;
    let queries = [
        "quick fox",
        "wonderful dog ",
        "hel",
        "\"lazy dog\" jumps",
        "the sun flower",
        "quack brown -fox",
        "ponderfull over",
    ];
    for q in queries {
        for strategy in strategies {
            let mut query = SearchQuery {
                q: Some(q.to_owned()),
                limit: 1000,
                matching_strategy: strategy,
                ..SearchQuery::default()
            };
            if strategy == MatchingStrategy::Frequency {
                // The server sums the shards' term counts so that every shard drops the same
                // terms first.
                let left = first
                    .read()
                    .expect("read succeeds")
                    .term_document_counts(&query)
                    .expect("term_document_counts succeeds");
                let right = second
                    .read()
                    .expect("read succeeds")
                    .term_document_counts(&query)
                    .expect("term_document_counts succeeds");
                let whole_counts = whole
                    .read()
                    .expect("read succeeds")
                    .term_document_counts(&query)
                    .expect("term_document_counts succeeds");
                let summed: Vec<u64> = left.iter().zip(&right).map(|(a, b)| a + b).collect();
                assert_eq!(summed, whole_counts, "q {q:?}");
                query.term_document_counts = Some(summed);
            }
            let (one, one_total) = named_hits(&whole, &query);
            let (left, left_total) = named_hits(&first, &query);
            let (right, right_total) = named_hits(&second, &query);
            assert_eq!(one_total, left_total + right_total, "q {q:?}");
            if !one.is_empty() {
                non_empty += 1;
            }
            let merged = merge(vec![left, right]);
            assert_eq!(runs(&merged), runs(&one), "q {q:?} {strategy:?}");
        }
    }
    assert!(non_empty >= queries.len() * 2, "the queries find documents");
}

#[test]
fn stopping_after_the_first_words_buckets_changes_no_hit_and_no_total() {
    let mut random = Random(seed() | 1);
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents: BTreeMap<u64, _> = (0..80).map(|id| (id, random.document(id))).collect();
    let shard = from_scratch(
        &directory,
        "shard.pages",
        &TextSettings::default(),
        &documents,
    );
    let snapshot = shard.read().expect("read succeeds");
    let mut non_empty = 0;
    for q in [
        "quick fox dog",
        "lazy hel",
        "wonderful sun flower over",
        "\"lazy dog\" fox",
    ] {
        for limit in [1, 3, 10] {
            let early = SearchQuery {
                q: Some(q.to_owned()),
                limit,
                ..SearchQuery::default()
            };
            // Naming every field turns the early stop off: the full evaluation.
            let full = SearchQuery {
                limit: 1000,
                attributes_to_search_on: Some(vec!["title".to_owned(), "body".to_owned()]),
                ..early.clone()
            };
            let early_hits = snapshot.search(&early).expect("search succeeds");
            let mut full_hits = snapshot.search(&full).expect("search succeeds");
            if full_hits.total > 0 {
                non_empty += 1;
            }
            full_hits.hits.truncate(limit);
            assert_eq!(early_hits.total, full_hits.total, "q {q:?} limit {limit}");
            assert_eq!(early_hits.hits, full_hits.hits, "q {q:?} limit {limit}");
        }
    }
    assert!(non_empty >= 9, "most queries find documents");
}

/// A random query over the test vocabulary: one to four words, the last one often cut to a
/// prefix, sometimes a typo or a phrase.
fn random_query(random: &mut Random) -> String {
    let count = 1 + random.below(4);
    let mut words: Vec<String> = (0..count)
        .map(|_| WORDS[random.below(WORDS.len() as u64) as usize].to_owned())
        .collect();
    if random.below(3) == 0 {
        let index = random.below(count) as usize;
        let word = words[index].clone();
        if word.len() > 4 {
            // Swap two letters: one typo.
            let mut letters: Vec<char> = word.chars().collect();
            letters.swap(2, 3);
            words[index] = letters.into_iter().collect();
        }
    }
    if random.below(2) == 0 {
        let last = words.len() - 1;
        let keep = 1 + random.below(words[last].len() as u64) as usize;
        words[last].truncate(keep);
    }
    if count >= 2 && random.below(5) == 0 {
        words[0] = format!("\"{} {}\"", words[0], words[1]);
        words.remove(1);
    }
    words.join(" ")
}

/// Pairs of vocabulary words also written as one word (`sunflower`): a query word the shard
/// may match itself, with one typo (`sunflowers`), or through its split into the pair.
const JOINED_PAIRS: [(&str, &str); 3] = [("sun", "flower"), ("lazy", "dog"), ("quick", "fox")];
/// The words that follow a joined pair in documents and queries.
const FOLLOWERS: [&str; 3] = ["over", "the", "jumps"];

/// A joined pair and the word after it, `(joined, pair, follower)`.
fn joined_words(random: &mut Random) -> (String, String, &'static str) {
    let (left, right) = JOINED_PAIRS[random.below(JOINED_PAIRS.len() as u64) as usize];
    let follower = FOLLOWERS[random.below(FOLLOWERS.len() as u64) as usize];
    (
        format!("{left}{right}"),
        format!("{left} {right}"),
        follower,
    )
}

/// A document text ending with a joined pair as one word, as one word with a typo, or as its
/// two words, then sometimes its follower.
fn joined_text(random: &mut Random) -> String {
    let (joined, pair, follower) = joined_words(random);
    let form = match random.below(3) {
        0 => joined,
        1 => format!("{joined}s"),
        _ => pair,
    };
    if random.below(3) == 0 {
        form
    } else {
        format!("{form} {follower}")
    }
}

/// A query starting with a joined word, then its follower or a random query.
fn joined_query(random: &mut Random) -> String {
    let (joined, _, follower) = joined_words(random);
    if random.below(2) == 0 {
        format!("{joined} {follower}")
    } else {
        format!("{joined} {}", random_query(random))
    }
}

/// The rule orders the lazy bucket sort is compared under.
fn rule_orders() -> [Vec<RankingRule>; 4] {
    [
        vec![
            RankingRule::Words,
            RankingRule::Typo,
            RankingRule::Proximity,
            RankingRule::Attribute,
            RankingRule::Exactness,
        ],
        vec![
            RankingRule::Words,
            RankingRule::Attribute,
            RankingRule::Exactness,
            RankingRule::Typo,
            RankingRule::Proximity,
        ],
        vec![
            RankingRule::Words,
            RankingRule::WordPosition,
            RankingRule::Typo,
            RankingRule::AttributeRank,
        ],
        // Proximity before typo: its buckets mix terms matched with and without typos.
        vec![
            RankingRule::Words,
            RankingRule::Proximity,
            RankingRule::Typo,
            RankingRule::AttributeRank,
            RankingRule::WordPosition,
        ],
    ]
}

/// Random corpora and queries, each query searched lazily and through the full evaluation;
/// with `joined`, documents and queries also hold joined words (see [`JOINED_PAIRS`]).
/// Returns the number of comparisons whose full ranking had more hits than the page.
fn compare_lazy_with_full(
    random: &mut Random,
    rule_orders: &[Vec<RankingRule>],
    joined: bool,
) -> usize {
    let strategies = [
        MatchingStrategy::Last,
        MatchingStrategy::All,
        MatchingStrategy::Frequency,
    ];
    let mut compared = 0;
    for case in 0..cases() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        // A long `notes` field puts words past the exactly bucketed positions (16 and on).
        let documents: BTreeMap<u64, _> = (0..300)
            .map(|id| {
                let mut document = random.document(id);
                if random.below(2) == 0 {
                    let long: Vec<String> = (0..4).map(|_| random.text()).collect();
                    document.insert("notes".into(), json!(long.join(" ")));
                }
                if joined && random.below(2) == 0 {
                    let title = document["title"].as_str().unwrap_or_default().to_owned();
                    let title = format!("{title} {}", joined_text(random));
                    document.insert("title".into(), json!(title));
                }
                (id, document)
            })
            .collect();
        let rules = rule_orders[case as usize % rule_orders.len()].clone();
        let mut settings = TextSettings {
            ranking_rules: rules.clone(),
            ..TextSettings::default()
        };
        if joined {
            // Multi-word synonyms: phrase alternatives too, without a typo.
            settings.synonyms = BTreeMap::from([
                ("over".to_owned(), vec!["brown fox".to_owned()]),
                (
                    "hello".to_owned(),
                    vec!["quick brown".to_owned(), "help".to_owned()],
                ),
            ]);
        }
        let shard = from_scratch(&directory, "shard.pages", &settings, &documents);
        let snapshot = shard.read().expect("read succeeds");
        for _ in 0..60 {
            let q = if joined {
                joined_query(random)
            } else {
                random_query(random)
            };
            let strategy = strategies[random.below(3) as usize];
            let limit = [1, 5, 20][random.below(3) as usize];
            let offset = random.below(15) as usize;
            let lazy = SearchQuery {
                q: Some(q.clone()),
                limit,
                offset,
                matching_strategy: strategy,
                ..SearchQuery::default()
            };
            // Naming every field turns the bucket sort off: the full evaluation.
            let full = SearchQuery {
                offset: 0,
                limit: 1000,
                attributes_to_search_on: Some(vec![
                    "title".to_owned(),
                    "body".to_owned(),
                    "notes".to_owned(),
                ]),
                ..lazy.clone()
            };
            let lazy_hits = snapshot.search(&lazy).expect("search succeeds");
            let mut full_hits = snapshot.search(&full).expect("search succeeds");
            full_hits.hits.truncate(offset + limit);
            if full_hits.hits.len() > limit {
                compared += 1;
            }
            let context = format!("q {q:?} {strategy:?} offset {offset} limit {limit} {rules:?}");
            assert_eq!(lazy_hits.total, full_hits.total, "{context}");
            assert_eq!(lazy_hits.hits, full_hits.hits, "{context}");
        }
    }
    compared
}

#[test]
fn lazy_bucket_sort_returns_the_hits_of_the_full_ranking() {
    let mut random = Random(seed() | 1);
    let compared = compare_lazy_with_full(&mut random, &rule_orders()[..3], false);
    assert!(
        compared >= 20,
        "enough queries have more hits than one page: {compared}"
    );
}

#[test]
fn lazy_bucket_sort_returns_the_hits_of_the_full_ranking_with_split_words() {
    // A query word joining two vocabulary words splits into them where they stand side by
    // side: a phrase alternative beside the word itself and its one-typo derivations; some
    // words have multi-word synonyms.
    let mut random = Random(seed() | 2);
    let compared = compare_lazy_with_full(&mut random, &rule_orders(), true);
    assert!(
        compared >= 20,
        "enough queries have more hits than one page: {compared}"
    );
}

#[test]
fn a_shard_without_the_slot_or_pair_trees_rebuilds_them_when_opened() {
    let mut random = Random(seed() | 1);
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let documents: BTreeMap<u64, _> = (0..60).map(|id| (id, random.document(id))).collect();
    let shard = from_scratch(
        &directory,
        "old.pages",
        &TextSettings::default(),
        &documents,
    );
    let expected = dump(&shard);
    for name in [
        "word_fields",
        "word_position_buckets",
        "word_pairs",
        "word_pairs_2",
        "word_pairs_3",
        "field_word_counts",
    ] {
        assert!(expected.contains_key(name), "{name} is filled");
    }
    // Make it look like a shard written before the slot trees existed.
    let transaction = shard
        .database()
        .begin_write()
        .expect("begin_write succeeds");
    for name in ["word_fields", "word_position_buckets"] {
        transaction.delete_tree(name).expect("delete_tree succeeds");
    }
    transaction.commit().expect("commit succeeds");
    assert!(!dump(&shard).contains_key("word_fields"));
    drop(shard);
    let reopened = open(&directory, "old.pages");
    assert_eq!(dump(&reopened), expected);

    // And like one written before `word_pairs`, then before `field_word_counts`, then before
    // the pairs two and three positions apart, existed.
    let mut reopened = reopened;
    for name in [
        "word_pairs",
        "field_word_counts",
        "word_pairs_2",
        "word_pairs_3",
    ] {
        let transaction = reopened
            .database()
            .begin_write()
            .expect("begin_write succeeds");
        transaction.delete_tree(name).expect("delete_tree succeeds");
        transaction.commit().expect("commit succeeds");
        assert!(!dump(&reopened).contains_key(name));
        drop(reopened);
        reopened = open(&directory, "old.pages");
        assert_eq!(dump(&reopened), expected, "{name} rebuilt");
    }

    // And like one written before positions were chunked: one `word_positions` key per word
    // and document, 4 bytes per occurrence, no `word_position_chunks`.
    let transaction = reopened
        .database()
        .begin_write()
        .expect("begin_write succeeds");
    transaction
        .delete_tree("word_position_chunks")
        .expect("delete_tree succeeds");
    let legacy = transaction
        .create_tree("word_positions")
        .expect("create_tree succeeds");
    legacy
        .put(b"word\xFF\x00\x00\x00\x01", &[0, 1, 0, 2])
        .expect("put succeeds");
    drop(legacy);
    transaction.commit().expect("commit succeeds");
    drop(reopened);
    let reopened = open(&directory, "old.pages");
    assert_eq!(dump(&reopened), expected, "positions chunked");
    let read = reopened.database().begin_read();
    assert!(
        read.open_tree("word_positions")
            .expect("the catalog reads")
            .is_none(),
        "the legacy tree is gone"
    );
}

/// `word_pairs` holds a pair where the second word stands right after the first in one
/// field: not across fields nor across a stop word, and gone with the document;
/// `word_pairs_2` where it stands two positions after (a stop word between counts), and
/// `word_pairs_3` three.
#[test]
fn word_pairs_hold_the_words_side_by_side_in_one_field() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let settings = TextSettings {
        stop_words: ["the".to_owned()].into(),
        ..TextSettings::default()
    };
    let documents: BTreeMap<u64, Map<String, Value>> = [
        json!({"id": 1, "title": "quick brown fox", "body": "fox den"}),
        json!({"id": 2, "title": "brown fox", "body": "the quick brown"}),
        json!({"id": 3, "title": "fox", "body": "quick the fox"}),
    ]
    .into_iter()
    .map(|document| {
        let Value::Object(map) = document else {
            panic!("an object");
        };
        (map["id"].as_u64().expect("an integer id"), map)
    })
    .collect();
    let shard = from_scratch(&directory, "pairs.pages", &settings, &documents);
    let pairs_in = |shard: &Shard, tree: &str| -> Vec<String> {
        dump(shard)
            .remove(tree)
            .unwrap_or_default()
            .into_iter()
            .collect()
    };
    let pairs = |shard: &Shard| pairs_in(shard, "word_pairs");
    let two_apart = ["quick fox -> {\"1\", \"3\"}"];
    assert_eq!(pairs_in(&shard, "word_pairs_2"), two_apart);
    assert_eq!(pairs_in(&shard, "word_pairs_3"), Vec::<String>::new());
    assert_eq!(
        pairs(&shard),
        [
            "brown fox -> {\"1\", \"2\"}",
            "fox den -> {\"1\"}",
            "quick brown -> {\"1\", \"2\"}",
        ]
    );
    shard
        .apply(
            2,
            vec![Operation::Delete {
                external_id: "2".to_owned(),
            }],
        )
        .expect("apply succeeds");
    assert_eq!(
        pairs(&shard),
        [
            "brown fox -> {\"1\"}",
            "fox den -> {\"1\"}",
            "quick brown -> {\"1\"}",
        ]
    );
    assert_eq!(pairs_in(&shard, "word_pairs_2"), two_apart);
}

/// The `field_word_counts` lines (as [`dump`] writes them) that the shard's `field_lengths`
/// call for: per field and word count up to 30, the documents whose field holds that many.
fn word_counts_from_lengths(shard: &Shard) -> BTreeSet<String> {
    let snapshot = shard.read().expect("read succeeds");
    let fields: BTreeMap<u16, String> = snapshot
        .fields_map()
        .expect("fields_map succeeds")
        .iter()
        .map(|(path, id)| (*id, path.clone()))
        .collect();
    let read = shard.database().begin_read();
    let mut holders: BTreeMap<(String, u16), BTreeSet<String>> = BTreeMap::new();
    if let Some(tree) = read.open_tree("field_lengths").expect("open_tree succeeds") {
        for entry in tree
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .expect("range succeeds")
        {
            let (key, value) = entry.expect("`entry` holds a value");
            let internal = u32::from_be_bytes(key.try_into().expect("an id key"));
            let document = snapshot
                .document_by_id(internal, None)
                .expect("document_by_id succeeds")
                .expect("the document exists");
            for chunk in value.chunks(4) {
                let field = u16::from_be_bytes([chunk[0], chunk[1]]);
                let count = u16::from_be_bytes([chunk[2], chunk[3]]);
                if (1..=30).contains(&count) {
                    holders
                        .entry((fields[&field].clone(), count))
                        .or_default()
                        .insert(document["id"].to_string());
                }
            }
        }
    }
    holders
        .into_iter()
        .map(|((path, count), ids)| format!("{path}={count} -> {ids:?}"))
        .collect()
}

#[test]
fn field_word_counts_hold_the_documents_of_each_fields_word_count() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let long_body: Vec<String> = (0..31).map(|index| format!("word{index}")).collect();
    let documents: BTreeMap<u64, Map<String, Value>> = [
        json!({"id": 1, "title": "quick brown fox", "body": "fox den"}),
        json!({"id": 2, "title": "brown fox", "body": "quick brown"}),
        json!({"id": 3, "title": "fox", "body": long_body.join(" ")}),
    ]
    .into_iter()
    .map(|document| {
        let Value::Object(map) = document else {
            panic!("an object");
        };
        (map["id"].as_u64().expect("an integer id"), map)
    })
    .collect();
    let shard = from_scratch(
        &directory,
        "counts.pages",
        &TextSettings::default(),
        &documents,
    );
    let counts = |shard: &Shard| -> Vec<String> {
        dump(shard)
            .remove("field_word_counts")
            .unwrap_or_default()
            .into_iter()
            .collect()
    };
    // Document 3's body holds 31 words: past the indexed counts. Every attribute is
    // searchable, the id too.
    assert_eq!(
        counts(&shard),
        [
            "body=2 -> {\"1\", \"2\"}",
            "id=1 -> {\"1\", \"2\", \"3\"}",
            "title=1 -> {\"3\"}",
            "title=2 -> {\"2\"}",
            "title=3 -> {\"1\"}",
        ]
    );
    shard
        .apply(
            2,
            vec![Operation::Delete {
                external_id: "2".to_owned(),
            }],
        )
        .expect("apply succeeds");
    assert_eq!(
        counts(&shard),
        [
            "body=2 -> {\"1\"}",
            "id=1 -> {\"1\", \"3\"}",
            "title=1 -> {\"3\"}",
            "title=3 -> {\"1\"}",
        ]
    );
}

#[test]
fn field_word_counts_agree_with_field_lengths_after_random_changes() {
    let mut random = Random(seed() | 1);
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = open(&directory, "random.pages");
    for batch in 1..=8u64 {
        let operations = (0..12)
            .map(|_| {
                let id = random.below(30);
                if random.below(4) == 0 {
                    Operation::Delete {
                        external_id: id.to_string(),
                    }
                } else {
                    Operation::Replace {
                        external_id: id.to_string(),
                        document: random.document(id),
                    }
                }
            })
            .collect();
        shard.apply(batch, operations).expect("apply succeeds");
        let stored = dump(&shard).remove("field_word_counts").unwrap_or_default();
        assert!(!stored.is_empty(), "batch {batch}: counts are indexed");
        assert_eq!(stored, word_counts_from_lengths(&shard), "batch {batch}");
    }
}
