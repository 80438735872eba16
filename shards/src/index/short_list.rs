//! The short form of a stored bitmap of a few ids: a tag byte, then the smallest id and each
//! following id's distance from the one before it minus one, as LEB128 varints.
//!
//! Most keys of the word and pair trees hold a few documents. The roaring serialization of
//! two ids takes 20 bytes (an 8-byte header, a 4-byte description and a 4-byte offset per
//! container, 2 bytes per id); this form takes 1 + 3 + 3 on an index of a million
//! documents. [`super::keys::write_bitmap`] writes it when it is the shorter of the two.
//!
//! Invariants:
//! - the first byte is [`SHORT_LIST_TAG`], which no roaring serialization starts with (both
//!   cookies, 12346 and 12347, start with byte `0x3A` or `0x3B` in little-endian order);
//! - the form is never [`super::keys::SINGLE_ID_BYTES`] long, so the one-id form (the id
//!   alone) reads back unambiguously: [`encode`] declines a set whose form would be;
//! - it holds 2 to [`SHORT_LIST_IDS_MAX`] ids, strictly ascending (a distance minus one
//!   cannot make an id repeat), and the number of ids is the number of bytes after the tag
//!   whose high bit is clear, so [`len`] reads it without decoding;
//! - reading bytes that are no such form gives `None` (the caller reports corruption), never
//!   a panic: an id past `u32::MAX`, a varint longer than five bytes or a varint cut short.

use roaring::RoaringBitmap;

use super::keys::SINGLE_ID_BYTES;
use super::position_chunks::{read_varint, write_varint};

/// The first byte of a short list (no roaring serialization starts with it).
pub const SHORT_LIST_TAG: u8 = 0x01;
/// Ids a short list holds at most: past this, decoding it costs more than the roaring
/// form's in-place reads save, and the roaring form is about as short.
pub const SHORT_LIST_IDS_MAX: u64 = 128;
/// The bit of a varint byte set on every byte but the last.
const VARINT_CONTINUES: u8 = 0x80;

/// Whether `bytes` are a short list (by their tag; [`decode`] checks the rest).
pub fn is_short_list(bytes: &[u8]) -> bool {
    bytes.len() != SINGLE_ID_BYTES && bytes.first() == Some(&SHORT_LIST_TAG)
}

/// Appends `bitmap`'s short list to `out` and answers `true`, or leaves `out` as it was and
/// answers `false` when the set has fewer than two or more than [`SHORT_LIST_IDS_MAX`] ids,
/// or when its short list would be no shorter than `roaring_bytes` or exactly as long as the
/// one-id form.
pub fn encode(bitmap: &RoaringBitmap, roaring_bytes: usize, out: &mut Vec<u8>) -> bool {
    if !(2..=SHORT_LIST_IDS_MAX).contains(&bitmap.len()) {
        return false;
    }
    let start = out.len();
    out.push(SHORT_LIST_TAG);
    let mut previous: Option<u32> = None;
    for id in bitmap {
        let step = match previous {
            None => id,
            Some(before) => id - before - 1,
        };
        write_varint(out, step);
        previous = Some(id);
    }
    let written = out.len() - start;
    if written >= roaring_bytes || written == SINGLE_ID_BYTES {
        out.truncate(start);
        return false;
    }
    true
}

/// The ids of a short list, or `None` when `bytes` are no short list. Read straight into the
/// bitmap: a search decodes many, and a list of ids in between would be one allocation each.
pub fn decode(bytes: &[u8]) -> Option<RoaringBitmap> {
    let mut malformed = false;
    let bitmap = {
        let ids = ids_of(bytes)?.map_while(|id| {
            malformed |= id.is_none();
            id
        });
        RoaringBitmap::from_sorted_iter(ids).ok()?
    };
    (!malformed).then_some(bitmap)
}

/// The number of ids of a short list, read from its bytes without decoding them (the form
/// is checked by [`decode`] when the ids are read).
pub fn len(bytes: &[u8]) -> Option<u64> {
    if !is_short_list(bytes) {
        return None;
    }
    let ends = bytes[1..]
        .iter()
        .filter(|byte| *byte & VARINT_CONTINUES == 0)
        .count();
    Some(ends as u64)
}

/// The ids of a short list in ascending order (an item is `None` where the bytes stop being
/// one), or `None` when `bytes` do not start as one.
pub fn ids_of(bytes: &[u8]) -> Option<impl Iterator<Item = Option<u32>> + '_> {
    if !is_short_list(bytes) {
        return None;
    }
    Some(ShortListIds {
        rest: &bytes[1..],
        previous: None,
        failed: false,
    })
}

