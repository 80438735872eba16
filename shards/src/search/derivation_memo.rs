//! The typo derivations already worked out on one commit's dictionary, so that a query word
//! is derived once per commit rather than once per search: a derivation walks the dictionary
//! with a Levenshtein automaton (tens of microseconds at one typo, about a millisecond at two),
//! and a search derives each query word on every shard.
//!
//! The memo is a two-generation cache bounded in bytes: entries go to the current generation;
//! when it would pass [`GENERATION_BYTES_MAX`] it becomes the previous one (the older previous
//! generation is dropped) and a new one starts. A word found in the previous generation moves
//! back to the current one, so words searched again and again stay while a stream of one-off
//! words evicts only other one-off words.
//!
//! A commit's memo may inherit the memo of the commit before it, with the words the batch
//! between changed ([`DerivationMemo::inherit`]): a word not derived on this commit yet but
//! derived on the one before is then carried over the change (see [`super::derivation_carry`])
//! instead of walked again. Only one commit back: inheriting takes the earlier memo's own
//! inheritance away, so no chain of old memos stays alive. So a memo is settled
//! ([`DerivationMemo::settle`]: what it can carry from its inheritance is carried into it for
//! good) when its batch commits, before searches see the commit, and what that left undone
//! before the next commit inherits it. Without that, a word searched two commits back
//! but not on the commit just before was lost whenever two batches committed with few
//! searches between them, as at the end of an import: in `search_under_writes`, the first
//! 5 s after the last task spent 10 % of their samples walking the dictionary again, against
//! 0.5 % once warm (`tuning/results/derivation-settle-2026-11-27.md`).
//!
//! Invariants: the memo lives in a commit's view ([`crate::shard::ShardSnapshot`] shares it),
//! so an entry never outlives the dictionary and text settings it was derived from; an entry
//! is exactly what [`derive_word`] returns for its key; the bytes counted for a generation
//! are an estimate of the heap it holds and never exceed [`GENERATION_BYTES_MAX`] plus one
//! entry; the two generations' bytes are what the memo charged to its [`CacheAccount`] and
//! not released (an entry the process's cache budget has no room for is not kept).

use std::collections::HashMap;
use std::mem::size_of;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::analysis::TextSettings;
use crate::cache_meter::CacheAccount;

use super::derivation_carry::{DictionaryDelta, QueryWord, carry};
use super::derivations::{Derivation, WordDerivations, derive_word};
use super::dictionary::Dictionary;

/// Most bytes (estimated) of derivations one generation holds; the memo holds at most two.
pub const GENERATION_BYTES_MAX: usize = 4 << 20;

/// Longest a commit's batch spends settling the memo of the commit before (see
/// [`DerivationMemo::settle`]); a carry started before it ends runs to its end.
pub const SETTLE_TIME_MAX: Duration = Duration::from_millis(500);

/// What a derivation depends on besides the commit: the word, whether it is a prefix, and
/// its typo budget.
type DerivationKey = (String, bool, u8);

type Generation = HashMap<DerivationKey, Arc<WordDerivations>>;

struct Generations {
    current: Generation,
    current_bytes: usize,
    previous: Generation,
    previous_bytes: usize,
    account: Arc<CacheAccount>,
}

/// The derivations known on one commit.
pub struct DerivationMemo {
    generations: Mutex<Generations>,
    inherited: Mutex<Option<Inheritance>>,
}

impl Default for DerivationMemo {
    /// Outside any cache budget.
    fn default() -> Self {
        DerivationMemo::charging(CacheAccount::unbounded())
    }
}

/// The memo of the commit before, and the words changed since.
struct Inheritance {
    earlier: Arc<DerivationMemo>,
    delta: Arc<DictionaryDelta>,
}

impl DerivationMemo {
    /// An empty memo whose entries are charged to `account`.
    pub fn charging(account: Arc<CacheAccount>) -> Self {
        DerivationMemo {
            generations: Mutex::new(Generations {
                current: Generation::new(),
                current_bytes: 0,
                previous: Generation::new(),
                previous_bytes: 0,
                account,
            }),
            inherited: Mutex::new(None),
        }
    }

