//! The real file backend: one read-only `memmap2` mapping that reserves the whole maximum
//! size up front, `pwrite` for writes, `fdatasync` for syncs.
//!
//! Invariant: the mapping is created once and never moved, so every slice handed out stays
//! valid for the life of the backend, whatever the file grows to; `read` refuses ranges past
//! the current file length, so no access can fault on a page beyond the end of the file.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{Mmap, MmapOptions};

use super::PageIo;
use crate::error::{Error, Result};

/// A page store file on disk.
pub struct FileIo {
    file: File,
    mapping: Mmap,
    length: AtomicU64,
    capacity: u64,
}

impl FileIo {
    /// Opens (or creates, when `create`) the file at `path`, takes an exclusive lock on it,
    /// and reserves `capacity` bytes of address space for its mapping.
    pub fn open(path: &Path, create: bool, capacity: u64) -> Result<FileIo> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .open(path)?;
        lock_exclusively(&file)?;
        let length = file.metadata()?.len();
        let capacity_bytes = usize::try_from(capacity)
            .map_err(|_| Error::InvalidOptions("maximum size does not fit the address space"))?;
        if length > capacity {
            return Err(Error::InvalidOptions(
                "the file is larger than the maximum size",
            ));
        }
        // SAFETY: the mapping is read-only and private to this process's view of a file we
        // hold an exclusive lock on; the engine only reads ranges below the file length (see
        // `read`), and bytes changed by our own pwrite are seen coherently through the page
        // cache. Other processes truncating the file are excluded by the lock.
        let mapping = unsafe { MmapOptions::new().len(capacity_bytes).map(&file)? };
        // Default readahead, as LMDB (without MDB_NORDAHEAD): with MADV_RANDOM, cold
        // point reads measured two to three times slower in storage_bench.
        Ok(FileIo {
            file,
            mapping,
            length: AtomicU64::new(length),
            capacity,
        })
    }
}

fn lock_exclusively(file: &File) -> Result<()> {
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let outcome = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if outcome == 0 {
        Ok(())
    } else {
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Err(Error::Incompatible("the file is locked by another process"))
        } else {
            Err(Error::from_io(error))
        }
    }
}

impl PageIo for FileIo {
    fn length(&self) -> u64 {
        self.length.load(Ordering::Acquire)
    }

    fn read(&self, offset: u64, length: usize) -> Option<&[u8]> {
        let end = offset.checked_add(u64::try_from(length).ok()?)?;
        if end > self.length() {
            return None;
        }
        let start = usize::try_from(offset).ok()?;
        let end = usize::try_from(end).ok()?;
        self.mapping.get(start..end)
    }

    fn write(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, offset)
            .map_err(Error::from_io)
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(Error::from_io)
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn write_durable(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        let vector = libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        let position = libc::off_t::try_from(offset)
            .map_err(|_| Error::Io(std::io::Error::from(std::io::ErrorKind::InvalidInput)))?;
        loop {
            // SAFETY: `vector` points at `bytes`, alive and unchanged for the call; the
            // kernel only reads it (a write), and the descriptor is ours and open.
            let written = unsafe {
                libc::pwritev2(self.file.as_raw_fd(), &vector, 1, position, libc::RWF_DSYNC)
            };
            if written >= 0 && written as usize == bytes.len() {
                return Ok(());
            }
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) if written < 0 => continue,
                // A kernel without per-write flags, or a short write: the plain way.
                Some(libc::ENOSYS | libc::EOPNOTSUPP | libc::EINVAL) if written < 0 => break,
                _ if written >= 0 => break,
                _ => return Err(Error::from_io(error)),
            }
        }
        self.write(offset, bytes)?;
        self.sync()
    }

    fn release(&self, offset: u64, length: u64) -> Result<()> {
        let invalid = || Error::Io(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        let start = libc::off_t::try_from(offset).map_err(|_| invalid())?;
        let length = libc::off_t::try_from(length).map_err(|_| invalid())?;
        loop {
            // SAFETY: plain system call on our open descriptor; it takes no pointers.
            let outcome = unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    start,
                    length,
                )
            };
            if outcome == 0 {
                return Ok(());
            }
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                // No holes on this file system: the blocks stay, nothing is wrong.
                Some(libc::EOPNOTSUPP | libc::ENOSYS) => return Ok(()),
                _ => return Err(Error::from_io(error)),
            }
        }
    }

    fn unmap_resident(&self, offset: u64, length: u64) -> Result<()> {
        let invalid = || Error::Io(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        let start = usize::try_from(offset).map_err(|_| invalid())?;
        let length = usize::try_from(length).map_err(|_| invalid())?;
        if start
            .checked_add(length)
            .is_none_or(|end| end > self.mapping.len())
        {
            return Err(invalid());
        }
        // SAFETY: the mapping is a shared, read-only mapping of the file, never written
        // through: dropping its resident pages loses nothing, and a later read (of this
        // backend or of a slice handed out before) maps the same bytes again from the page
        // cache. The range lies inside the mapping (checked above).
        unsafe {
            self.mapping
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, length)
        }
        .map_err(Error::from_io)
    }

    #[cfg(target_os = "linux")]
    fn start_writeback(&self, offset: u64, length: u64) -> Result<()> {
        let invalid = || Error::Io(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        let offset = libc::off64_t::try_from(offset).map_err(|_| invalid())?;
        let length = libc::off64_t::try_from(length).map_err(|_| invalid())?;
        // SYNC_FILE_RANGE_WRITE alone starts the writeback of the range's dirty pages not
        // under writeback yet and does not wait for it.
        // SAFETY: sync_file_range reads its integer arguments only; the descriptor is this
        // backend's open file, alive for the call.
        let result = unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                offset,
                length,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        if result == 0 {
            Ok(())
        } else {
            Err(Error::from_io(std::io::Error::last_os_error()))
        }
    }

    fn grow(&self, length: u64) -> Result<()> {
        if length > self.capacity {
            return Err(Error::MapFull {
                maximum_bytes: self.capacity,
            });
        }
        if length > self.length() {
            self.file.set_len(length).map_err(Error::from_io)?;
            self.length.store(length, Ordering::Release);
        }
        Ok(())
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::FileIo;
    use crate::io::PageIo;

    #[test]
    fn starting_writeback_keeps_every_byte_and_the_sync_after_it() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let path = directory.path().join("store");
        let page = 4096usize;
        let io = FileIo::open(&path, true, 1 << 30).expect("the file opens");
        io.grow(64 * page as u64).expect("the file grows");
        for number in 0..64u8 {
            io.write(u64::from(number) * page as u64, &[number; 4096])
                .expect("the page is written");
        }
        io.start_writeback(0, 64 * page as u64)
            .expect("the writeback starts");
        io.write(5 * page as u64, &[200; 4096])
            .expect("a page written again while its writeback runs");
        io.sync().expect("the sync succeeds");
        drop(io);
        let bytes = std::fs::read(&path).expect("the file reads back");
        assert_eq!(bytes.len(), 64 * page);
        for number in 0..64usize {
            let expected = if number == 5 { 200 } else { number as u8 };
            let chunk = &bytes[number * page..(number + 1) * page];
            assert!(chunk.iter().all(|&byte| byte == expected), "page {number}");
        }
    }
}
