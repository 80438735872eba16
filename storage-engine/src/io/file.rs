//! The real file backend: read-only `memmap2` mappings that follow the file as it grows,
//! `pwrite` for writes, `fdatasync` for syncs.
//!
//! Address space grows with the data, not with the number of files: the file is mapped in
//! *generations*. Each generation maps the file from offset 0 with a power-of-two length
//! ([`MAPPING_BYTES_MIN`] at least); when the file grows past the newest generation, a new
//! one twice as long (or as long as needed) is mapped beside it. Old generations stay mapped,
//! untouched, until the backend drops, so the address space a file holds is below four times
//! its length (the newest generation is less than twice the file, and every older one half
//! of the next), plus [`MAPPING_BYTES_MIN`].
//!
//! Invariants:
//! - a generation is mapped once and never moved or unmapped before the backend drops, so
//!   every slice handed out stays valid for the life of the backend, whatever the file grows
//!   to (the engine's snapshots keep borrowing them);
//! - the newest generation is published (release) before the length it covers, and `read`
//!   loads the length (acquire) before the generation: a reader that sees a length also sees
//!   a generation covering it;
//! - `read` refuses ranges past the current file length, so no access can fault on a page
//!   beyond the end of the file, in any generation;
//! - every generation maps the same file from offset 0 through the page cache, so the same
//!   offset reads the same bytes in all of them.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use memmap2::{Mmap, MmapOptions};

use super::PageIo;
use crate::error::{Error, Result};

/// The shortest mapping of a file: a small store needs one generation only, and a hundred
/// thousand such files take 6.4 TiB of the 128 TiB of x86-64's user address space.
pub const MAPPING_BYTES_MIN: u64 = 64 << 20;
/// Generations a file may have: each is at least twice the previous one, from
/// [`MAPPING_BYTES_MIN`], so 40 cover any length that fits the address space.
const GENERATIONS_MAX: usize = 40;

/// A page store file on disk.
pub struct FileIo {
    file: File,
    /// Every mapping made of the file, oldest first; `newest` indexes the one reads use.
    generations: [OnceLock<Mmap>; GENERATIONS_MAX],
    newest: AtomicUsize,
    length: AtomicU64,
    /// The file never grows past this many bytes (nothing is reserved for it).
    maximum: u64,
    /// Serializes growths: the mapping of a new generation and the length change.
    growing: Mutex<()>,
}

impl FileIo {
    /// Opens (or creates, when `create`) the file at `path`, takes an exclusive lock on it,
    /// and maps it; the file may later grow to `maximum` bytes.
    pub fn open(path: &Path, create: bool, maximum: u64) -> Result<FileIo> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .open(path)?;
        lock_exclusively(&file)?;
        let length = file.metadata()?.len();
        if usize::try_from(maximum).is_err() {
            return Err(Error::InvalidOptions(
                "maximum size does not fit the address space",
            ));
        }
        if length > maximum {
            return Err(Error::InvalidOptions(
                "the file is larger than the maximum size",
            ));
        }
        let io = FileIo {
            file,
            generations: std::array::from_fn(|_| OnceLock::new()),
            newest: AtomicUsize::new(0),
            length: AtomicU64::new(length),
            maximum,
            growing: Mutex::new(()),
        };
        let first = map_file(&io.file, mapping_bytes(length, 0))?;
        io.generations[0]
            .set(first)
            .map_err(|_| Error::InvalidOptions("a new file backend was mapped twice"))?;
        Ok(io)
    }

    /// The generation reads use now.
    fn newest_mapping(&self) -> &Mmap {
        let index = self.newest.load(Ordering::Acquire);
        self.generations[index]
            .get()
            .expect("a generation is published only once mapped")
    }

    /// Maps a new generation covering `length` bytes unless the newest already does; the
    /// caller holds `growing`.
    fn cover(&self, length: u64) -> Result<()> {
        let index = self.newest.load(Ordering::Acquire);
        let current = self.newest_mapping().len() as u64;
        if length <= current {
            return Ok(());
        }
        let next = index + 1;
        let Some(slot) = self.generations.get(next) else {
            return Err(Error::MapFull {
                maximum_bytes: current,
            });
        };
        let mapping = map_file(&self.file, mapping_bytes(length, current))?;
        slot.set(mapping)
            .map_err(|_| Error::InvalidOptions("a generation was mapped twice"))?;
        self.newest.store(next, Ordering::Release);
        Ok(())
    }

    /// Mappings made so far (one per generation).
    #[cfg(test)]
    fn generations(&self) -> usize {
        self.newest.load(Ordering::Acquire) + 1
    }

    /// Address space the mappings hold, in bytes.
    #[cfg(test)]
    fn mapped_bytes(&self) -> u64 {
        self.generations
            .iter()
            .filter_map(OnceLock::get)
            .map(|mapping| mapping.len() as u64)
            .sum()
    }
}

/// The length of a new generation that covers `needed` bytes, after one of `previous`
/// bytes (0 for the first): a power of two, at least twice the previous one.
fn mapping_bytes(needed: u64, previous: u64) -> u64 {
    needed
        .max(previous.saturating_mul(2))
        .max(MAPPING_BYTES_MIN)
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX)
}

