//! Batched reads through io_uring, residency checks (`mincore`) and read-ahead advice
//! (`madvise`) for vector files.
//!
//! Invariant: `read_batch` fills every buffer completely or fails; when the kernel refuses
//! io_uring (old kernel, seccomp) it falls back to positioned reads, same result.

use io_uring::{IoUring, opcode, types};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// Submission queue entries of one ring (reads beyond this are submitted in rounds).
pub const URING_ENTRIES: u32 = 256;

/// The operating system's page size.
pub fn page_bytes() -> usize {
    // SAFETY: sysconf has no memory effects; a failure returns -1, handled below.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|size| *size > 0)
        .unwrap_or(4096)
}

/// Whether every page under `bytes` (a slice of a file mapping) is in memory.
pub fn is_resident(bytes: &[u8]) -> bool {
    let page = page_bytes();
    let start = bytes.as_ptr() as usize;
    let aligned = start - start % page;
    let length = start + bytes.len() - aligned;
    let pages = length.div_ceil(page);
    let mut vector = [0_u8; 8];
    if pages > vector.len() {
        return false;
    }
    // SAFETY: `aligned..aligned + length` lies within the mapping that holds `bytes` (a
    // mapping starts on a page boundary, so rounding down stays inside it), and `vector` has
    // room for one byte per page of that range.
    let outcome =
        unsafe { libc::mincore(aligned as *mut libc::c_void, length, vector.as_mut_ptr()) };
    outcome == 0 && vector[..pages].iter().all(|flags| flags & 1 == 1)
}

/// Advises the kernel that `bytes` (a slice of a file mapping) will be read soon.
pub fn advise_will_need(bytes: &[u8]) {
    let page = page_bytes();
    let start = bytes.as_ptr() as usize;
    let aligned = start - start % page;
    let length = start + bytes.len() - aligned;
    // SAFETY: madvise only gives advice about a range inside our mapping (see `is_resident`);
    // it never changes memory contents. A failure only means no read-ahead.
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, length, libc::MADV_WILLNEED);
    }
}

/// Reads `record_bytes` at each offset of `offsets` into `out` (one buffer of whole `u64`
/// words per offset, in order).
pub fn read_batch(
    file: &File,
    offsets: &[u64],
    record_bytes: usize,
    out: &mut Vec<Vec<u64>>,
) -> std::io::Result<()> {
    assert_eq!(
        record_bytes % size_of::<u64>(),
        0,
        "records are whole words"
    );
    out.clear();
    out.extend(
        offsets
            .iter()
            .map(|_| vec![0_u64; record_bytes / size_of::<u64>()]),
    );
    match IoUring::new(URING_ENTRIES) {
        Ok(mut ring) => read_with_ring(&mut ring, file, offsets, record_bytes, out),
        Err(_) => read_with_pread(file, offsets, out),
    }
}

fn read_with_ring(
    ring: &mut IoUring,
    file: &File,
    offsets: &[u64],
    record_bytes: usize,
    out: &mut [Vec<u64>],
) -> std::io::Result<()> {
    let descriptor = types::Fd(file.as_raw_fd());
    let length = u32::try_from(record_bytes).map_err(std::io::Error::other)?;
    let mut short = Vec::new();
    for round in (0..offsets.len())
        .collect::<Vec<_>>()
        .chunks(URING_ENTRIES as usize)
    {
        for &index in round {
            let buffer = out[index].as_mut_ptr().cast::<u8>();
            let entry = opcode::Read::new(descriptor, buffer, length)
                .offset(offsets[index])
                .build()
                .user_data(index as u64);
            // SAFETY: the buffer lives in `out`, which outlives this round (we wait for every
            // completion below before returning or touching it), and holds `length` bytes.
            unsafe { ring.submission().push(&entry) }.map_err(std::io::Error::other)?;
        }
        short.extend(complete_round(ring, round.len(), length));
    }
    // A short or failed read (signal, end of file) is retried with a plain positioned read.
    for index in short {
        read_one(file, offsets[index], &mut out[index])?;
    }
    Ok(())
}