    /// [`derive_word`], remembered.
    pub fn derive(
        &self,
        dictionary: &Dictionary,
        settings: &TextSettings,
        word: &str,
        is_prefix: bool,
        typos_max: u8,
    ) -> Arc<WordDerivations> {
        let key = (word.to_owned(), is_prefix, typos_max);
        if let Some(known) = self.lock().find(&key) {
            return known;
        }
        let derived = Arc::new(
            self.carried(&key, dictionary, settings)
                .unwrap_or_else(|| derive_word(dictionary, settings, word, is_prefix, typos_max)),
        );
        self.lock().insert(key, Arc::clone(&derived));
        derived
    }

    /// Whether nothing was derived on this commit yet (nothing to carry to the next one).
    pub fn is_empty(&self) -> bool {
        let generations = self.lock();
        generations.current.is_empty() && generations.previous.is_empty()
    }

    /// Carries into this memo every derivation its inheritance (see
    /// [`DerivationMemo::inherit`]) holds and this memo lacks, over the inheritance's delta to
    /// `dictionary` (this memo's commit's), until `deadline`; answers how many it carried.
    /// The earlier memo's previous generation goes first, so that its current one stays the
    /// more recent here too. A derivation the carry cannot make exact is left to be derived
    /// afresh when asked for. A settle that runs to its end lets the inheritance go: all it
    /// could carry is here, and the carry would refuse the rest again, so the next settle of
    /// this memo (before a later commit inherits it) finds nothing to do. Searches may derive
    /// on this memo meanwhile: an entry is exact, so whichever of two equal values is kept
    /// does not matter.
    pub fn settle(
        &self,
        dictionary: &Dictionary,
        settings: &TextSettings,
        deadline: Instant,
    ) -> usize {
        let Some((earlier, delta)) = self.inheritance() else {
            return 0;
        };
        let known: Vec<(DerivationKey, Arc<WordDerivations>)> = {
            let generations = earlier.lock();
            generations
                .previous
                .iter()
                .chain(&generations.current)
                .map(|(key, derived)| (key.clone(), Arc::clone(derived)))
                .collect()
        };
        let mut carried = 0;
        for (key, derived) in known {
            turns::checkpoint();
            if Instant::now() >= deadline {
                return carried;
            }
            if self.lock().contains(&key) {
                continue;
            }
            if let Some(value) = carry(&derived, &delta, dictionary, settings, &query_of(&key)) {
                self.lock().insert(key, Arc::new(value));
                carried += 1;
            }
        }
        lock(&self.inherited).take();
        carried
    }

    /// Makes `earlier` (the memo of the commit just before this one, with the same text
    /// settings) the memo this one carries derivations from, `delta` being the words the
    /// commit between changed. `earlier` forgets what it inherited itself.
    pub fn inherit(&self, earlier: &Arc<DerivationMemo>, delta: Arc<DictionaryDelta>) {
        debug_assert!(!std::ptr::eq(self, &**earlier), "a memo inherits another's");
        lock(&earlier.inherited).take();
        *lock(&self.inherited) = Some(Inheritance {
            earlier: Arc::clone(earlier),
            delta,
        });
    }

    /// The derivation of `key` on the commit before, carried to `dictionary`, when that
    /// commit derived it and the carry is exact.
    fn carried(
        &self,
        key: &DerivationKey,
        dictionary: &Dictionary,
        settings: &TextSettings,
    ) -> Option<WordDerivations> {
        let (earlier, delta) = self.inheritance()?;
        let known = earlier.lock().find(key)?;
        carry(&known, &delta, dictionary, settings, &query_of(key))
    }

    /// The memo this one inherited and the delta since, shared, when it inherited one.
    fn inheritance(&self) -> Option<(Arc<DerivationMemo>, Arc<DictionaryDelta>)> {
        lock(&self.inherited).as_ref().map(|inheritance| {
            (
                Arc::clone(&inheritance.earlier),
                Arc::clone(&inheritance.delta),
            )
        })
    }

    fn lock(&self) -> MutexGuard<'_, Generations> {
        lock(&self.generations)
    }
}

/// The query word a derivation's key names.
fn query_of(key: &DerivationKey) -> QueryWord<'_> {
    QueryWord {
        word: &key.0,
        is_prefix: key.1,
        typos_max: key.2,
    }
}