/// The iterator of [`ids_of`].
struct ShortListIds<'a> {
    rest: &'a [u8],
    previous: Option<u32>,
    failed: bool,
}

impl Iterator for ShortListIds<'_> {
    type Item = Option<u32>;

    fn next(&mut self) -> Option<Option<u32>> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let mut offset = 0;
        let id = read_varint(self.rest, &mut offset).and_then(|step| match self.previous {
            None => Some(step),
            Some(before) => before.checked_add(1)?.checked_add(step),
        });
        self.rest = &self.rest[offset.min(self.rest.len())..];
        self.previous = id;
        self.failed = id.is_none();
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roaring_len(bitmap: &RoaringBitmap) -> usize {
        bitmap.serialized_size()
    }

    fn encoded(ids: &[u32]) -> Option<Vec<u8>> {
        let bitmap: RoaringBitmap = ids.iter().copied().collect();
        let mut out = vec![0xAA];
        let written = encode(&bitmap, roaring_len(&bitmap), &mut out);
        if !written {
            assert_eq!(out, [0xAA], "a declined set leaves the buffer as it was");
            return None;
        }
        Some(out[1..].to_vec())
    }

    #[test]
    fn short_lists_round_trip_and_count_without_decoding() {
        let sets: Vec<Vec<u32>> = vec![
            vec![0, 1, 2, 3],
            vec![7, 1_000_000],
            vec![5, 6, 300, 70_000, 4_000_000_000, u32::MAX],
            (0..128).map(|index| index * 9_001).collect(),
            vec![u32::MAX - 1, u32::MAX],
        ];
        for ids in sets {
            let bytes = encoded(&ids).expect("shorter than roaring");
            assert_eq!(bytes[0], SHORT_LIST_TAG);
            assert_ne!(bytes.len(), SINGLE_ID_BYTES);
            let expected: RoaringBitmap = ids.iter().copied().collect();
            assert_eq!(decode(&bytes), Some(expected), "{ids:?}");
            assert_eq!(len(&bytes), Some(ids.len() as u64), "{ids:?}");
        }
    }

    #[test]
    fn sets_the_form_does_not_suit_are_declined() {
        assert_eq!(encoded(&[]), None);
        assert_eq!(encoded(&[3]), None, "one id has its own form");
        let too_many: Vec<u32> = (0..=SHORT_LIST_IDS_MAX as u32)
            .map(|id| id * 1000)
            .collect();
        assert_eq!(encoded(&too_many), None);
        // Three ids whose form takes four bytes (tag and three one-byte varints).
        assert_eq!(encoded(&[1, 2, 3]).map(|bytes| bytes.len()), None);
        // A dense run: roaring's run form is shorter.
        let mut dense: RoaringBitmap = (0..100).collect();
        dense.optimize();
        let mut out = Vec::new();
        assert!(!encode(&dense, roaring_len(&dense), &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn malformed_short_lists_are_refused_without_a_panic() {
        let cut_short = [SHORT_LIST_TAG, 0x80, 0x80];
        let too_long = [SHORT_LIST_TAG, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
        let past_u32 = [SHORT_LIST_TAG, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F];
        let overflowing_step = [SHORT_LIST_TAG, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x00];
        for bytes in [
            &cut_short[..],
            &too_long[..],
            &past_u32[..],
            &overflowing_step[..],
        ] {
            assert_eq!(decode(bytes), None, "{bytes:?}");
        }
        assert_eq!(decode(&[0x3A, 0x30, 0, 0, 0]), None, "not the tag");
        assert_eq!(
            decode(&[SHORT_LIST_TAG, 1, 2, 3]),
            None,
            "the one-id form's length"
        );
    }

    #[test]
    fn random_sets_round_trip_whichever_form_is_shorter() {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2_000 {
            let count = (next() % 140) as usize + 2;
            let spread = [64_u64, 4_096, 1_000_000, u64::from(u32::MAX)][(next() % 4) as usize];
            let bitmap: RoaringBitmap = (0..count).map(|_| (next() % spread) as u32).collect();
            let mut out = Vec::new();
            if encode(&bitmap, roaring_len(&bitmap), &mut out) {
                assert!(out.len() < roaring_len(&bitmap));
                assert_eq!(decode(&out).as_ref(), Some(&bitmap));
                assert_eq!(len(&out), Some(bitmap.len()));
            } else {
                assert!(out.is_empty());
            }
        }
    }
}