/// Submits the pushed reads and waits until all `expected` completed; answers the indexes
/// of the reads that did not read `length` bytes (short or failed).
///
/// The kernel writes into a read's buffer until it posts that read's completion, so this
/// returns only once every completion arrived: a wait that a signal interrupts (`EINTR`) or
/// the kernel refuses for now (`EAGAIN`, `EBUSY`) is made again. Any other failure of the
/// wait leaves reads in flight into buffers the caller would free; the process aborts
/// rather than let the kernel write into freed memory.
fn complete_round(ring: &mut IoUring, expected: usize, length: u32) -> Vec<usize> {
    let mut short = Vec::new();
    let mut completed = 0;
    while completed < expected {
        match ring.submit_and_wait(expected - completed) {
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) => {}
            Err(error) => {
                eprintln!("io_uring wait failed with reads in flight: {error}");
                std::process::abort();
            }
        }
        for completion in ring.completion() {
            completed += 1;
            if u32::try_from(completion.result()) != Ok(length) {
                short.push(completion.user_data() as usize);
            }
        }
    }
    short
}

fn read_with_pread(file: &File, offsets: &[u64], out: &mut [Vec<u64>]) -> std::io::Result<()> {
    for (offset, buffer) in offsets.iter().zip(out.iter_mut()) {
        read_one(file, *offset, buffer)?;
    }
    Ok(())
}

fn read_one(file: &File, offset: u64, buffer: &mut [u64]) -> std::io::Result<()> {
    let length = std::mem::size_of_val(buffer);
    // SAFETY: a u64 slice is a valid byte slice of eight times its length, and any byte
    // pattern written into it is a valid u64.
    let bytes = unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast::<u8>(), length) };
    file.read_exact_at(bytes, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};

    /// Records in the test file: more than one ring round.
    const RECORDS: u64 = 3 * URING_ENTRIES as u64;
    /// Words per record.
    const WORDS: usize = 64;
    /// Batches read while the reading thread is signalled.
    const BATCHES: usize = 200;

    extern "C" fn ignore_signal(_: libc::c_int) {}

    /// A file whose record `r` holds the words `r * WORDS + w`.
    fn numbered_file() -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("temporary file");
        for word in 0..RECORDS * WORDS as u64 {
            file.write_all(&word.to_le_bytes()).expect("write");
        }
        file.flush().expect("flush");
        file.as_file().sync_all().expect("sync");
        file
    }

    /// Drops the file's pages from the page cache, so the next reads wait for the device.
    fn evict(file: &File) {
        // SAFETY: advice about a descriptor this test owns; it never changes its contents.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }

    #[test]
    fn batches_read_every_record_while_signals_interrupt_the_waits() {
        // A handler without SA_RESTART: a wait in io_uring_enter returns EINTR.
        // SAFETY: a zeroed sigaction is valid; the handler does nothing, so it is
        // async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ignore_signal as *const () as usize;
            assert_eq!(
                libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()),
                0
            );
        }
        let file = numbered_file();
        let offsets: Vec<u64> = (0..RECORDS)
            .rev()
            .map(|record| record * (WORDS * 8) as u64)
            .collect();
        let started = Arc::new(Barrier::new(2));
        let done = Arc::new(AtomicBool::new(false));
        // SAFETY: pthread_self has no preconditions.
        let reader = unsafe { libc::pthread_self() };
        let signaller = {
            let (started, done) = (started.clone(), done.clone());
            std::thread::spawn(move || {
                started.wait();
                let mut sent = 0_u64;
                while !done.load(Ordering::Acquire) {
                    // SAFETY: the reading thread lives until `done` is set and this thread
                    // is joined; SIGUSR2 has a handler.
                    unsafe { libc::pthread_kill(reader, libc::SIGUSR2) };
                    sent += 1;
                }
                sent
            })
        };
        started.wait();
        let mut out = Vec::new();
        for _ in 0..BATCHES {
            evict(file.as_file());
            read_batch(file.as_file(), &offsets, WORDS * 8, &mut out).expect("the batch is read");
            for (buffer, record) in out.iter().zip((0..RECORDS).rev()) {
                let first = record * WORDS as u64;
                assert!(buffer.iter().copied().eq(first..first + WORDS as u64));
            }
        }
        done.store(true, Ordering::Release);
        let sent = signaller.join().expect("the signalling thread ends");
        assert!(sent > 0, "no signal was sent");
    }
}