/// `mutex` locked: a panic while holding either lock of the memo leaves whole values only.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Generations {
    /// Whether either generation holds `key` (without moving it).
    fn contains(&self, key: &DerivationKey) -> bool {
        self.current.contains_key(key) || self.previous.contains_key(key)
    }

    /// The entry of `key`, moved to the current generation when found in the previous one.
    fn find(&mut self, key: &DerivationKey) -> Option<Arc<WordDerivations>> {
        if let Some(known) = self.current.get(key) {
            return Some(Arc::clone(known));
        }
        let (key, known) = self.previous.remove_entry(key)?;
        // Charged already: the bytes move from one generation to the other.
        let bytes = entry_bytes(&key, &known);
        self.previous_bytes = self.previous_bytes.saturating_sub(bytes);
        self.place(key, Arc::clone(&known), bytes);
        Some(known)
    }

    /// Keeps a new entry if the cache budget has room for it.
    fn insert(&mut self, key: DerivationKey, derived: Arc<WordDerivations>) {
        let bytes = entry_bytes(&key, &derived);
        if self.account.try_charge(bytes) {
            self.place(key, derived, bytes);
        }
    }

    /// Puts an entry of `bytes`, charged already, in the current generation, starting a new
    /// one when it would pass its bound.
    fn place(&mut self, key: DerivationKey, derived: Arc<WordDerivations>, bytes: usize) {
        if self.current_bytes + bytes > GENERATION_BYTES_MAX && !self.current.is_empty() {
            self.account.release(self.previous_bytes);
            self.previous = std::mem::take(&mut self.current);
            self.previous_bytes = std::mem::take(&mut self.current_bytes);
        }
        self.current_bytes += bytes;
        self.current.insert(key, derived);
    }
}

impl Drop for Generations {
    fn drop(&mut self) {
        self.account
            .release(self.current_bytes + self.previous_bytes);
    }
}

