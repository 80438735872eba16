//! A stored bitmap read only where another set needs it: the intersection of a stored bitmap
//! with a (small) set of documents, or its size, without decoding the stored bitmap.
//!
//! A search often wants a stored bitmap only within a few documents — a frequent word's
//! position bucket within the documents of a two-word bucket, a facet value within the
//! matches. Decoding the whole stored bitmap allocates and copies every container to keep a
//! handful of ids. Here the stored form is read in place: its header gives each container's
//! key, cardinality and offset, and each wanted id is looked up in its container's bytes (a
//! galloping search in an array container, one bit in a bitmap container, a search among the
//! runs of a run container). When the wanted set is not small against the stored bitmap,
//! decoding and intersecting (SIMD) is cheaper, and that is done instead
//! (`PROBES_PER_STORED_ID_MAX`).
//!
//! The stored forms are those of [`super::keys::write_bitmap`]: one id alone (u32 big-endian),
//! a short list of a few ids ([`super::short_list`], decoded: it holds at most 128), or the
//! roaring serialization (with or without run containers; offsets present for four
//! containers or more in the run form, always in the other).
//!
//! Invariants: [`intersection_within`] equals `decode_bitmap(bytes) & within` and
//! [`intersection_len_within`] equals its length for every stored form, whatever path it
//! takes; malformed bytes give [`ShardError::Corrupted`], never a panic or a read out of
//! bounds.

use roaring::RoaringBitmap;

use super::keys::{SINGLE_ID_BYTES, decode_bitmap};
use super::short_list;
use crate::error::{ShardError, ShardResult};

/// Probe the stored bytes (rather than decode them) while the wanted set has at most one id
/// for this many stored ids: a probe costs a few comparisons, a decoded id about one copy.
const PROBES_PER_STORED_ID_MAX: u64 = 16;

/// The cookie of the serialization without run containers (followed by the container count).
const COOKIE_WITHOUT_RUNS: u32 = 12_346;
/// The cookie of the serialization with run containers (low 16 bits; the high 16 bits hold
/// the container count minus one).
const COOKIE_WITH_RUNS: u32 = 12_347;
/// Containers of a bitmap at most (one per value of the high 16 bits).
const CONTAINERS_MAX: usize = 1 << 16;
/// From this many containers, the run form stores the containers' offsets.
const RUN_FORM_OFFSETS_FROM: usize = 4;
/// Bytes of one container's description (key, cardinality minus one).
const DESCRIPTION_BYTES: usize = 4;
/// Bytes of one container's offset.
const OFFSET_BYTES: usize = 4;
/// Ids in an array container at most (more are stored as a bitmap container).
const ARRAY_CARDINALITY_MAX: usize = 4_096;
/// Bytes of a bitmap container.
const BITMAP_CONTAINER_BYTES: usize = 8_192;
/// Bytes of a run container's run count and of each run (start, length minus one).
const RUN_COUNT_BYTES: usize = 2;
const RUN_BYTES: usize = 4;

/// `decode_bitmap(bytes) & within`, read in place when `within` is small against the stored
/// bitmap.
pub fn intersection_within(bytes: &[u8], within: &RoaringBitmap) -> ShardResult<RoaringBitmap> {
    intersection_within_counted(bytes, within).map(|(found, _)| found)
}

/// The number of ids a stored bitmap holds, from its header (nothing is decoded).
pub fn stored_len(bytes: &[u8]) -> ShardResult<u64> {
    if let Some(ids) = short_list::len(bytes) {
        return Ok(ids);
    }
    Ok(StoredBitmap::parse(bytes)?.map_or(1, |stored| stored.cardinality))
}

