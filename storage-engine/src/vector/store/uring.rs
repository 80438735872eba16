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
        ring.submit_and_wait(round.len())?;
        for completion in ring.completion() {
            let index = completion.user_data() as usize;
            if completion.result() != length as i32 {
                short.push(index);
            }
        }
    }
    // A short or failed read (signal, end of file) is retried with a plain positioned read.
    for index in short {
        read_one(file, offsets[index], &mut out[index])?;
    }
    Ok(())
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
