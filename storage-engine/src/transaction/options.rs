//! Options for opening or creating a page store file.
//!
//! Invariant: `Options::validate` accepts only a power-of-two page size within
//! [`PAGE_BYTES_MIN`, `PAGE_BYTES_MAX`] and sizes that fit that page size.

use crate::error::{Error, Result};
use crate::page_store::layout::{PAGE_BYTES_MAX, PAGE_BYTES_MIN};

/// The default page size.
pub const PAGE_BYTES_DEFAULT: usize = 4096;
/// The default initial file size (grown on demand).
pub const INITIAL_SIZE_BYTES_DEFAULT: u64 = 1 << 20;
/// The default maximum file size, 64 TiB: a limit checked when the file grows, not a
/// reservation (the mapping follows the file, see `io::FileIo`), so the disk bounds a store.
pub const MAXIMUM_SIZE_BYTES_DEFAULT: u64 = 1 << 46;

/// When a commit forces data to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Two `fdatasync` per commit: after the pages, and after the commit slot. A commit that
    /// returned `Ok` survives a power loss.
    Full,
    /// No `fdatasync`. A commit survives a crash of the process (the page cache keeps it),
    /// not of the machine, which may lose recent commits or, without ordering, the file.
    None,
}

/// How to open or create a page store file.
#[derive(Debug, Clone)]
pub struct Options {
    /// Page size in bytes for a new file; an existing file must have this page size.
    pub page_bytes: usize,
    /// Size a new file starts with.
    pub initial_size_bytes: u64,
    /// The file never grows past this (nothing is reserved for it).
    pub maximum_size_bytes: u64,
    /// Durability of commits.
    pub sync_mode: SyncMode,
    /// Create the file when it does not exist.
    pub create: bool,
    /// Most bytes of changed pages a write transaction keeps in memory; past this it writes
    /// them to their places in the file before it commits (see [`crate::WriteTransaction`]).
    /// `None`: no bound.
    pub write_memory_bytes_max: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_bytes: PAGE_BYTES_DEFAULT,
            initial_size_bytes: INITIAL_SIZE_BYTES_DEFAULT,
            maximum_size_bytes: MAXIMUM_SIZE_BYTES_DEFAULT,
            sync_mode: SyncMode::Full,
            create: true,
            write_memory_bytes_max: None,
        }
    }
}

impl Options {
    /// Checks that the options can be used.
    pub fn validate(&self) -> Result<()> {
        if !self.page_bytes.is_power_of_two()
            || self.page_bytes < PAGE_BYTES_MIN
            || self.page_bytes > PAGE_BYTES_MAX
        {
            return Err(Error::InvalidOptions(
                "page size must be a power of two in 4096..=65536",
            ));
        }
        let page_bytes = self.page_bytes as u64;
        if self.maximum_size_bytes < 4 * page_bytes {
            return Err(Error::InvalidOptions(
                "maximum size must hold at least four pages",
            ));
        }
        if self.initial_size_bytes > self.maximum_size_bytes {
            return Err(Error::InvalidOptions(
                "initial size is larger than the maximum size",
            ));
        }
        if usize::try_from(self.maximum_size_bytes).is_err() {
            return Err(Error::InvalidOptions(
                "maximum size does not fit the address space",
            ));
        }
        Ok(())
    }
}
