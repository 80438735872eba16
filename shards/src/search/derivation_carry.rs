//! Carrying a query word's derivation from one commit's dictionary to the next, so that a
//! commit's first searches do not walk the whole dictionary again for words the commit before
//! already derived: the walk at two typos costs about a millisecond per word and shard, and
//! under a steady stream of writes every commit would pay it for every word searched.
//!
//! A derivation is a pure function of the dictionary: at each typo level, the first words in
//! byte order that the level's automata accept, up to the level's cap (see
//! [`super::derivations`]). The next commit's dictionary is the earlier one with the words
//! the batch created and without those it deleted ([`DictionaryDelta`]). So each level of the
//! carried derivation is the earlier level's words minus the deleted ones, merged in byte
//! order with the created words the same automata accept (a derivation over the small
//! dictionary of created words alone), and cut at the cap again.
//!
//! That is exact unless the earlier level stopped at its cap: the words after its last one
//! were never read. The carried level is then exact only when at least a cap's worth of its
//! words sort no later than that last word; otherwise (deletions opened slots that only a new
//! walk can fill) [`carry`] answers `None` and the word is derived afresh.
//!
//! Invariant: [`carry`]`(derive_word(before), delta, after)` is either `None` or equal to
//! `derive_word(after)`, for `after` = `before` with `delta` applied and the same text
//! settings (checked against a brute force in the tests).

use std::cmp::Ordering;

use crate::analysis::TextSettings;

use super::derivations::{
    Derivation, ONE_TYPO_DERIVATIONS_MAX, TWO_TYPOS_DERIVATIONS_MAX, WordDerivations, derive_word,
};
use super::dictionary::{Dictionary, WordSet};

/// The words one commit created in and deleted from the dictionary of the commit before it.
pub struct DictionaryDelta {
    /// The created words, none of them in the earlier dictionary, as a dictionary of their own.
    created: Dictionary,
    /// The deleted words, all of them in the earlier dictionary.
    deleted: WordSet,
}

impl DictionaryDelta {
    /// A delta of `created` (words the earlier dictionary lacks) and `deleted` (words it has).
    pub fn new(created: WordSet, deleted: WordSet) -> DictionaryDelta {
        DictionaryDelta {
            created: Dictionary::from_words(created),
            deleted,
        }
    }
}

/// The query word's key: the word, whether it is a prefix, its typo budget.
pub struct QueryWord<'a> {
    pub word: &'a str,
    pub is_prefix: bool,
    pub typos_max: u8,
}

/// `earlier` (the derivation of `query` on the dictionary before `delta`) carried to
/// `dictionary` (the one after), or `None` when only a new walk can tell (see the module
/// documentation).
pub fn carry(
    earlier: &WordDerivations,
    delta: &DictionaryDelta,
    dictionary: &Dictionary,
    settings: &TextSettings,
    query: &QueryWord<'_>,
) -> Option<WordDerivations> {
    debug_assert!(
        earlier.phrases.is_empty(),
        "derivations hold no synonym phrases"
    );
    let created = derive_word(
        &delta.created,
        settings,
        query.word,
        query.is_prefix,
        query.typos_max,
    );
    let one = carried_level(earlier, &created, delta, 1, ONE_TYPO_DERIVATIONS_MAX)?;
    let two = carried_level(earlier, &created, delta, 2, TWO_TYPOS_DERIVATIONS_MAX)?;
    let mut carried = WordDerivations::default();
    if dictionary.contains(query.word.as_bytes()) {
        carried.words.push(Derivation {
            word: query.word.to_owned(),
            typos: 0,
            exact: true,
        });
    }
    carried.words.extend(merged_in_byte_order(one, two));
    Some(carried)
}

/// The words of one typo level after the delta, in byte order, or `None` when the earlier
/// level was cut at `cap` and too few words before its cut remain.
fn carried_level(
    earlier: &WordDerivations,
    created: &WordDerivations,
    delta: &DictionaryDelta,
    typos: u8,
    cap: usize,
) -> Option<Vec<Derivation>> {
    let earlier_level: Vec<&Derivation> = level(earlier, typos).collect();
    let cut_after = (earlier_level.len() >= cap)
        .then(|| earlier_level.last().map(|last| last.word.clone()))
        .flatten();
    let kept = earlier_level
        .into_iter()
        .filter(|derivation| !delta.deleted.contains(derivation.word.as_bytes()))
        .cloned();
    let mut words: Vec<Derivation> = merged_in_byte_order(kept, level(created, typos).cloned())
        .filter(|derivation| {
            cut_after
                .as_deref()
                .is_none_or(|last| derivation.word.as_str() <= last)
        })
        .take(cap)
        .collect();
    if cut_after.is_some() && words.len() < cap {
        return None;
    }
    words.shrink_to_fit();
    Some(words)
}

/// The typo words of `derivations` at `typos` typos, in byte order.
fn level(derivations: &WordDerivations, typos: u8) -> impl Iterator<Item = &Derivation> {
    derivations
        .words
        .iter()
        .filter(move |derivation| !derivation.exact && derivation.typos == typos)
}