/// An estimate of the heap one entry holds: its key, the map slot, and each derived word.
fn entry_bytes(key: &DerivationKey, derived: &WordDerivations) -> usize {
    let words: usize = derived
        .words
        .iter()
        .map(|derivation| size_of::<Derivation>() + derivation.word.len())
        .sum();
    let phrases: usize = derived
        .phrases
        .iter()
        .flatten()
        .map(|word| size_of::<Option<String>>() + word.as_ref().map_or(0, String::len))
        .sum();
    key.0.len()
        + size_of::<(DerivationKey, Arc<WordDerivations>)>()
        + size_of::<WordDerivations>()
        + words
        + phrases
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(word: &str) -> (DerivationKey, Arc<WordDerivations>) {
        let derived = WordDerivations {
            words: vec![Derivation {
                word: word.to_owned(),
                typos: 0,
                exact: true,
            }],
            phrases: Vec::new(),
        };
        ((word.to_owned(), false, 0), Arc::new(derived))
    }

    fn dictionary(words: &[&str]) -> Dictionary {
        let words: std::collections::BTreeSet<&str> = words.iter().copied().collect();
        Dictionary::from_words(fst::Set::from_iter(words).expect("sorted unique words"))
    }

    fn words(words: &[&str]) -> crate::search::dictionary::WordSet {
        fst::Set::from_iter(
            words
                .iter()
                .copied()
                .collect::<std::collections::BTreeSet<_>>(),
        )
        .expect("sorted unique words")
    }

    #[test]
    fn a_memo_carries_what_the_commit_before_derived_and_only_one_commit_back() {
        let settings = TextSettings::default();
        let first = dictionary(&["hello", "help", "hallo", "world"]);
        let second = dictionary(&["hello", "hallo", "hells", "world"]);
        let third = dictionary(&["hello", "hells", "world", "yellow"]);
        let earliest = Arc::new(DerivationMemo::default());
        earliest.derive(&first, &settings, "hello", false, 2);
        let earlier = Arc::new(DerivationMemo::default());
        earlier.inherit(
            &earliest,
            Arc::new(DictionaryDelta::new(words(&["hells"]), words(&["help"]))),
        );
        let key = ("hello".to_owned(), false, 2);
        let carried = earlier
            .carried(&key, &second, &settings)
            .expect("derived on the commit before");
        assert_eq!(carried, derive_word(&second, &settings, "hello", false, 2));
        assert_eq!(
            *earlier.derive(&second, &settings, "hello", false, 2),
            carried
        );
        assert!(
            earlier
                .carried(&("world".to_owned(), false, 2), &second, &settings)
                .is_none(),
            "a word the commit before did not derive is not carried"
        );
        let latest = DerivationMemo::default();
        latest.inherit(
            &earlier,
            Arc::new(DictionaryDelta::new(words(&["yellow"]), words(&["hallo"]))),
        );
        assert!(
            lock(&earlier.inherited).is_none(),
            "inheriting takes the earlier memo's own inheritance away"
        );
        assert_eq!(
            *latest.derive(&third, &settings, "hello", false, 2),
            derive_word(&third, &settings, "hello", false, 2)
        );
    }

    #[test]
    fn a_settled_memo_passes_on_what_it_only_inherited() {
        let settings = TextSettings::default();
        let first = dictionary(&["hello", "help", "hallo", "world", "word"]);
        let second = dictionary(&["hello", "hallo", "hells", "world", "word"]);
        let third = dictionary(&["hello", "hells", "world", "word", "yellow"]);
        let earliest = Arc::new(DerivationMemo::default());
        earliest.derive(&first, &settings, "hello", false, 2);
        earliest.derive(&first, &settings, "worl", true, 1);
        // Nobody searches the middle commit: its memo holds nothing of its own.
        let earlier = Arc::new(DerivationMemo::default());
        assert_eq!(
            earlier.settle(&second, &settings, Instant::now() + SETTLE_TIME_MAX),
            0,
            "nothing inherited, nothing to settle"
        );
        earlier.inherit(
            &earliest,
            Arc::new(DictionaryDelta::new(words(&["hells"]), words(&["help"]))),
        );
        assert!(earlier.is_empty());
        assert_eq!(
            earlier.settle(&second, &settings, Instant::now()),
            0,
            "deadline past"
        );
        assert_eq!(
            earlier.settle(&second, &settings, Instant::now() + SETTLE_TIME_MAX),
            2
        );
        for (word, is_prefix, typos) in [("hello", false, 2), ("worl", true, 1)] {
            let key = (word.to_owned(), is_prefix, typos);
            let settled = earlier.lock().find(&key).expect("settled");
            assert_eq!(
                *settled,
                derive_word(&second, &settings, word, is_prefix, typos)
            );
        }
        let latest = DerivationMemo::default();
        latest.inherit(
            &earlier,
            Arc::new(DictionaryDelta::new(words(&["yellow"]), words(&["hallo"]))),
        );
        let carried = latest
            .carried(&("hello".to_owned(), false, 2), &third, &settings)
            .expect("carried two commits on, through the settled memo");
        assert_eq!(carried, derive_word(&third, &settings, "hello", false, 2));
    }

    #[test]
    fn a_word_found_again_survives_a_stream_of_new_words() {
        let meter = crate::cache_meter::CacheMeter::unbounded();
        let mut generations = Generations {
            current: Generation::new(),
            current_bytes: 0,
            previous: Generation::new(),
            previous_bytes: 0,
            account: CacheAccount::on(Arc::clone(&meter)),
        };
        let (kept_key, kept) = entry("kept");
        generations.insert(kept_key.clone(), kept);
        let per_entry = generations.current_bytes;
        let entries_per_generation = GENERATION_BYTES_MAX / per_entry;
        for round in 0..5 * entries_per_generation {
            let (key, derived) = entry(&format!("w{round:07}"));
            generations.insert(key, derived);
            if round % (entries_per_generation / 2) == 0 {
                assert!(generations.find(&kept_key).is_some(), "round {round}");
            }
            assert!(generations.current_bytes <= GENERATION_BYTES_MAX);
        }
        assert!(generations.find(&kept_key).is_some());
        let (first_key, _) = entry("w0000000");
        assert!(
            generations.find(&first_key).is_none(),
            "an entry never found again is dropped after two generations"
        );
        assert_eq!(
            meter.held(),
            generations.current_bytes + generations.previous_bytes,
            "the account holds what the two generations count"
        );
        drop(generations);
        assert_eq!(meter.held(), 0);
    }

    #[test]
    fn a_derivation_past_the_cache_budget_is_answered_but_not_kept() {
        let meter = crate::cache_meter::CacheMeter::with_budget(1);
        let memo = DerivationMemo::charging(CacheAccount::on(Arc::clone(&meter)));
        let dictionary = dictionary(&["hello"]);
        let settings = TextSettings::default();
        let derived = memo.derive(&dictionary, &settings, "hello", false, 1);
        assert_eq!(
            *derived,
            derive_word(&dictionary, &settings, "hello", false, 1)
        );
        assert!(memo.is_empty(), "nothing kept within a budget of one byte");
        assert_eq!((meter.held(), meter.refused()), (0, 1));
    }
}
