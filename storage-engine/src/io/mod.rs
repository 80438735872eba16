//! Layer 1, the I/O seam between the page store and the disk.
//!
//! May import: `crate::error` only; every layer above reaches the disk through `PageIo`.
//!
//! `PageIo` reads through a stable mapping and writes through positioned writes. Two
//! backends implement it: [`FileIo`] (memmap2 + pwrite + fdatasync) and [`SimulatedIo`]
//! (an in-memory file that keeps the written image and the durable image apart, for crash
//! tests).
//!
//! Invariant the engine keeps for every backend: it never writes a byte range while a slice
//! returned by `read` over that range is alive (copy-on-write: live pages are immutable).

mod file;
mod simulated;

pub use file::FileIo;
pub use simulated::{CrashImage, SimulatedIo};

use crate::error::Result;

/// A file of pages: read through a mapping, written with positioned writes.
pub trait PageIo: Send + Sync {
    /// Current length of the file, in bytes.
    fn length(&self) -> u64;

    /// Bytes `[offset, offset + length)` of the file as last written, or `None` when the
    /// range passes the end of the file. The slice stays valid for the life of `self`.
    fn read(&self, offset: u64, length: usize) -> Option<&[u8]>;

    /// Writes `bytes` at `offset`; the range must lie within `length()`.
    fn write(&self, offset: u64, bytes: &[u8]) -> Result<()>;

    /// Makes every earlier write and length change durable (fdatasync).
    fn sync(&self) -> Result<()>;

    /// Writes `bytes` at `offset` and returns only once that write is durable; earlier
    /// writes must already have been made durable by `sync` (the commit slot, after the
    /// pages). By default a `write` then a `sync`; `FileIo` makes it one `pwritev2` with
    /// `RWF_DSYNC`, as LMDB writes its meta page through an `O_DSYNC` descriptor. An error
    /// leaves the write's durability unknown.
    fn write_durable(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.write(offset, bytes)?;
        self.sync()
    }

    /// Gives the disk blocks of `[offset, offset + length)` back to the file system; the
    /// range reads as zero afterwards. The engine calls it only on free pages that no
    /// snapshot references and no writer holds, so when it becomes durable does not matter:
    /// after a crash the range holds its old bytes or zeros, and neither is ever read. A file
    /// system that cannot punch holes keeps the blocks (not an error).
    fn release(&self, offset: u64, length: u64) -> Result<()>;

    /// Stops holding `[offset, offset + length)` of the read mapping resident in this process:
    /// the next read maps the range again from the page cache, with the same bytes. A hint for
    /// pages the writer copied and stopped using (their bytes stay for older snapshots); a
    /// backend without a mapping does nothing.
    fn unmap_resident(&self, offset: u64, length: u64) -> Result<()> {
        let _ = (offset, length);
        Ok(())
    }

    /// Asks the system to start writing the changed pages of `length` bytes at `offset` to
    /// disk now, without waiting for them: a hint, so that the sync a commit waits for finds
    /// most of the transaction's earlier writes already on disk. Durability still comes only
    /// from `sync`. A backend without a page cache does nothing.
    fn start_writeback(&self, offset: u64, length: u64) -> Result<()> {
        let _ = (offset, length);
        Ok(())
    }

    /// Grows (never shrinks) the file to `length` bytes; new bytes read as zero.
    fn grow(&self, length: u64) -> Result<()>;

    /// Largest length `grow` accepts (a limit; the file backend reserves nothing for it).
    fn capacity(&self) -> u64;
}