/// [`intersection_within`] with the number of ids the stored bitmap holds, from its header
/// when it is read in place.
pub fn intersection_within_counted(
    bytes: &[u8],
    within: &RoaringBitmap,
) -> ShardResult<(RoaringBitmap, u64)> {
    match StoredBitmap::parse(bytes)? {
        Some(stored) if stored.worth_probing(within) => {
            Ok((stored.intersection(within)?, stored.cardinality))
        }
        _ => {
            let all = decode_bitmap(bytes)?;
            let stored_len = all.len();
            Ok((all & within, stored_len))
        }
    }
}

/// `(decode_bitmap(bytes) & within).len()`, read in place when `within` is small against the
/// stored bitmap.
pub fn intersection_len_within(bytes: &[u8], within: &RoaringBitmap) -> ShardResult<u64> {
    match StoredBitmap::parse(bytes)? {
        Some(stored) if stored.worth_probing(within) => stored.intersection_len(within),
        _ => Ok(decode_bitmap(bytes)?.intersection_len(within)),
    }
}

/// How one container is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContainerKind {
    Array,
    Bitmap,
    Run,
}

/// One container of a stored bitmap: its high 16 bits and where its body lies.
#[derive(Debug, Clone, Copy)]
struct Container {
    key: u16,
    cardinality: usize,
    kind: ContainerKind,
    /// Offset of the body from the start of the stored bytes.
    offset: usize,
}

/// A stored bitmap's header, parsed; the bodies stay in `bytes`.
struct StoredBitmap<'a> {
    bytes: &'a [u8],
    containers: Vec<Container>,
    cardinality: u64,
}

fn corrupted() -> ShardError {
    ShardError::corrupted("roaring bitmap")
}

fn u16_at(bytes: &[u8], offset: usize) -> ShardResult<u16> {
    let pair = bytes.get(offset..offset + 2).ok_or_else(corrupted)?;
    Ok(u16::from_le_bytes([pair[0], pair[1]]))
}

fn u32_at(bytes: &[u8], offset: usize) -> ShardResult<u32> {
    let quad = bytes.get(offset..offset + 4).ok_or_else(corrupted)?;
    Ok(u32::from_le_bytes([quad[0], quad[1], quad[2], quad[3]]))
}