/// A read-only shared mapping of the first `length` bytes of `file` (past its end too: the
/// pages past the end are never read, see `FileIo::read`).
fn map_file(file: &File, length: u64) -> Result<Mmap> {
    let length = usize::try_from(length)
        .map_err(|_| Error::InvalidOptions("a mapping does not fit the address space"))?;
    // SAFETY: the mapping is read-only and shared with the page cache of a file we hold an
    // exclusive lock on; the engine only reads ranges below the file length (see `read`),
    // and bytes changed by our own pwrite are seen coherently through the page cache. Other
    // processes truncating the file are excluded by the lock. Default readahead, as LMDB
    // (without MDB_NORDAHEAD): with MADV_RANDOM, cold point reads measured two to three
    // times slower in storage_bench.
    Ok(unsafe { MmapOptions::new().len(length).map(file)? })
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
        let mapping = self.newest_mapping();
        debug_assert!(
            end <= mapping.len(),
            "the newest generation covers the length"
        );
        mapping.get(start..end)
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
        let end = start.checked_add(length).ok_or_else(invalid)?;
        if end > self.newest_mapping().len() {
            return Err(invalid());
        }
        // Slices of older generations may still be read, so the range is dropped from every
        // generation that covers it.
        for mapping in self.generations.iter().filter_map(OnceLock::get) {
            if end > mapping.len() {
                continue;
            }
            // SAFETY: the mapping is a shared, read-only mapping of the file, never written
            // through: dropping its resident pages loses nothing, and a later read (of this
            // backend or of a slice handed out before) maps the same bytes again from the
            // page cache. The range lies inside the mapping (checked above).
            unsafe {
                mapping.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, length)
            }
            .map_err(Error::from_io)?;
        }
        Ok(())
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
        if length > self.maximum {
            return Err(Error::MapFull {
                maximum_bytes: self.maximum,
            });
        }
        // Held across the check and the change, so two growths never shrink the file.
        let _growing = self.growing.lock().unwrap_or_else(PoisonError::into_inner);
        if length > self.length() {
            // The mapping first, then the file, then the length readers see (see the
            // module's invariants): a failed mapping leaves the file as it was.
            self.cover(length)?;
            self.file.set_len(length).map_err(Error::from_io)?;
            self.length.store(length, Ordering::Release);
        }
        Ok(())
    }

    fn capacity(&self) -> u64 {
        self.maximum
    }
}

#[cfg(test)]
mod tests {
    use super::{FileIo, MAPPING_BYTES_MIN, mapping_bytes};
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

    #[test]
    fn a_new_generation_is_at_least_twice_the_last_and_a_power_of_two() {
        assert_eq!(mapping_bytes(0, 0), MAPPING_BYTES_MIN);
        assert_eq!(
            mapping_bytes(MAPPING_BYTES_MIN + 1, 0),
            2 * MAPPING_BYTES_MIN
        );
        assert_eq!(
            mapping_bytes(MAPPING_BYTES_MIN + 1, MAPPING_BYTES_MIN),
            2 * MAPPING_BYTES_MIN
        );
        assert_eq!(mapping_bytes(5 << 30, MAPPING_BYTES_MIN), 8 << 30);
    }

    #[test]
    fn slices_of_an_old_generation_stay_valid_and_equal_after_growth() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let path = directory.path().join("store");
        let io = FileIo::open(&path, true, 1 << 40).expect("the file opens");
        io.grow(4096).expect("the file grows");
        io.write(0, &[7; 4096]).expect("the first page is written");
        let early = io.read(0, 4096).expect("the first page reads");
        assert_eq!(io.generations(), 1);
        let long = 3 * MAPPING_BYTES_MIN + 4096;
        io.grow(long)
            .expect("the file grows past the first generation");
        assert_eq!(io.generations(), 2, "one new generation covers the growth");
        assert_eq!(io.mapped_bytes(), MAPPING_BYTES_MIN + 4 * MAPPING_BYTES_MIN);
        io.write(long - 4096, &[9; 4096])
            .expect("the last page is written");
        let late = io.read(long - 4096, 4096).expect("the last page reads");
        assert!(late.iter().all(|&byte| byte == 9));
        assert!(
            early.iter().all(|&byte| byte == 7),
            "the old slice still reads"
        );
        let again = io.read(0, 4096).expect("the first page reads again");
        assert_eq!(again, early, "both generations show the same bytes");
        io.unmap_resident(0, 4096)
            .expect("dropped from every generation");
        assert!(
            early.iter().all(|&byte| byte == 7),
            "read again from the cache"
        );
        assert!(
            io.read(long - 4096, 8192).is_none(),
            "past the end is refused"
        );
    }

    #[test]
    fn thousands_of_files_open_at_once_without_running_out_of_address_space() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        // Each file once reserved 1 TiB, so about 125 fit in x86-64's user address space.
        let files: Vec<FileIo> = (0..1_000)
            .map(|number| {
                let path = directory.path().join(format!("store-{number}"));
                let io = FileIo::open(&path, true, 1 << 46).expect("the file opens");
                io.grow(1 << 20).expect("the file grows");
                io
            })
            .collect();
        let mapped: u64 = files.iter().map(FileIo::mapped_bytes).sum();
        assert_eq!(mapped, 1_000 * MAPPING_BYTES_MIN);
    }

    #[test]
    fn growing_past_the_maximum_is_map_full_and_changes_nothing() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let path = directory.path().join("store");
        let io = FileIo::open(&path, true, 1 << 20).expect("the file opens");
        io.grow(1 << 20).expect("up to the maximum");
        let refused = io.grow((1 << 20) + 4096);
        assert!(
            matches!(refused, Err(crate::Error::MapFull { .. })),
            "{refused:?}"
        );
        assert_eq!(io.length(), 1 << 20);
        assert_eq!(
            std::fs::metadata(&path).expect("the file exists").len(),
            1 << 20
        );
    }
}
