//! A commit's prefix caches brought up to date over the batch that follows it, on the
//! indexing thread before the batch's commit is served, instead of read again by the first
//! searches of the new commit.
//!
//! The unions over a prefix's words ([`PrefixUnions`]) and the words a prefix starts
//! ([`PrefixWords`]) are per commit; reading one again means decoding every bitmap of every
//! word the prefix starts (tens of milliseconds for a short prefix on a shard of 200,000
//! documents, on a serving core, once per commit and prefix). A batch changes only the words
//! and documents it touched ([`TouchedWords`]), so:
//!
//! - a union, per slot, is the earlier union without the touched documents, with the touched
//!   documents found in the touched words the prefix starts (a document the batch did not touch
//!   holds its words; every word a touched document holds afterwards is a touched word);
//! - a prefix's words are the earlier words without the touched ones, with the touched ones
//!   read again (an untouched word keeps its documents).
//!
//! An entry the batch changed nothing of (no touched word or document) is shared with the
//! earlier commit as it is. Both are exact: a carried entry equals the entry read afresh from the new commit (the unit
//! tests compare them after random batches). Only entries searches asked for within the last
//! [`IDLE_COMMITS_MAX`] commits are carried, within [`CARRY_TIME_MAX`] per commit; what is not
//! carried is read again by the first search that needs it, as before.

use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use roaring::RoaringBitmap;

use super::prefix_unions::{PrefixUnions, SlotUnion, UnionKind};
use super::prefix_words::{ENTRY_BYTES_MAX, PrefixWords, WordsOfPrefix};
use super::touched_postings::TouchedPostings;
use crate::commit_memo::CommitMemo;
use crate::error::ShardResult;

/// Commits in a row nobody asks for an entry on before it is no longer carried.
pub const IDLE_COMMITS_MAX: u8 = 4;
/// Longest one commit spends carrying prefix entries (an entry started runs to its end).
pub const CARRY_TIME_MAX: Duration = Duration::from_secs(1);

/// Carries `earlier`'s unions into `into` (the next commit's) over the batch whose touched
/// postings `postings` reads, until `deadline`.
pub fn carry_prefix_unions(
    earlier: &PrefixUnions,
    into: &PrefixUnions,
    postings: &mut TouchedPostings<'_>,
    deadline: Instant,
) -> ShardResult<()> {
    carry_entries(
        earlier.memo(),
        into.memo(),
        deadline,
        |(kind, prefix), union| {
            // A union none of whose words the batch touched holds no touched document either (a
            // touched document had each of its earlier words touched): it is shared as it is.
            if !postings.touched().touches_prefix(prefix) {
                return Ok(None);
            }
            let union = carried_union(*kind, prefix, union, postings)?;
            let bytes = union.values().map(RoaringBitmap::serialized_size).sum();
            Ok(Some((union, bytes)))
        },
    )
}

/// Carries `earlier`'s prefix words into `into` as [`carry_prefix_unions`] does.
pub fn carry_prefix_words(
    earlier: &PrefixWords,
    into: &PrefixWords,
    postings: &TouchedPostings<'_>,
    deadline: Instant,
) -> ShardResult<()> {
    carry_entries(earlier.memo(), into.memo(), deadline, |prefix, words| {
        // A refused prefix stays refused: a batch moves its weight little. An entry none of
        // whose words the batch touched is shared as it is.
        let Some(words) = words.as_ref() else {
            return Ok(None);
        };
        if !postings.touched().touches_prefix(prefix) {
            return Ok(None);
        }
        let carried = carried_words(words, postings, prefix)?;
        let bytes = carried.bytes();
        Ok(Some(if bytes > ENTRY_BYTES_MAX {
            (None, 0)
        } else {
            (Some(carried), bytes)
        }))
    })
}

/// Carries the entries of `earlier` worth carrying into `into`, until `deadline`: each is the
/// value `carry` answers with its weight, or the earlier value itself when `carry` answers
/// `None` (shared, not copied).
pub(super) fn carry_entries<K: Hash + Eq + Clone, V>(
    earlier: &CommitMemo<K, V>,
    into: &CommitMemo<K, V>,
    deadline: Instant,
    mut carry: impl FnMut(&K, &V) -> ShardResult<Option<(V, usize)>>,
) -> ShardResult<()> {
    for mut entry in earlier.carried(IDLE_COMMITS_MAX) {
        turns::checkpoint();
        if Instant::now() >= deadline {
            break;
        }
        if let Some((value, bytes)) = carry(&entry.key, &entry.value)? {
            (entry.value, entry.bytes) = (Arc::new(value), bytes);
        }
        into.keep_carried(entry);
    }
    Ok(())
}