impl<'a> StoredBitmap<'a> {
    /// The header of `bytes`; `None` for the one-id form and for a short list (decoding them
    /// costs little).
    fn parse(bytes: &'a [u8]) -> ShardResult<Option<StoredBitmap<'a>>> {
        if bytes.len() == SINGLE_ID_BYTES || short_list::is_short_list(bytes) {
            return Ok(None);
        }
        let cookie = u32_at(bytes, 0)?;
        let (count, run_flags, descriptions) = if cookie == COOKIE_WITHOUT_RUNS {
            let count = u32_at(bytes, 4)? as usize;
            (count, None, 8)
        } else if cookie & 0xFFFF == COOKIE_WITH_RUNS {
            let count = (cookie >> 16) as usize + 1;
            let flags_bytes = count.div_ceil(8);
            let flags = bytes.get(4..4 + flags_bytes).ok_or_else(corrupted)?;
            (count, Some(flags), 4 + flags_bytes)
        } else {
            return Err(corrupted());
        };
        if count > CONTAINERS_MAX {
            return Err(corrupted());
        }
        let has_offsets = run_flags.is_none() || count >= RUN_FORM_OFFSETS_FROM;
        let offsets = descriptions + count * DESCRIPTION_BYTES;
        let mut next_body = offsets + if has_offsets { count * OFFSET_BYTES } else { 0 };
        let mut containers = Vec::with_capacity(count);
        let mut cardinality = 0;
        for index in 0..count {
            let description = descriptions + index * DESCRIPTION_BYTES;
            let key = u16_at(bytes, description)?;
            let container_cardinality = usize::from(u16_at(bytes, description + 2)?) + 1;
            let is_run = run_flags.is_some_and(|flags| flags[index / 8] & (1 << (index % 8)) != 0);
            let kind = if is_run {
                ContainerKind::Run
            } else if container_cardinality <= ARRAY_CARDINALITY_MAX {
                ContainerKind::Array
            } else {
                ContainerKind::Bitmap
            };
            let offset = if has_offsets {
                u32_at(bytes, offsets + index * OFFSET_BYTES)? as usize
            } else {
                next_body
            };
            let container = Container {
                key,
                cardinality: container_cardinality,
                kind,
                offset,
            };
            let body_bytes = body_bytes(bytes, &container)?;
            bytes
                .get(offset..offset + body_bytes)
                .ok_or_else(corrupted)?;
            next_body = offset + body_bytes;
            cardinality += container_cardinality as u64;
            containers.push(container);
        }
        Ok(Some(StoredBitmap {
            bytes,
            containers,
            cardinality,
        }))
    }

    /// Whether probing `within`'s ids costs less than decoding every stored id.
    fn worth_probing(&self, within: &RoaringBitmap) -> bool {
        within.len().saturating_mul(PROBES_PER_STORED_ID_MAX) <= self.cardinality
    }

    /// The stored ids that `within` holds.
    fn intersection(&self, within: &RoaringBitmap) -> ShardResult<RoaringBitmap> {
        let mut found = RoaringBitmap::new();
        self.for_each_common(within, |id| {
            // Ids come in ascending order, so each one appends (never falls back to inserting).
            if found.try_push(id).is_err() {
                found.insert(id);
            }
        })?;
        Ok(found)
    }

    /// How many stored ids `within` holds.
    fn intersection_len(&self, within: &RoaringBitmap) -> ShardResult<u64> {
        let mut count = 0;
        self.for_each_common(within, |_| count += 1)?;
        Ok(count)
    }

    /// Calls `found` with each id of `within` that is stored, ascending.
    fn for_each_common(
        &self,
        within: &RoaringBitmap,
        mut found: impl FnMut(u32),
    ) -> ShardResult<()> {
        let mut containers = self.containers.iter().peekable();
        let mut probe: Option<(u16, Probe<'_>)> = None;
        for id in within {
            let key = (id >> 16) as u16;
            if probe.as_ref().is_none_or(|(probed, _)| *probed != key) {
                while containers
                    .next_if(|container| container.key < key)
                    .is_some()
                {}
                probe = containers
                    .next_if(|container| container.key == key)
                    .map(|container| (key, Probe::new(self.bytes, container)));
                if probe.is_none() {
                    continue;
                }
            }
            if let Some((_, probe)) = probe.as_mut() {
                if probe.contains(id as u16)? {
                    found(id);
                }
            }
        }
        Ok(())
    }
}

/// Bytes of a container's body.
fn body_bytes(bytes: &[u8], container: &Container) -> ShardResult<usize> {
    Ok(match container.kind {
        ContainerKind::Array => container.cardinality * 2,
        ContainerKind::Bitmap => BITMAP_CONTAINER_BYTES,
        ContainerKind::Run => {
            RUN_COUNT_BYTES + usize::from(u16_at(bytes, container.offset)?) * RUN_BYTES
        }
    })
}

/// Membership tests in one container, for ascending low bits: each search starts where the
/// previous one ended.
enum Probe<'a> {
    /// Sorted little-endian u16 values, and the index below which every value is smaller than
    /// the last probed one.
    Array { values: &'a [u8], start: usize },
    /// 1,024 little-endian u64 words.
    Bitmap { words: &'a [u8] },
    /// Runs (start, length minus one), and the index of the first run that may hold the next
    /// probed value.
    Run { runs: &'a [u8], start: usize },
}

impl<'a> Probe<'a> {
    /// A probe of `container`, whose body [`StoredBitmap::parse`] checked to lie in `bytes`.
    fn new(bytes: &'a [u8], container: &Container) -> Probe<'a> {
        let body = &bytes[container.offset..];
        match container.kind {
            ContainerKind::Array => Probe::Array {
                values: &body[..container.cardinality * 2],
                start: 0,
            },
            ContainerKind::Bitmap => Probe::Bitmap {
                words: &body[..BITMAP_CONTAINER_BYTES],
            },
            ContainerKind::Run => {
                let runs = usize::from(u16::from_le_bytes([body[0], body[1]]));
                Probe::Run {
                    runs: &body[RUN_COUNT_BYTES..RUN_COUNT_BYTES + runs * RUN_BYTES],
                    start: 0,
                }
            }
        }
    }

    /// Whether `low` is in the container; `low` must not be below the previous probe's.
    fn contains(&mut self, low: u16) -> ShardResult<bool> {
        Ok(match self {
            Probe::Array { values, start } => {
                let length = values.len() / 2;
                let value =
                    |index: usize| u16::from_le_bytes([values[2 * index], values[2 * index + 1]]);
                *start = first_not_below(length, *start, |index| value(index) >= low);
                *start < length && value(*start) == low
            }
            Probe::Bitmap { words } => {
                let word = usize::from(low / 64);
                let byte = words[word * 8 + usize::from(low % 64) / 8];
                byte & (1 << (low % 8)) != 0
            }
            Probe::Run { runs, start } => {
                let length = runs.len() / RUN_BYTES;
                let run = |index: usize| {
                    let at = index * RUN_BYTES;
                    let first = u16::from_le_bytes([runs[at], runs[at + 1]]);
                    let extra = u16::from_le_bytes([runs[at + 2], runs[at + 3]]);
                    (first, u32::from(first) + u32::from(extra))
                };
                // The first run whose last value is not below `low`.
                *start = first_not_below(length, *start, |index| run(index).1 >= u32::from(low));
                *start < length && run(*start).0 <= low
            }
        })
    }
}

/// The first index in `start..length` where the ascending predicate `reached` holds (`length`
/// when none does), found by galloping from `start` then bisecting.
fn first_not_below(length: usize, start: usize, reached: impl Fn(usize) -> bool) -> usize {
    if start >= length || reached(start) {
        return start;
    }
    // `reached(low)` is false; find a `high` where it holds, doubling the step.
    let mut low = start;
    let mut step = 1;
    let mut high = loop {
        let candidate = low + step;
        if candidate >= length {
            break length;
        }
        if reached(candidate) {
            break candidate;
        }
        low = candidate;
        step *= 2;
    };
    // Invariant: `reached(low)` is false, `reached(high)` holds or `high == length`.
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if reached(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::keys::encode_bitmap;

    use crate::test_random::Random;

    /// Stored bitmaps of every container kind: sparse (arrays), dense (bitmaps), ranges (runs
    /// once optimized), one id, empty, and mixes across several high keys.
    fn stored_bitmaps(random: &mut Random) -> Vec<RoaringBitmap> {
        let sparse: RoaringBitmap = (0..3_000).map(|_| random.below(400_000)).collect();
        let dense: RoaringBitmap = (0..60_000).map(|_| random.below(200_000)).collect();
        let mut ranges = RoaringBitmap::new();
        for _ in 0..40 {
            let start = random.below(500_000);
            ranges.insert_range(start..start + random.below(3_000) + 1);
        }
        let mut mixed = sparse.clone() | &dense;
        mixed |= &ranges;
        let mut optimized_few = RoaringBitmap::new();
        optimized_few.insert_range(10..5_000);
        optimized_few.insert(70_000);
        let mut all = vec![
            sparse,
            dense,
            ranges.clone(),
            mixed.clone(),
            optimized_few,
            RoaringBitmap::from_iter([123_456]),
            RoaringBitmap::new(),
            RoaringBitmap::from_iter([0, 65_535, 65_536, u32::MAX]),
            RoaringBitmap::from_iter([5, 70_000, 123_456, 499_999]),
        ];
        let short_lists = all
            .iter()
            .filter(|bitmap| short_list::is_short_list(&encode_bitmap(bitmap)))
            .count();
        assert_eq!(short_lists, 2, "two sets are stored as short lists");
        for bitmap in [&ranges, &mixed] {
            let mut runs = bitmap.clone();
            runs.optimize();
            all.push(runs);
        }
        all
    }

    fn wanted_sets(random: &mut Random) -> Vec<RoaringBitmap> {
        vec![
            (0..50).map(|_| random.below(500_000)).collect(),
            (0..2_000).map(|_| random.below(500_000)).collect(),
            (0..200_000).map(|_| random.below(500_000)).collect(),
            RoaringBitmap::from_iter([0, 65_535, 65_536, 70_000, 123_456, u32::MAX]),
            RoaringBitmap::new(),
        ]
    }

    #[test]
    fn both_paths_equal_a_decoded_intersection_for_every_container_kind() {
        let mut random = Random(0x9E37_79B9_7F4A_7C15);
        let stored = stored_bitmaps(&mut random);
        let wanted = wanted_sets(&mut random);
        let mut probed_with_runs = false;
        for bitmap in &stored {
            let bytes = encode_bitmap(bitmap);
            for within in &wanted {
                let expected = bitmap & within;
                assert_eq!(
                    intersection_within(&bytes, within).expect("reads"),
                    expected
                );
                assert_eq!(
                    intersection_len_within(&bytes, within).expect("reads"),
                    expected.len()
                );
                assert_eq!(
                    intersection_within_counted(&bytes, within).expect("reads"),
                    (expected.clone(), bitmap.len())
                );
                assert_eq!(stored_len(&bytes).expect("reads"), bitmap.len());
                // The probing path itself, whatever the sizes.
                if let Some(parsed) = StoredBitmap::parse(&bytes).expect("parses") {
                    assert_eq!(parsed.cardinality, bitmap.len());
                    assert_eq!(parsed.intersection(within).expect("reads"), expected);
                    assert_eq!(
                        parsed.intersection_len(within).expect("reads"),
                        expected.len()
                    );
                    probed_with_runs |= parsed
                        .containers
                        .iter()
                        .any(|container| container.kind == ContainerKind::Run);
                }
            }
        }
        assert!(probed_with_runs, "no stored bitmap had a run container");
    }

    #[test]
    fn a_small_wanted_set_probes_and_a_large_one_decodes() {
        let stored: RoaringBitmap = (0..100_000).map(|id| id * 3).collect();
        let bytes = encode_bitmap(&stored);
        let parsed = StoredBitmap::parse(&bytes)
            .expect("parses")
            .expect("not the one-id form");
        let small: RoaringBitmap = (0..100).collect();
        let large: RoaringBitmap = (0..50_000).collect();
        assert!(parsed.worth_probing(&small));
        assert!(!parsed.worth_probing(&large));
    }

    #[test]
    fn malformed_bytes_are_corrupted_not_a_panic() {
        let stored: RoaringBitmap = (0..10_000).map(|id| id * 7).collect();
        let bytes = encode_bitmap(&stored);
        let within: RoaringBitmap = (0..10).collect();
        for cut in [5, 9, 20, bytes.len() - 1] {
            let error = intersection_within(&bytes[..cut], &within).expect_err("cut short");
            assert!(matches!(error, ShardError::Corrupted(_)), "{error:?}");
        }
        let mut wrong_cookie = bytes.clone();
        wrong_cookie[0] ^= 0xFF;
        assert!(intersection_within(&wrong_cookie, &within).is_err());
    }

    #[test]
    fn galloping_finds_the_first_index_where_the_predicate_holds() {
        let values = [1, 3, 3, 8, 13, 21, 34, 55, 89];
        for target in 0..100 {
            for start in 0..=values.len() {
                let expected = (start..values.len())
                    .find(|&index| values[index] >= target)
                    .unwrap_or(values.len());
                let found = first_not_below(values.len(), start, |index| values[index] >= target);
                assert_eq!(found, expected, "target {target} from {start}");
            }
        }
    }
}
