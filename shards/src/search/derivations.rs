//! The dictionary words a query word matches: itself and the words one or two typos away (the
//! words a prefix word starts are read in one scan, see [`super::occurrences`]).
//!
//! Typo rules as Meilisearch's: a word allowed one typo matches words at Levenshtein distance 1
//! (a transposition counts as one) that start with the same first letter; a word allowed two
//! typos also matches words at distance 2 with the same first letter, and words at distance 1
//! whose first letter differs count as two typos. A prefix word measures distance against the
//! best prefix of the dictionary word. Numbers do not match numbers through typos when
//! `disableOnNumbers` is set.
//!
//! Invariant: the walk intersects the automaton with the dictionary's FST (see
//! [`super::dictionary`]) in byte order, so its cost follows the automaton's live states, not
//! the dictionary size. The numbers of
//! typo words are capped ([`ONE_TYPO_DERIVATIONS_MAX`], [`TWO_TYPOS_DERIVATIONS_MAX`]), each
//! level keeping its first words in byte order over the whole dictionary, as Meilisearch's one
//! stream keeps them: at two typos the other-letter words before the first letter's range are
//! walked first, then the range, then the words after it.

use std::sync::LazyLock;

use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder};

use crate::analysis::TextSettings;
use crate::index::inverted::prefix_end;

use super::dictionary::{Dictionary, LevenshteinSearch};

/// The automaton builders for one and two typos (transpositions count as one), made once per
/// process: a builder precomputes its parametric tables, which costs milliseconds at two
/// typos.
static AUTOMATON_BUILDERS: LazyLock<[LevenshteinAutomatonBuilder; 2]> = LazyLock::new(|| {
    [
        LevenshteinAutomatonBuilder::new(1, true),
        LevenshteinAutomatonBuilder::new(2, true),
    ]
});

/// The builder of automata accepting `distance` typos (1 or 2; more is capped at 2).
fn automaton_builder(distance: u8) -> &'static LevenshteinAutomatonBuilder {
    let [one, two] = &*AUTOMATON_BUILDERS;
    if distance <= 1 { one } else { two }
}

/// Most words at one typo per query word.
pub const ONE_TYPO_DERIVATIONS_MAX: usize = 150;
/// Most words at two typos per query word.
pub const TWO_TYPOS_DERIVATIONS_MAX: usize = 50;

/// One dictionary word a query word matches, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derivation {
    pub word: String,
    pub typos: u8,
    /// The query word itself (not a typo or synonym).
    pub exact: bool,
}

/// Everything one query word matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WordDerivations {
    pub words: Vec<Derivation>,
    /// Multi-word synonyms: phrases (stop-word holes are `None`).
    pub phrases: Vec<Vec<Option<String>>>,
}

fn first_letter(word: &str) -> &str {
    word.chars()
        .next()
        .map_or("", |character| &word[..character.len_utf8()])
}

fn is_number(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|character| character.is_ascii_digit())
}

/// Walks the words of `dictionary` in `[start, end)` accepted by `search`'s automaton, in
/// byte order, calling `found(word, distance)` until it returns `false`.
fn walk(
    dictionary: &Dictionary,
    search: LevenshteinSearch<'_>,
    start: &[u8],
    end: Option<&[u8]>,
    found: &mut dyn FnMut(&[u8], u8) -> bool,
) {
    let dfa = search.dfa;
    dictionary.walk_matches(
        search,
        start,
        end,
        &mut |key, state| match dfa.distance(state) {
            Distance::Exact(distance) => found(key, distance),
            Distance::AtLeast(_) => true,
        },
    );
}

/// Derives `word` against the shard's dictionary.
pub fn derive_word(
    dictionary: &Dictionary,
    settings: &TextSettings,
    word: &str,
    is_prefix: bool,
    typos_max: u8,
) -> WordDerivations {
    let mut derivations = WordDerivations::default();
    if dictionary.contains(word.as_bytes()) {
        derivations.words.push(Derivation {
            word: word.to_owned(),
            typos: 0,
            exact: true,
        });
    }
    if typos_max > 0 {
        typo_derivations(
            dictionary,
            settings,
            word,
            is_prefix,
            typos_max,
            &mut derivations,
        );
    }
    derivations
}

