//! The pager: verified access to pages through the I/O backend's mapping.
//!
//! Invariants: a page is handed out only after its checksum matched its content once (per
//! open and per allocation; a bitmap remembers pages already verified) and its header
//! checksum equals the one its parent's pointer carries, so a stale or damaged page is an
//! `Error::Corrupted`, never a wrong answer. The writer clears a page's bit when it
//! reallocates the page; no reader can be looking at it then (snapshot rule).

use crate::error::{Error, Result};
use crate::io::PageIo;
use crate::page_store::bytes::read_u64;
use crate::page_store::checksum::{page_checksum, streamed_checksum};
use crate::page_store::layout::*;
use crate::page_store::page::{PageView, Pointer};
use crate::page_store::verified_pages::VerifiedPages;

/// Verified reads and raw writes of pages.
pub struct Pager {
    io: Box<dyn PageIo>,
    page_bytes: usize,
    verified: VerifiedPages,
}

impl Pager {
    /// A pager over `io` with pages of `page_bytes`.
    pub fn new(io: Box<dyn PageIo>, page_bytes: usize) -> Pager {
        Pager {
            io,
            page_bytes,
            verified: VerifiedPages::default(),
        }
    }

    /// The I/O backend.
    pub fn io(&self) -> &dyn PageIo {
        self.io.as_ref()
    }

    /// Page size in bytes.
    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// Pages the file currently holds.
    pub fn file_pages(&self) -> u64 {
        self.io.length() / self.page_bytes as u64
    }

    fn is_verified(&self, page: u64) -> bool {
        self.verified.contains(page)
    }

    fn set_verified(&self, page: u64) {
        self.verified.insert(page);
    }

    /// Forgets that pages `first..first + count` were verified: they are being rewritten.
    pub fn forget_verified(&self, first: u64, count: u64) {
        for page in first..first.saturating_add(count) {
            self.verified.remove(page);
        }
    }

    /// Bytes of `count` pages from `first`, or `Corrupted` past the end of the file.
    pub fn raw_pages(&self, first: u64, count: u64) -> Result<&[u8]> {
        let page_bytes = self.page_bytes as u64;
        let length = count
            .checked_mul(page_bytes)
            .and_then(|bytes| usize::try_from(bytes).ok());
        let offset = first.checked_mul(page_bytes);
        match (offset, length) {
            (Some(offset), Some(length)) if first >= META_PAGE_COUNT => self
                .io
                .read(offset, length)
                .ok_or(Error::corrupted(first, "pointer past the end of the file")),
            _ => Err(Error::corrupted(first, "pointer out of range")),
        }
    }

    /// The page `pointer` names, verified against its own checksum and the pointer's.
    pub fn page(&self, pointer: Pointer) -> Result<&[u8]> {
        let bytes = self.raw_pages(pointer.page, 1)?;
        let stored = read_u64(bytes, PAGE_CHECKSUM_OFFSET)
            .ok_or(Error::corrupted(pointer.page, "short page"))?;
        if !self.is_verified(pointer.page) {
            if page_checksum(pointer.page, &bytes[PAGE_CHECKSUMMED_OFFSET..]) != stored {
                return Err(Error::corrupted(pointer.page, "page checksum mismatch"));
            }
            self.set_verified(pointer.page);
        }
        if stored != pointer.checksum {
            return Err(Error::corrupted(
                pointer.page,
                "page is not the one its parent wrote",
            ));
        }
        Ok(bytes)
    }

    /// The tree node `pointer` names.
    pub fn node(&self, pointer: Pointer) -> Result<PageView<'_>> {
        PageView::new(pointer.page, self.page(pointer)?)
    }

    /// Number of pages an overflow run for a value of `length` bytes takes.
    pub fn overflow_pages(&self, length: u64) -> Result<u64> {
        let total =
            length
                .checked_add(OVERFLOW_DATA_OFFSET as u64)
                .ok_or(Error::ValueTooLarge {
                    length,
                    maximum: VALUE_BYTES_MAX,
                })?;
        Ok(total.div_ceil(self.page_bytes as u64))
    }

    /// The value of `length` bytes stored in the overflow run at `pointer`, verified.
    pub fn overflow(&self, pointer: Pointer, length: u64) -> Result<&[u8]> {
        let pages = self.overflow_pages(length)?;
        let run = self.raw_pages(pointer.page, pages)?;
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| length.checked_add(OVERFLOW_DATA_OFFSET))
            .ok_or(Error::corrupted(pointer.page, "overflow length"))?;
        let stored = read_u64(run, PAGE_CHECKSUM_OFFSET)
            .ok_or(Error::corrupted(pointer.page, "short page"))?;
        if !self.is_verified(pointer.page) {
            if run[PAGE_KIND_OFFSET] != KIND_OVERFLOW {
                return Err(Error::corrupted(pointer.page, "not an overflow page"));
            }
            let checksum = streamed_checksum(pointer.page, &[&run[PAGE_CHECKSUMMED_OFFSET..end]]);
            if checksum != stored {
                return Err(Error::corrupted(pointer.page, "overflow checksum mismatch"));
            }
            self.set_verified(pointer.page);
        }
        if stored != pointer.checksum {
            return Err(Error::corrupted(
                pointer.page,
                "overflow run is not the one its leaf wrote",
            ));
        }
        Ok(&run[OVERFLOW_DATA_OFFSET..end])
    }
}
