//! Checksums: xxh3-64 of a page's bytes after its checksum field, seeded with the page
//! number so that a page written to the wrong place does not verify.
//!
//! Invariant: the same function computes and verifies every checksum in the file.

use xxhash_rust::xxh3::{Xxh3, xxh3_64_with_seed};

/// Checksum of one page (or the start of an overflow run) living at `page`.
pub fn page_checksum(page: u64, checksummed_bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(checksummed_bytes, page)
}

/// Checksum of a run of byte slices, seeded with `page`; equal to `page_checksum` of their
/// concatenation.
pub fn streamed_checksum(page: u64, parts: &[&[u8]]) -> u64 {
    let mut hasher = Xxh3::with_seed(page);
    for part in parts {
        hasher.update(part);
    }
    hasher.digest()
}

/// Checksum of a commit slot's covered bytes (no seed: its place is fixed).
pub fn meta_checksum(covered_bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(covered_bytes, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_checksum_equals_whole_checksum() {
        let bytes: Vec<u8> = (0..10_000u32).map(|index| (index % 251) as u8).collect();
        let (left, right) = bytes.split_at(4321);
        assert_eq!(
            page_checksum(7, &bytes),
            streamed_checksum(7, &[left, right])
        );
    }

    #[test]
    fn checksum_depends_on_page_number() {
        assert_ne!(page_checksum(3, b"same"), page_checksum(4, b"same"));
    }
}
