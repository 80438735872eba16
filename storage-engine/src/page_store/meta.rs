//! Commit slots: the two meta pages (0 and 1) that name the committed state.
//!
//! Invariant: transaction `T` writes slot `T % 2`, so the other slot always holds the
//! previous commit; a slot is valid only if magic, version, page size and checksum agree,
//! and opening picks the valid slot with the highest transaction id.

use crate::page_store::bytes::{read_u32, read_u64, write_u32, write_u64};
use crate::page_store::checksum::meta_checksum;
use crate::page_store::layout::*;
use crate::page_store::page::Pointer;

/// The committed state a commit slot records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitState {
    /// Id of the transaction that wrote this state.
    pub transaction_id: u64,
    /// Root of the catalog tree (tree name -> root), `None` when there are no trees.
    pub catalog: Option<Pointer>,
    /// Root of the free tree (free-page records), `None` when nothing is free.
    pub free_tree: Option<Pointer>,
    /// Pages below this are allocated (used or free); the file may be longer.
    pub high_water_pages: u64,
    /// Pages listed in the free tree.
    pub free_pages: u64,
    /// Named trees in the catalog.
    pub tree_count: u64,
}

impl CommitState {
    /// The state of a freshly created file.
    pub fn empty() -> CommitState {
        CommitState {
            transaction_id: 0,
            catalog: None,
            free_tree: None,
            high_water_pages: META_PAGE_COUNT,
            free_pages: 0,
            tree_count: 0,
        }
    }

    /// The slot (page number) this state is written to.
    pub fn slot(&self) -> u64 {
        self.transaction_id % META_PAGE_COUNT
    }
}

fn pointer_from(page: u64, checksum: u64) -> Option<Pointer> {
    (page != NO_PAGE).then_some(Pointer { page, checksum })
}

/// Encodes `state` into a commit slot of `page_bytes` (the rest of the page is zero).
pub fn encode(state: &CommitState, page_bytes: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; page_bytes];
    bytes[META_MAGIC_OFFSET..META_MAGIC_OFFSET + META_MAGIC_BYTES].copy_from_slice(&MAGIC);
    write_u32(&mut bytes, META_VERSION_OFFSET, FORMAT_VERSION);
    let page_bytes_field = u32::try_from(page_bytes).expect("page size is at most 65536");
    write_u32(&mut bytes, META_PAGE_BYTES_OFFSET, page_bytes_field);
    write_u64(&mut bytes, META_TRANSACTION_OFFSET, state.transaction_id);
    let catalog = state.catalog.unwrap_or(Pointer {
        page: NO_PAGE,
        checksum: 0,
    });
    write_u64(&mut bytes, META_CATALOG_PAGE_OFFSET, catalog.page);
    write_u64(&mut bytes, META_CATALOG_CHECKSUM_OFFSET, catalog.checksum);
    let free_tree = state.free_tree.unwrap_or(Pointer {
        page: NO_PAGE,
        checksum: 0,
    });
    write_u64(&mut bytes, META_FREE_TREE_PAGE_OFFSET, free_tree.page);
    write_u64(
        &mut bytes,
        META_FREE_TREE_CHECKSUM_OFFSET,
        free_tree.checksum,
    );
    write_u64(&mut bytes, META_HIGH_WATER_OFFSET, state.high_water_pages);
    write_u64(&mut bytes, META_FREE_COUNT_OFFSET, state.free_pages);
    write_u64(&mut bytes, META_TREE_COUNT_OFFSET, state.tree_count);
    let checksum = meta_checksum(&bytes[..META_CHECKSUM_OFFSET]);
    write_u64(&mut bytes, META_CHECKSUM_OFFSET, checksum);
    bytes
}

/// What a commit slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotContent {
    /// A valid commit.
    Valid(CommitState),
    /// Every byte is zero: never written.
    Blank,
    /// Magic or checksum wrong: torn or damaged.
    Invalid,
    /// A valid slot of another format version or page size.
    Incompatible(&'static str),
}

/// Decodes a commit slot; never panics on any input.
pub fn decode(bytes: &[u8], page_bytes: usize) -> SlotContent {
    let Some(covered) = bytes.get(..META_BYTES) else {
        return SlotContent::Invalid;
    };
    if covered.iter().all(|byte| *byte == 0) {
        return SlotContent::Blank;
    }
    let stored = read_u64(covered, META_CHECKSUM_OFFSET);
    if covered[META_MAGIC_OFFSET..META_MAGIC_OFFSET + META_MAGIC_BYTES] != MAGIC
        || stored != Some(meta_checksum(&covered[..META_CHECKSUM_OFFSET]))
    {
        return SlotContent::Invalid;
    }
    let field = |offset| read_u64(covered, offset).unwrap_or_default();
    match read_u32(covered, META_VERSION_OFFSET) {
        Some(version) if (FORMAT_VERSION_READABLE_MIN..=FORMAT_VERSION).contains(&version) => {}
        Some(version) if version < FORMAT_VERSION_READABLE_MIN => {
            return SlotContent::Incompatible(
                "file of an older format version (free list as a page chain); this build reads only format versions 2 and 3: rebuild the file",
            );
        }
        _ => return SlotContent::Incompatible("file of a newer or unknown format version"),
    }
    if read_u32(covered, META_PAGE_BYTES_OFFSET).map(|value| value as usize) != Some(page_bytes) {
        return SlotContent::Incompatible("the file has another page size");
    }
    SlotContent::Valid(CommitState {
        transaction_id: field(META_TRANSACTION_OFFSET),
        catalog: pointer_from(
            field(META_CATALOG_PAGE_OFFSET),
            field(META_CATALOG_CHECKSUM_OFFSET),
        ),
        free_tree: pointer_from(
            field(META_FREE_TREE_PAGE_OFFSET),
            field(META_FREE_TREE_CHECKSUM_OFFSET),
        ),
        high_water_pages: field(META_HIGH_WATER_OFFSET),
        free_pages: field(META_FREE_COUNT_OFFSET),
        tree_count: field(META_TREE_COUNT_OFFSET),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_slot_decodes_to_the_same_state() {
        let state = CommitState {
            transaction_id: 77,
            catalog: Some(Pointer {
                page: 5,
                checksum: 6,
            }),
            free_tree: None,
            high_water_pages: 100,
            free_pages: 3,
            tree_count: 2,
        };
        assert_eq!(
            decode(&encode(&state, 4096), 4096),
            SlotContent::Valid(state)
        );
    }

    #[test]
    fn a_slot_of_format_version_one_is_refused_as_older() {
        let mut bytes = encode(&CommitState::empty(), 4096);
        write_u32(&mut bytes, META_VERSION_OFFSET, 1);
        let checksum = meta_checksum(&bytes[..META_CHECKSUM_OFFSET]);
        write_u64(&mut bytes, META_CHECKSUM_OFFSET, checksum);
        match decode(&bytes, 4096) {
            SlotContent::Incompatible(what) => assert!(what.contains("older format"), "{what}"),
            other => panic!("version 1 accepted: {other:?}"),
        }
    }

    #[test]
    fn any_flipped_byte_invalidates_a_slot() {
        let bytes = encode(&CommitState::empty(), 4096);
        for index in 0..META_BYTES {
            let mut damaged = bytes.clone();
            damaged[index] ^= 0x10;
            assert!(
                !matches!(decode(&damaged, 4096), SlotContent::Valid(_)),
                "flip at {index} accepted"
            );
        }
    }
}
