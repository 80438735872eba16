//! A list that grows by whole segments instead of by doubling one allocation: the pending
//! changes of a batch are counted against a bound in bytes, and a doubling vector would either
//! pass the bound at once (counted by capacity: a 48 MiB list becomes 96 MiB in one push, and
//! the batch flushes early) or hide half of what it holds (counted by length). It also never
//! copies what it holds, and never holds an old and a new allocation at once.
//!
//! Invariants: every segment but the last is full; segment capacities grow from
//! [`FIRST_SEGMENT_ELEMENTS`], doubling up to [`SEGMENT_ELEMENTS_MAX`], so a small batch
//! allocates little and a large one wastes at most one segment; elements keep their push order.

/// Capacity of the first segment.
const FIRST_SEGMENT_ELEMENTS: usize = 256;
/// Capacity a segment grows to at most: about a megabyte for the lists it holds (12 to
/// 16-byte changes), so the bytes counted are within a megabyte of those held.
const SEGMENT_ELEMENTS_MAX: usize = 1 << 16;

/// A list of `T` in segments (see the module docs).
#[derive(Debug)]
pub(super) struct SegmentedVec<T> {
    segments: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for SegmentedVec<T> {
    fn default() -> Self {
        SegmentedVec {
            segments: Vec::new(),
            len: 0,
        }
    }
}

impl<T> SegmentedVec<T> {
    /// Appends `element`, starting a segment when the last one is full.
    pub(super) fn push(&mut self, element: T) {
        match self.segments.last_mut() {
            Some(last) if last.len() < last.capacity() => last.push(element),
            _ => {
                let mut segment = Vec::with_capacity(self.next_segment_capacity());
                segment.push(element);
                self.segments.push(segment);
            }
        }
        self.len += 1;
    }

    fn next_segment_capacity(&self) -> usize {
        // A segment is at the maximum long before this many doublings; capping the shift
        // keeps it from overflowing.
        let doublings = self
            .segments
            .len()
            .min(SEGMENT_ELEMENTS_MAX.ilog2() as usize);
        (FIRST_SEGMENT_ELEMENTS << doublings).min(SEGMENT_ELEMENTS_MAX)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes the list holds: its segments' capacities and the list of segments.
    pub(super) fn heap_bytes(&self) -> usize {
        let elements: usize = self.segments.iter().map(Vec::capacity).sum();
        elements * size_of::<T>() + self.segments.capacity() * size_of::<Vec<T>>()
    }

    /// The elements in push order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.segments.iter().flatten()
    }
}

impl<T> IntoIterator for SegmentedVec<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;

    /// The elements in push order; each segment is freed once its elements are taken.
    fn into_iter(self) -> Self::IntoIter {
        self.segments.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_come_back_in_push_order_across_segments() {
        let mut list = SegmentedVec::default();
        let count = 3 * SEGMENT_ELEMENTS_MAX + 17;
        for element in 0..count {
            list.push(element);
        }
        assert_eq!(list.len(), count);
        assert!(list.iter().copied().eq(0..count));
        assert!(list.into_iter().eq(0..count));
    }

    #[test]
    fn the_bytes_held_stay_within_one_segment_of_the_elements() {
        let mut list = SegmentedVec::<u64>::default();
        assert_eq!(list.heap_bytes(), 0);
        assert!(list.is_empty());
        for element in 0..1_000_000_u64 {
            list.push(element);
            let held = list.len() * size_of::<u64>();
            let slack = list.heap_bytes() - held;
            assert!(
                slack <= SEGMENT_ELEMENTS_MAX * size_of::<u64>() + 4096,
                "{slack} bytes beyond {held} at {element}"
            );
        }
    }

    #[test]
    fn segments_start_small_and_stop_growing_at_the_maximum() {
        let mut list = SegmentedVec::default();
        list.push(1_u8);
        assert_eq!(
            list.heap_bytes() - list.segments.capacity() * size_of::<Vec<u8>>(),
            FIRST_SEGMENT_ELEMENTS
        );
        for element in 0..10_000_000_u32 {
            list.push(u8::try_from(element % 200).expect("below 256"));
        }
        let capacities: Vec<usize> = list.segments.iter().map(Vec::capacity).collect();
        assert!(capacities.len() > 100, "{} segments", capacities.len());
        for (index, &capacity) in capacities.iter().enumerate() {
            let expected = (FIRST_SEGMENT_ELEMENTS << index.min(8)).min(SEGMENT_ELEMENTS_MAX);
            assert_eq!(capacity, expected, "segment {index}");
        }
        assert_eq!(capacities[..3], [256, 512, 1024]);
        let segments = &list.segments;
        assert!(
            segments[..segments.len() - 1]
                .iter()
                .all(|segment| segment.len() == segment.capacity())
        );
    }
}
