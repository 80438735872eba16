//! The words a flush writes, in the two orders the word trees' keys sort them by.
//!
//! `word_documents` is keyed by the word: byte order. The trees keyed by word ‖ `0xFF` ‖
//! suffix (`word_fields`, `word_position_buckets`, `word_position_chunks`, and `word_pairs` by
//! its left word) sort a word after the longer words it starts: terminated order (see
//! [`crate::index::inverted::terminated_order`]). A flush records its changes by word number
//! (the order the batch met the words); the vocabulary gives each number its rank in both
//! orders, so the changes can be sorted by plain integers, and holds the words themselves in
//! byte order, so that the writing, which goes through the keys in order, reads them from one
//! array front to back rather than from wherever each word was recorded.
//!
//! Invariants: the words are distinct; `sorted` is in byte order; the ranks are permutations
//! of `0..len`, consistent with `sorted`.

use compact_str::CompactString;

use crate::index::inverted::terminated_order;

/// A flush's words with their ranks.
#[derive(Debug, Default)]
pub(super) struct Vocabulary {
    /// The words in byte order.
    sorted: Vec<CompactString>,
    /// By word number: the rank in byte order (the word's place in `sorted`).
    byte_ranks: Vec<u32>,
    /// By word number: the rank in terminated order.
    terminated_ranks: Vec<u32>,
    /// By rank in terminated order: the rank in byte order.
    terminated_to_byte: Vec<u32>,
}

impl Vocabulary {
    /// The vocabulary of `words`, given by number (distinct).
    pub fn new(words: Vec<CompactString>) -> Vocabulary {
        let count = u32::try_from(words.len()).expect("word numbers are u32");
        let mut entries: Vec<(CompactString, u32)> = words.into_iter().zip(0..count).collect();
        // In place, the short words are compared where the entries are.
        turns::sort_unstable_by(&mut entries, |left, right| left.0.cmp(&right.0));
        let mut byte_ranks = vec![0; entries.len()];
        let mut numbers = Vec::with_capacity(entries.len());
        let mut sorted = Vec::with_capacity(entries.len());
        for (rank, (word, number)) in (0..count).zip(entries) {
            turns::checkpoint_at(rank as usize);
            byte_ranks[number as usize] = rank;
            numbers.push(number);
            sorted.push(word);
        }
        // Terminated order moves a word only past the longer words it starts: byte order is
        // almost that order already, which a merge sort takes in about one pass.
        let mut terminated_to_byte: Vec<u32> = (0..count).collect();
        turns::sort_by(&mut terminated_to_byte, |left, right| {
            terminated_order(&sorted[*left as usize], &sorted[*right as usize])
        });
        let mut terminated_ranks = vec![0; sorted.len()];
        for (rank, byte_rank) in (0..count).zip(&terminated_to_byte) {
            terminated_ranks[numbers[*byte_rank as usize] as usize] = rank;
        }
        Vocabulary {
            sorted,
            byte_ranks,
            terminated_ranks,
            terminated_to_byte,
        }
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The word of rank `byte_rank` in byte order.
    pub fn word(&self, byte_rank: u32) -> &str {
        &self.sorted[byte_rank as usize]
    }

    /// The rank in byte order of the word numbered `number`.
    pub fn byte_rank(&self, number: u32) -> u32 {
        self.byte_ranks[number as usize]
    }

    /// The rank in terminated order of the word numbered `number`.
    pub fn terminated_rank(&self, number: u32) -> u32 {
        self.terminated_ranks[number as usize]
    }

    /// The rank in byte order of the word of rank `terminated_rank` in terminated order.
    pub fn byte_rank_of_terminated(&self, terminated_rank: u32) -> u32 {
        self.terminated_to_byte[terminated_rank as usize]
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;
    use crate::test_random::Random;

    /// The order of two words as keys of the trees keyed by word ‖ `0xFF` ‖ suffix.
    fn key_order(left: &str, right: &str) -> Ordering {
        let key = |word: &str| [word.as_bytes(), &[0xFF]].concat();
        key(left).cmp(&key(right))
    }

    #[test]
    fn ranks_follow_both_key_orders_for_words_that_start_one_another() {
        let mut random = Random(0x0051_CE0F_CAFE);
        let alphabet = ["a", "b", "é", "ab", "z"];
        for _ in 0..50 {
            let mut words: Vec<String> = Vec::new();
            for _ in 0..random.below(60) {
                let length = 1 + random.below(4);
                let word: String = (0..length)
                    .map(|_| alphabet[random.below(alphabet.len() as u64) as usize])
                    .collect();
                if !words.contains(&word) {
                    words.push(word);
                }
            }
            let vocabulary = Vocabulary::new(
                words
                    .iter()
                    .map(|word| CompactString::from(word.as_str()))
                    .collect(),
            );
            assert_eq!(vocabulary.len(), words.len());
            let mut by_bytes: Vec<usize> = (0..words.len()).collect();
            by_bytes.sort_by(|left, right| words[*left].cmp(&words[*right]));
            let mut by_keys: Vec<usize> = (0..words.len()).collect();
            by_keys.sort_by(|left, right| key_order(&words[*left], &words[*right]));
            for (rank, number) in by_bytes.iter().enumerate() {
                assert_eq!(vocabulary.byte_rank(*number as u32), rank as u32);
                assert_eq!(vocabulary.word(rank as u32), words[*number]);
            }
            for (rank, number) in by_keys.iter().enumerate() {
                assert_eq!(vocabulary.terminated_rank(*number as u32), rank as u32);
                let byte_rank = vocabulary.byte_rank_of_terminated(rank as u32);
                assert_eq!(vocabulary.word(byte_rank), words[*number]);
            }
        }
    }
}
