//! The persisted free list: a chain of pages listing every free page number.
//!
//! Invariants: the chain is written whole at each commit into pages that are not free in
//! that commit; each page links to the next with its checksum (a Merkle link), so a stale
//! or damaged chain is `Corrupted`; every listed page lies in `META_PAGE_COUNT..high_water`
//! and appears once.

use std::collections::BTreeSet;

use crate::bytes::{read_u64, write_u16, write_u64};
use crate::checksum::page_checksum;
use crate::error::{Error, Result};
use crate::layout::*;
use crate::node::write_pointer;
use crate::page::Pointer;
use crate::pager::Pager;

/// Page numbers one free-list page holds.
pub fn entries_per_page(page_bytes: usize) -> usize {
    (page_bytes - FREE_LIST_ENTRIES_OFFSET) / FREE_LIST_ENTRY_BYTES
}

/// The free pages and the chain's own pages, read and checked.
pub struct FreeListContents {
    /// Free page numbers.
    pub free: BTreeSet<u64>,
    /// Pages of the chain itself.
    pub chain: Vec<u64>,
}

/// Reads the chain starting at `root` of a state whose high-water mark is `high_water_pages`.
pub fn read(
    pager: &Pager,
    root: Option<Pointer>,
    high_water_pages: u64,
) -> Result<FreeListContents> {
    let mut contents = FreeListContents {
        free: BTreeSet::new(),
        chain: Vec::new(),
    };
    let mut next = root;
    while let Some(pointer) = next {
        if contents.chain.len() as u64 >= high_water_pages {
            return Err(Error::corrupted(
                pointer.page,
                "free-list chain longer than the file",
            ));
        }
        let bytes = pager.page(pointer)?;
        if bytes[PAGE_KIND_OFFSET] != KIND_FREE_LIST {
            return Err(Error::corrupted(pointer.page, "not a free-list page"));
        }
        let count = crate::bytes::read_u16(bytes, PAGE_COUNT_OFFSET)
            .map(usize::from)
            .filter(|count| *count <= entries_per_page(bytes.len()))
            .ok_or(Error::corrupted(
                pointer.page,
                "free-list count past the page",
            ))?;
        for index in 0..count {
            let page = read_u64(
                bytes,
                FREE_LIST_ENTRIES_OFFSET + index * FREE_LIST_ENTRY_BYTES,
            )
            .ok_or(Error::corrupted(pointer.page, "short free-list page"))?;
            if !(META_PAGE_COUNT..high_water_pages).contains(&page) {
                return Err(Error::corrupted(pointer.page, "free page outside the file"));
            }
            if !contents.free.insert(page) {
                return Err(Error::corrupted(pointer.page, "free page listed twice"));
            }
        }
        contents.chain.push(pointer.page);
        let next_page = read_u64(bytes, FREE_LIST_NEXT_PAGE_OFFSET);
        let next_checksum = read_u64(bytes, FREE_LIST_NEXT_CHECKSUM_OFFSET);
        next = match (next_page, next_checksum) {
            (Some(NO_PAGE), _) => None,
            (Some(page), Some(checksum)) => Some(Pointer { page, checksum }),
            _ => return Err(Error::corrupted(pointer.page, "short free-list page")),
        };
    }
    Ok(contents)
}

/// Encodes `entries` (sorted) into the chain pages `chain`, spreading them evenly; returns
/// the encoded pages and the pointer to the first.
pub fn encode(
    page_bytes: usize,
    chain: &[u64],
    entries: &[u64],
    pages: &mut Vec<(u64, Box<[u8]>)>,
) -> Option<Pointer> {
    let per_page = entries.len().div_ceil(chain.len().max(1));
    debug_assert!(
        per_page <= entries_per_page(page_bytes),
        "chain too short for the entries"
    );
    let mut next: Option<Pointer> = None;
    for (index, page) in chain.iter().enumerate().rev() {
        let start = (index * per_page).min(entries.len());
        let end = ((index + 1) * per_page).min(entries.len());
        let mut bytes = vec![0u8; page_bytes];
        bytes[PAGE_KIND_OFFSET] = KIND_FREE_LIST;
        let count = u16::try_from(end - start).expect("a free-list page holds < 2^16 entries");
        write_u16(&mut bytes, PAGE_COUNT_OFFSET, count);
        write_pointer(
            &mut bytes,
            FREE_LIST_NEXT_PAGE_OFFSET,
            next.unwrap_or(Pointer {
                page: NO_PAGE,
                checksum: 0,
            }),
        );
        for (slot, entry) in entries[start..end].iter().enumerate() {
            write_u64(
                &mut bytes,
                FREE_LIST_ENTRIES_OFFSET + slot * FREE_LIST_ENTRY_BYTES,
                *entry,
            );
        }
        let checksum = page_checksum(*page, &bytes[PAGE_CHECKSUMMED_OFFSET..]);
        write_u64(&mut bytes, PAGE_CHECKSUM_OFFSET, checksum);
        pages.push((*page, bytes.into_boxed_slice()));
        next = Some(Pointer {
            page: *page,
            checksum,
        });
    }
    next
}