fn typo_derivations(
    dictionary: &Dictionary,
    settings: &TextSettings,
    word: &str,
    is_prefix: bool,
    typos_max: u8,
    derivations: &mut WordDerivations,
) {
    let skip_numbers = settings.typo_tolerance.disable_on_numbers;
    let build = |distance: u8| {
        let builder = automaton_builder(distance);
        if is_prefix {
            builder.build_prefix_dfa(word)
        } else {
            builder.build_dfa(word)
        }
    };
    let first = first_letter(word).as_bytes().to_vec();
    let first_end = prefix_end(&first);
    let mut recorder = TypoRecorder {
        typos_max,
        skip_numbers,
        one: 0,
        two: 0,
        derivations,
    };
    let same_letter = build(typos_max);
    // At two typos the words of both walks are taken in one byte order, as Meilisearch's one
    // stream over the dictionary takes them, so the capped two-typo words are the first in
    // byte order: the other-letter words before the first letter's range, then the range,
    // then the other-letter words after it.
    let other_letter = (typos_max >= 2).then(|| build(1));
    let other = other_letter.as_ref().map(|dfa| OtherLetterWalk {
        dfa,
        first: &first,
        is_prefix,
    });
    if let Some(other) = &other {
        other.walk(dictionary, &[], Some(&first), &mut recorder);
    }
    walk_same_letter(
        dictionary,
        &same_letter,
        &first,
        first_end.as_deref(),
        is_prefix,
        &mut recorder,
    );
    if let (Some(other), Some(after)) = (&other, first_end.as_deref()) {
        other.walk(dictionary, after, None, &mut recorder);
    }
}

/// Same first letter: the automaton's distance is the number of typos.
fn walk_same_letter(
    dictionary: &Dictionary,
    dfa: &levenshtein_automata::DFA,
    first: &[u8],
    first_end: Option<&[u8]>,
    is_prefix: bool,
    recorder: &mut TypoRecorder<'_>,
) {
    walk(
        dictionary,
        LevenshteinSearch {
            dfa,
            skip_exact_continuations: is_prefix,
        },
        first,
        first_end,
        &mut |key, distance| distance == 0 || recorder.record(key, distance),
    );
}

/// Another first letter: one edit away counts as two typos.
struct OtherLetterWalk<'a> {
    dfa: &'a levenshtein_automata::DFA,
    first: &'a [u8],
    is_prefix: bool,
}

impl OtherLetterWalk<'_> {
    /// Records the other-letter words of `[start, end)` until the two-typo level is full.
    fn walk(
        &self,
        dictionary: &Dictionary,
        start: &[u8],
        end: Option<&[u8]>,
        recorder: &mut TypoRecorder<'_>,
    ) {
        if recorder.two_typos_full() {
            return;
        }
        walk(
            dictionary,
            LevenshteinSearch {
                dfa: self.dfa,
                skip_exact_continuations: self.is_prefix,
            },
            start,
            end,
            &mut |key, distance| {
                if key.starts_with(self.first) || distance == 0 {
                    return true;
                }
                recorder.record(key, 2);
                !recorder.two_typos_full()
            },
        );
    }
}

/// The typo words of one query word, kept to the first [`ONE_TYPO_DERIVATIONS_MAX`] at one
/// typo and [`TWO_TYPOS_DERIVATIONS_MAX`] at two, in the order the walks find them.
struct TypoRecorder<'a> {
    typos_max: u8,
    skip_numbers: bool,
    one: usize,
    two: usize,
    derivations: &'a mut WordDerivations,
}