/// The `kind` union of `prefix` on the new commit, from `earlier` (the union on the commit
/// before the batch).
pub fn carried_union(
    kind: UnionKind,
    prefix: &str,
    earlier: &SlotUnion,
    postings: &mut TouchedPostings<'_>,
) -> ShardResult<SlotUnion> {
    let touched = postings.touched();
    let documents = touched.documents();
    let mut union: SlotUnion = earlier
        .iter()
        .map(|(slot, held)| (*slot, held - documents))
        .collect();
    for word in touched.extending(prefix) {
        turns::checkpoint();
        for (slot, found) in postings.of(kind, word)? {
            *union.entry(*slot).or_default() |= found;
        }
    }
    // Shaped as reading afresh shapes it: the documents union always has its slot 0, a slot
    // union only its slots holding a document.
    if kind == UnionKind::Documents {
        union.entry(0).or_default();
    } else {
        union.retain(|_, documents| !documents.is_empty());
    }
    Ok(union)
}

/// The words of `prefix` on the new commit, from `earlier` (its words on the commit before):
/// the untouched words kept with their documents, the touched ones read again.
pub fn carried_words(
    earlier: &WordsOfPrefix,
    postings: &TouchedPostings<'_>,
    prefix: &str,
) -> ShardResult<WordsOfPrefix> {
    let touched = postings.touched();
    let mut read_again = WordsOfPrefix::default();
    for word in touched.extending(prefix) {
        turns::checkpoint();
        if let Some(stored) = postings.stored(word)? {
            read_again.add(word, stored)?;
        }
    }
    read_again.rare.sort_unstable();
    let frequent = merged_in_order(
        earlier
            .frequent
            .iter()
            .filter(|word| !touched.contains(word))
            .cloned(),
        read_again.frequent,
        |first, second| first <= second,
    );
    // Untouched rare words keep their documents; both lists are in byte order, so the merged
    // indexes grow with the old ones and each list of pairs stays sorted once renumbered.
    let mut earlier_index = vec![None; earlier.rare_words.len()];
    let mut again_index = vec![None; read_again.rare_words.len()];
    let earlier_kept = earlier
        .rare_words
        .iter()
        .enumerate()
        .filter(|(_, (word, _))| !touched.contains(word))
        .map(|(index, word)| (Source::Earlier(index), word.clone()));
    let again = read_again
        .rare_words
        .into_iter()
        .enumerate()
        .map(|(index, word)| (Source::ReadAgain(index), word));
    let merged = merged_in_order(earlier_kept, again, |(_, (first, _)), (_, (second, _))| {
        first <= second
    });
    let mut rare_words = Vec::with_capacity(merged.len());
    for (new_index, (source, word)) in merged.into_iter().enumerate() {
        turns::checkpoint_at(new_index);
        let new_index = u32::try_from(new_index).ok();
        match source {
            Source::Earlier(index) => earlier_index[index] = new_index,
            Source::ReadAgain(index) => again_index[index] = new_index,
        }
        rare_words.push(word);
    }
    let renumbered = |pairs: &[(u32, u32)], numbers: &[Option<u32>]| -> Vec<(u32, u32)> {
        pairs
            .iter()
            .filter_map(|(document, index)| {
                let number = numbers.get(*index as usize).copied().flatten()?;
                Some((*document, number))
            })
            .collect()
    };
    let rare = merged_in_order(
        renumbered(&earlier.rare, &earlier_index),
        renumbered(&read_again.rare, &again_index),
        |first, second| first <= second,
    );
    Ok(WordsOfPrefix {
        frequent,
        rare_words,
        rare,
    })
}

/// Where a merged rare word comes from: its index in the earlier entry or in the words read
/// again.
#[derive(Clone, Copy)]
enum Source {
    Earlier(usize),
    ReadAgain(usize),
}

