//! Large in-memory arrays on transparent huge pages.
//!
//! A search reads the dense adjacency at random: one neighbour list per expanded node, in an
//! array of `(1 + m0) * 4` bytes per record (132 MB at 1M records, M0 = 32). Behind 4 KiB
//! pages nearly every such read also misses the TLB; behind 2 MiB pages the whole array needs
//! a few dozen TLB entries. Heap memory gets huge pages only on request when the system's
//! transparent-huge-page mode is `madvise` (a common default), so such arrays are allocated
//! here: the allocation is advised (`MADV_HUGEPAGE`) before anything is written to it, so its
//! pages are huge from their first fault on, at no copying cost.
//!
//! Invariant: advice never changes memory contents; a refusal (no THP support, `never` mode,
//! no free huge pages) leaves the array on small pages and is not an error.

/// Size of a PMD-mapped huge page on x86-64 and aarch64 with 4 KiB base pages.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Asks for huge pages behind the whole huge pages inside `length` bytes at `start` (rounded
/// inwards; ranges holding no whole huge page are left alone).
fn advise(start: usize, length: usize) {
    let first = start.next_multiple_of(HUGE_PAGE_BYTES);
    let end = start + length;
    let last = end - end % HUGE_PAGE_BYTES;
    if last <= first {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: `first..last` lies inside the allocation the caller passed (rounded inwards);
    // the advice changes how the kernel backs that memory, never its contents or mapping, so
    // no reference to it is invalidated.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_HUGEPAGE,
        );
    }
}

/// A vector with room for `capacity` values whose unwritten allocation is advised for huge
/// pages.
fn with_capacity_advised<T: Copy>(capacity: usize) -> Vec<T> {
    let values: Vec<T> = Vec::with_capacity(capacity);
    advise(values.as_ptr() as usize, capacity * size_of::<T>());
    values
}

/// Resizes `values` to `length`, filling with `fill`; when it must reallocate, the new
/// allocation (at least twice the old capacity, as `Vec` grows) is advised for huge pages
/// before the old values are copied in.
pub fn resize<T: Copy>(values: &mut Vec<T>, length: usize, fill: T) {
    if length > values.capacity() {
        let mut grown = with_capacity_advised(length.max(2 * values.capacity()));
        grown.extend_from_slice(values);
        *values = grown;
    }
    values.resize(length, fill);
}

/// A copy of `values` in an allocation advised for huge pages.
pub fn copy<T: Copy>(values: &[T]) -> Vec<T> {
    let mut copied = with_capacity_advised(values.len());
    copied.extend_from_slice(values);
    copied
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resizing_and_copying_keep_values_and_grow_geometrically() {
        let mut values: Vec<u32> = Vec::new();
        resize(&mut values, 10, 7);
        assert_eq!(values, vec![7; 10]);
        values[3] = 1;
        let words = 3 * HUGE_PAGE_BYTES / size_of::<u32>();
        resize(&mut values, words, 0);
        assert_eq!(values.len(), words);
        assert_eq!(&values[..5], &[7, 7, 7, 1, 7]);
        assert!(values[10..].iter().all(|&value| value == 0));
        let capacity = values.capacity();
        resize(&mut values, words + 1, 9);
        assert!(values.capacity() >= 2 * capacity);
        assert_eq!(values[words], 9);
        resize(&mut values, 4, 0);
        assert_eq!(values, vec![7, 7, 7, 1]);
        assert_eq!(copy(&values), values);
        let large = copy(&vec![5_u32; words]);
        assert_eq!(large, vec![5_u32; words]);
    }
}