impl TypoRecorder<'_> {
    /// Records `key` at `typos` unless it is a skipped number or its level is full; returns
    /// whether a word at any level up to `typos_max` can still be recorded (once not, the
    /// walk can stop: every later word would be dropped).
    fn record(&mut self, key: &[u8], typos: u8) -> bool {
        if let Ok(derived) = std::str::from_utf8(key)
            && !(self.skip_numbers && is_number(derived))
        {
            let (counter, limit) = if typos == 1 {
                (&mut self.one, ONE_TYPO_DERIVATIONS_MAX)
            } else {
                (&mut self.two, TWO_TYPOS_DERIVATIONS_MAX)
            };
            if *counter < limit {
                *counter += 1;
                self.derivations.words.push(Derivation {
                    word: derived.to_owned(),
                    typos,
                    exact: false,
                });
            }
        }
        self.one < ONE_TYPO_DERIVATIONS_MAX || (self.typos_max >= 2 && !self.two_typos_full())
    }

    fn two_typos_full(&self) -> bool {
        self.two >= TWO_TYPOS_DERIVATIONS_MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Optimal string alignment distance (a transposition of neighbours counts as one edit),
    /// the distance the automata measure.
    fn edit_distance(query: &[u8], word: &[u8]) -> usize {
        let mut rows = vec![vec![0usize; word.len() + 1]; query.len() + 1];
        for (i, row) in rows.iter_mut().enumerate() {
            row[0] = i;
        }
        for (j, cell) in rows[0].iter_mut().enumerate() {
            *cell = j;
        }
        for i in 1..=query.len() {
            for j in 1..=word.len() {
                let substitution = usize::from(query[i - 1] != word[j - 1]);
                let mut best = (rows[i - 1][j] + 1)
                    .min(rows[i][j - 1] + 1)
                    .min(rows[i - 1][j - 1] + substitution);
                if i > 1 && j > 1 && query[i - 1] == word[j - 2] && query[i - 2] == word[j - 1] {
                    best = best.min(rows[i - 2][j - 2] + 1);
                }
                rows[i][j] = best;
            }
        }
        rows[query.len()][word.len()]
    }

    /// The typos a derivation counts at a budget of `typos_max`: the edit distance to the
    /// word, computed here; for a prefix, the distance the prefix automaton reports after
    /// reading the whole word (it stops improving at the closest prefix it can prove, which is
    /// what Meilisearch's typo rules count), evaluated word by word instead of by a walk.
    fn distance(query: &str, word: &str, is_prefix: bool, typos_max: u8) -> usize {
        if is_prefix {
            match automaton_builder(typos_max)
                .build_prefix_dfa(query)
                .eval(word)
            {
                Distance::Exact(typos) => usize::from(typos),
                Distance::AtLeast(_) => usize::MAX,
            }
        } else {
            edit_distance(query.as_bytes(), word.as_bytes())
        }
    }

    /// The derivations by brute force over every dictionary word, with the same caps and order.
    fn reference(
        words: &[String],
        word: &str,
        is_prefix: bool,
        typos_max: u8,
        skip_numbers: bool,
    ) -> Vec<Derivation> {
        let mut found = Vec::new();
        if words.iter().any(|known| known == word) {
            found.push(Derivation {
                word: word.to_owned(),
                typos: 0,
                exact: true,
            });
        }
        if typos_max == 0 {
            return found;
        }
        let first = word.as_bytes()[0];
        let mut counts = [0usize; 3];
        let mut push = |known: &String, typos: u8, found: &mut Vec<Derivation>| {
            let limit = if typos == 1 {
                ONE_TYPO_DERIVATIONS_MAX
            } else {
                TWO_TYPOS_DERIVATIONS_MAX
            };
            if (skip_numbers && is_number(known)) || counts[usize::from(typos)] >= limit {
                return;
            }
            counts[usize::from(typos)] += 1;
            found.push(Derivation {
                word: known.clone(),
                typos,
                exact: false,
            });
        };
        // One pass in byte order, as Meilisearch's stream: each level keeps its first words.
        let mut sorted: Vec<&String> = words.iter().collect();
        sorted.sort();
        for known in sorted {
            if known.as_bytes()[0] == first {
                let typos = distance(word, known, is_prefix, typos_max);
                if (1..=usize::from(typos_max)).contains(&typos) {
                    push(known, typos as u8, &mut found);
                }
            } else if typos_max >= 2 && distance(word, known, is_prefix, 1) == 1 {
                push(known, 2, &mut found);
            }
        }
        found
    }

    struct Random(u64);

    impl Random {
        fn below(&mut self, bound: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) % bound as u64) as usize
        }

        fn word(&mut self, alphabet: &[u8]) -> String {
            let length = 1 + self.below(9);
            (0..length)
                .map(|_| char::from(alphabet[self.below(alphabet.len())]))
                .collect()
        }
    }

    /// `words` as a dictionary: one FST in every third round, otherwise a base with a delta
    /// (a random part of the words added since the base, and words of the base removed
    /// since), so that derivations read through both FSTs and skip removed words.
    fn split_dictionary(
        words: &[String],
        round: usize,
        random: &mut Random,
        alphabet: &[u8],
    ) -> Dictionary {
        let set = |words: &std::collections::BTreeSet<String>| {
            fst::Set::from_iter(words.iter()).expect("sorted unique words")
        };
        let all: std::collections::BTreeSet<String> = words.iter().cloned().collect();
        if round % 3 == 0 {
            return Dictionary::from_words(set(&all));
        }
        let added: std::collections::BTreeSet<String> = all
            .iter()
            .filter(|_| random.below(4) == 0)
            .cloned()
            .collect();
        let removed: std::collections::BTreeSet<String> = (0..random.below(500))
            .map(|_| random.word(alphabet))
            .filter(|word| !all.contains(word))
            .collect();
        let base: std::collections::BTreeSet<String> = all
            .difference(&added)
            .chain(removed.iter())
            .cloned()
            .collect();
        Dictionary::with_delta(std::sync::Arc::new(set(&base)), set(&added), set(&removed))
    }

    /// Small alphabets make dense dictionaries, so the caps, the prefix walks' skipped
    /// subtrees and the early stops are all reached.
    #[test]
    fn derivations_equal_a_brute_force_over_the_dictionary() {
        let mut random = Random(0x5eed);
        let mut capped = [0usize; 3];
        for round in 0..40 {
            let alphabet: &[u8] = if round % 2 == 0 { b"abc1" } else { b"abcde" };
            let mut words: Vec<String> = (0..200 + random.below(4_000))
                .map(|_| random.word(alphabet))
                .collect();
            words.sort();
            words.dedup();
            let dictionary = split_dictionary(&words, round, &mut random, alphabet);
            let mut settings = TextSettings::default();
            settings.typo_tolerance.disable_on_numbers = round % 4 == 0;
            for _ in 0..30 {
                let word = if random.below(3) == 0 {
                    words[random.below(words.len())].clone()
                } else {
                    random.word(alphabet)
                };
                let is_prefix = random.below(2) == 0;
                let typos_max = random.below(3) as u8;
                let derived = derive_word(&dictionary, &settings, &word, is_prefix, typos_max);
                let expected = reference(
                    &words,
                    &word,
                    is_prefix,
                    typos_max,
                    settings.typo_tolerance.disable_on_numbers,
                );
                for typos in 1..=2u8 {
                    let limit = [0, ONE_TYPO_DERIVATIONS_MAX, TWO_TYPOS_DERIVATIONS_MAX];
                    let count = expected.iter().filter(|found| found.typos == typos).count();
                    capped[usize::from(typos)] += usize::from(count == limit[usize::from(typos)]);
                }
                let missing: Vec<_> = expected
                    .iter()
                    .filter(|derivation| !derived.words.contains(derivation))
                    .collect();
                let extra: Vec<_> = derived
                    .words
                    .iter()
                    .filter(|derivation| !expected.contains(derivation))
                    .collect();
                assert_eq!(
                    derived.words, expected,
                    "round {round}: {word:?} prefix {is_prefix} typos {typos_max}: \
                     missing {missing:?}, extra {extra:?}"
                );
            }
        }
        assert!(
            capped[1] > 0 && capped[2] > 0,
            "both caps reached: {capped:?}"
        );
    }
}