/// The items of two lists each in order (`in_order(a, b)`: `a` may come before `b`), in one
/// list in order.
fn merged_in_order<T>(
    left: impl IntoIterator<Item = T>,
    right: impl IntoIterator<Item = T>,
    in_order: impl Fn(&T, &T) -> bool,
) -> Vec<T> {
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    let mut merged = Vec::new();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(first), Some(second)) => in_order(first, second),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return merged,
        };
        let next = if take_left { left.next() } else { right.next() };
        merged.extend(next);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::index::trees::{WORD_FIELDS_TREE, WORD_POSITION_BUCKETS_TREE};
    use crate::search::buckets::prefix_documents;
    use crate::search::prefix_unions::ComputedUnion;
    use crate::search::rule_bitmaps::prefix_slot_union;
    use crate::shard::{Operation, Shard, ShardSnapshot};
    use crate::test_database::scratch_shard;
    use crate::test_random::Random;

    /// Documents the shard starts with: enough for a frequent word (`abundant`).
    pub(crate) const DOCUMENTS: u32 = 5_000;
    /// Batches carried over, one after the other.
    pub(crate) const BATCHES: u64 = 6;
    /// Operations per batch.
    const OPERATIONS: u32 = 300;
    /// The prefixes whose entries are carried: short and long, many words and few, none.
    const PREFIXES: [&str; 6] = ["a", "ab", "abc", "b", "bq", "zz"];
    const KINDS: [UnionKind; 3] = [
        UnionKind::Documents,
        UnionKind::Fields,
        UnionKind::PositionBuckets,
    ];

    /// A random word: most start with `a` or `b`, some are shared by many documents.
    fn word(random: &mut Random) -> String {
        match random.below(10) {
            0 => "abundant".to_owned(),
            1 => format!("abc{}", random.below(60)),
            2..=5 => format!("ab{}", random.below(400)),
            6..=7 => format!("b{}", random.below(300)),
            _ => format!("q{}", random.below(50)),
        }
    }

    /// A document of two text fields, long enough for several position buckets.
    pub(crate) fn document(random: &mut Random, id: u32) -> Operation {
        let mut document = Map::new();
        document.insert("id".into(), json!(id));
        for field in ["title", "body"] {
            let words = 1 + random.below(if field == "title" { 4 } else { 40 });
            let text: Vec<String> = (0..words).map(|_| word(random)).collect();
            document.insert(field.into(), Value::String(text.join(" ")));
        }
        Operation::Replace {
            external_id: id.to_string(),
            document,
        }
    }

    /// The union read afresh from `snapshot`'s commit.
    fn fresh_union(snapshot: &ShardSnapshot, kind: UnionKind, prefix: &str) -> SlotUnion {
        let read = snapshot.read_transaction();
        let computed = match kind {
            UnionKind::Documents => prefix_documents(read, prefix),
            UnionKind::Fields => prefix_slot_union(read, WORD_FIELDS_TREE, prefix),
            UnionKind::PositionBuckets => {
                prefix_slot_union(read, WORD_POSITION_BUCKETS_TREE, prefix)
            }
        };
        computed.expect("the union reads").union
    }

    /// Asks for every prefix's entries on `snapshot` (reading what is not kept); answers
    /// how many were already kept.
    fn ask_every_entry(snapshot: &ShardSnapshot) -> usize {
        let mut kept = 0;
        for prefix in PREFIXES {
            for kind in KINDS {
                let key = (kind, prefix.to_owned());
                if snapshot.prefix_unions().memo().get(&key).is_some() {
                    kept += 1;
                }
                snapshot
                    .prefix_unions()
                    .union(kind, prefix, || {
                        // Kept whatever the number of words read.
                        Ok(ComputedUnion {
                            union: fresh_union(snapshot, kind, prefix),
                            keys_read: usize::MAX,
                        })
                    })
                    .expect("the union is known");
            }
            if snapshot.prefix_words().memo().get(prefix).is_some() {
                kept += 1;
            }
            snapshot
                .prefix_words()
                .words(snapshot.read_transaction(), prefix)
                .expect("the words are read");
        }
        kept
    }

    /// Every carried entry equals the entry read afresh; answers the unions carried.
    fn assert_carried_equal_fresh(snapshot: &ShardSnapshot, batch: u64) -> Vec<SlotUnion> {
        let mut unions = Vec::new();
        for prefix in PREFIXES {
            for kind in KINDS {
                let carried = snapshot
                    .prefix_unions()
                    .memo()
                    .get(&(kind, prefix.to_owned()))
                    .unwrap_or_else(|| panic!("batch {batch}: {kind:?} {prefix} carried"));
                assert_eq!(
                    *carried,
                    fresh_union(snapshot, kind, prefix),
                    "batch {batch}: {kind:?} union of {prefix}"
                );
                unions.push((*carried).clone());
            }
            let carried = snapshot
                .prefix_words()
                .memo()
                .get(prefix)
                .unwrap_or_else(|| panic!("batch {batch}: words of {prefix} carried"));
            let fresh =
                WordsOfPrefix::read(snapshot.read_transaction(), prefix).expect("words read");
            assert_eq!(
                carried.as_ref().as_ref(),
                Some(&fresh),
                "batch {batch}: words of {prefix}"
            );
        }
        unions
    }

    /// One batch of random replacements (some of an id twice), deletions and additions.
    pub(crate) fn random_batch(random: &mut Random, next_id: &mut u32) -> Vec<Operation> {
        (0..OPERATIONS)
            .map(|_| match random.below(10) {
                0..=1 => Operation::Delete {
                    external_id: random.below(u64::from(*next_id)).to_string(),
                },
                2..=3 => {
                    *next_id += 1;
                    document(random, *next_id)
                }
                // Ids drawn from a small range: some are replaced twice in one batch.
                4 => {
                    let id = random.below(40);
                    document(random, id)
                }
                _ => {
                    let id = random.below(u64::from(*next_id));
                    document(random, id)
                }
            })
            .collect()
    }

    fn commit_carried(shard: &Shard, batch: u64, operations: Vec<Operation>) -> Vec<SlotUnion> {
        let mut prepared = shard.prepare(batch).expect("the batch opens");
        prepared.apply_chunk(operations).expect("the chunk applies");
        let mut unions = Vec::new();
        shard
            .commit_warmed(
                prepared,
                Some(|snapshot: &ShardSnapshot| {
                    unions = assert_carried_equal_fresh(snapshot, batch);
                }),
            )
            .expect("the batch commits");
        unions
    }

    #[test]
    fn carried_entries_equal_the_entries_read_afresh_after_random_batches() {
        let seed = 0xCA22_1ED0;
        println!("seed {seed:#x}");
        let mut random = Random(seed);
        let (_directory, shard) = scratch_shard();
        let operations = (0..DOCUMENTS).map(|id| document(&mut random, id)).collect();
        shard.apply(1, operations).expect("the documents apply");
        let mut next_id = DOCUMENTS;
        assert_eq!(ask_every_entry(&shard.read().expect("a snapshot")), 0);
        let mut before: Option<Vec<SlotUnion>> = None;
        let mut changed = 0;
        for batch in 2..2 + BATCHES {
            let operations = random_batch(&mut random, &mut next_id);
            let unions = commit_carried(&shard, batch, operations);
            if before.as_ref().is_some_and(|before| *before != unions) {
                changed += 1;
            }
            before = Some(unions);
        }
        assert!(changed >= 3, "the batches change the unions ({changed})");
        let words = shard
            .read()
            .expect("a snapshot")
            .prefix_words()
            .memo()
            .get("ab")
            .expect("the words of ab are kept");
        let words = words.as_ref().as_ref().expect("not refused");
        assert!(
            !words.frequent.is_empty() && !words.rare.is_empty(),
            "both kinds carried"
        );
    }

    #[test]
    fn an_entry_nobody_asks_for_stops_being_carried() {
        let mut random = Random(0xCA22_1ED1);
        let (_directory, shard) = scratch_shard();
        let operations = (0..200).map(|id| document(&mut random, id)).collect();
        shard.apply(1, operations).expect("the documents apply");
        let snapshot = shard.read().expect("a snapshot");
        ask_every_entry(&snapshot);
        drop(snapshot);
        let mut next_id = 200;
        for batch in 2..2 + u64::from(IDLE_COMMITS_MAX) + 1 {
            let mut prepared = shard.prepare(batch).expect("the batch opens");
            prepared
                .apply_chunk(random_batch(&mut random, &mut next_id))
                .expect("the chunk applies");
            shard
                .commit_warmed(prepared, Some(|_: &ShardSnapshot| {}))
                .expect("the batch commits");
        }
        let kept = ask_every_entry(&shard.read().expect("a snapshot"));
        assert_eq!(
            kept, 0,
            "entries idle for {IDLE_COMMITS_MAX} commits are dropped"
        );
    }
}