/// Two byte-ordered runs of distinct words merged into one byte-ordered run.
fn merged_in_byte_order(
    left: impl IntoIterator<Item = Derivation>,
    right: impl IntoIterator<Item = Derivation>,
) -> impl Iterator<Item = Derivation> {
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    std::iter::from_fn(move || match (left.peek(), right.peek()) {
        (Some(first), Some(second)) => match first.word.cmp(&second.word) {
            Ordering::Greater => right.next(),
            Ordering::Less | Ordering::Equal => left.next(),
        },
        (Some(_), None) => left.next(),
        (None, _) => right.next(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::test_random::Random;

    fn word(random: &mut Random, alphabet: &[u8]) -> String {
        let length = 1 + random.below(8);
        (0..length)
            .map(|_| char::from(alphabet[random.below(alphabet.len() as u64) as usize]))
            .collect()
    }

    fn set(words: &BTreeSet<String>) -> WordSet {
        fst::Set::from_iter(words.iter()).expect("sorted unique words")
    }

    /// Dense dictionaries over small alphabets, so both caps are reached and deletions open
    /// slots under them; every carried derivation must equal a fresh one on the dictionary
    /// after the delta, and most must be carried.
    #[test]
    fn a_carried_derivation_equals_a_fresh_one_on_the_next_dictionary() {
        let mut random = Random(0xca77);
        let (mut carried, mut refused) = (0usize, 0usize);
        for round in 0..40 {
            let alphabet: &[u8] = if round % 2 == 0 { b"abc1" } else { b"abcde" };
            let before: BTreeSet<String> = (0..200 + random.below(3_000))
                .map(|_| word(&mut random, alphabet))
                .collect();
            let deleted: BTreeSet<String> = before
                .iter()
                .filter(|_| random.below(100) < 1 + round % 20)
                .cloned()
                .collect();
            let created: BTreeSet<String> = (0..random.below(400))
                .map(|_| word(&mut random, alphabet))
                .filter(|candidate| !before.contains(candidate))
                .collect();
            let after: BTreeSet<String> = before
                .difference(&deleted)
                .chain(created.iter())
                .cloned()
                .collect();
            let (before_dictionary, after_dictionary) = (
                Dictionary::from_words(set(&before)),
                Dictionary::from_words(set(&after)),
            );
            let delta = DictionaryDelta::new(set(&created), set(&deleted));
            let mut settings = TextSettings::default();
            settings.typo_tolerance.disable_on_numbers = round % 4 == 0;
            for _ in 0..30 {
                let query = word(&mut random, alphabet);
                let query = QueryWord {
                    word: &query,
                    is_prefix: random.below(2) == 0,
                    typos_max: random.below(3) as u8,
                };
                let derive = |dictionary: &Dictionary| {
                    derive_word(
                        dictionary,
                        &settings,
                        query.word,
                        query.is_prefix,
                        query.typos_max,
                    )
                };
                let earlier = derive(&before_dictionary);
                match carry(&earlier, &delta, &after_dictionary, &settings, &query) {
                    Some(words) => {
                        carried += 1;
                        assert_eq!(
                            words,
                            derive(&after_dictionary),
                            "round {round}: {:?} prefix {} typos {}",
                            query.word,
                            query.is_prefix,
                            query.typos_max
                        );
                    }
                    None => refused += 1,
                }
            }
        }
        assert!(refused > 0, "some cut levels could not be carried");
        assert!(
            carried > 10 * refused,
            "most derivations are carried: {carried} carried, {refused} refused"
        );
    }

    /// Every word of two and three letters starting with "b": far more than a cap's worth
    /// are one typo from "ba", so its one-typo level is cut at the cap.
    fn crowded_dictionary() -> BTreeSet<String> {
        let letters: Vec<char> = ('a'..='z').chain('A'..='Z').chain('0'..='9').collect();
        let mut words = BTreeSet::new();
        for second in &letters {
            words.insert(format!("b{second}"));
            for third in &letters {
                words.insert(format!("b{second}{third}"));
            }
        }
        words
    }

    #[test]
    fn a_level_cut_at_its_cap_is_refused_once_deletions_leave_it_short() {
        let settings = TextSettings::default();
        let query = QueryWord {
            word: "ba",
            is_prefix: false,
            typos_max: 1,
        };
        let before = crowded_dictionary();
        let earlier = derive_word(
            &Dictionary::from_words(set(&before)),
            &settings,
            "ba",
            false,
            1,
        );
        let one_typo: Vec<&Derivation> = level(&earlier, 1).collect();
        assert_eq!(one_typo.len(), ONE_TYPO_DERIVATIONS_MAX, "the level is cut");
        let deleted: BTreeSet<String> = [one_typo[0].word.clone()].into_iter().collect();
        let after: BTreeSet<String> = before.difference(&deleted).cloned().collect();
        let only_deleted = DictionaryDelta::new(WordSet::default(), set(&deleted));
        let after_dictionary = Dictionary::from_words(set(&after));
        assert!(
            carry(
                &earlier,
                &only_deleted,
                &after_dictionary,
                &settings,
                &query
            )
            .is_none(),
            "the slot a deletion opened is filled only by a word after the cut"
        );
        // A created word before the cut fills the slot again: carried, and exact.
        let created: BTreeSet<String> = ["ba-".to_owned()].into_iter().collect();
        assert!(
            created
                .iter()
                .all(|word| word.as_str() < one_typo[149].word.as_str())
        );
        let refilled: BTreeSet<String> = after.union(&created).cloned().collect();
        let refilled_dictionary = Dictionary::from_words(set(&refilled));
        let delta = DictionaryDelta::new(set(&created), set(&deleted));
        assert_eq!(
            carry(&earlier, &delta, &refilled_dictionary, &settings, &query),
            Some(derive_word(&refilled_dictionary, &settings, "ba", false, 1))
        );
    }
}
