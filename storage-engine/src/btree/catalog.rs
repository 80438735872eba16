//! The catalog: a tree mapping each tree name to its root pointer and entry count.
//!
//! Invariant: a catalog value is exactly `CATALOG_VALUE_BYTES`; root page `NO_PAGE` means
//! an empty tree.

use crate::error::{Error, Result};
use crate::page_store::bytes::{read_u64, write_u64};
use crate::page_store::layout::*;
use crate::page_store::page::Pointer;

/// Where a named tree lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeRoot {
    /// Root node, `None` for an empty tree.
    pub root: Option<Pointer>,
    /// Number of entries.
    pub entry_count: u64,
}

/// Encodes a catalog value.
pub fn encode(tree: &TreeRoot) -> Vec<u8> {
    let mut bytes = vec![0u8; CATALOG_VALUE_BYTES];
    let root = tree.root.unwrap_or(Pointer {
        page: NO_PAGE,
        checksum: 0,
    });
    write_u64(&mut bytes, CATALOG_ROOT_PAGE_OFFSET, root.page);
    write_u64(&mut bytes, CATALOG_ROOT_CHECKSUM_OFFSET, root.checksum);
    write_u64(&mut bytes, CATALOG_ENTRY_COUNT_OFFSET, tree.entry_count);
    bytes
}

/// Decodes a catalog value found in `page`.
pub fn decode(bytes: &[u8], page: u64) -> Result<TreeRoot> {
    if bytes.len() != CATALOG_VALUE_BYTES {
        return Err(Error::corrupted(page, "catalog entry of the wrong length"));
    }
    let field =
        |offset| read_u64(bytes, offset).ok_or(Error::corrupted(page, "short catalog entry"));
    let root_page = field(CATALOG_ROOT_PAGE_OFFSET)?;
    let root = (root_page != NO_PAGE).then_some(Pointer {
        page: root_page,
        checksum: field(CATALOG_ROOT_CHECKSUM_OFFSET)?,
    });
    Ok(TreeRoot {
        root,
        entry_count: field(CATALOG_ENTRY_COUNT_OFFSET)?,
    })
}

/// Checks a tree name: non-empty, at most `KEY_BYTES_MAX` bytes.
pub fn check_name(name: &str) -> Result<&[u8]> {
    if name.is_empty() || name.len() > KEY_BYTES_MAX {
        return Err(Error::InvalidTreeName);
    }
    Ok(name.as_bytes())
}
