//! What the kernel counts for the calling thread: here its major page faults, the reads a
//! core had to wait for because a page of a memory map was not in memory (ARCHITECTURE.md §2.4: a
//! major fault stalls the core's every request).
//!
//! Invariant: called on a core's executor thread, it answers that core's own figure.

/// The major page faults of the calling thread since it started (0 when the kernel does not
/// tell).
pub fn major_page_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory the size of a `rusage`, which is all
    // `getrusage` writes; `RUSAGE_THREAD` asks about the calling thread only.
    let outcome = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    if outcome != 0 {
        return 0;
    }
    // SAFETY: a `rusage` is plain integers, valid when zeroed, and `getrusage` succeeded.
    let usage = unsafe { usage.assume_init() };
    u64::try_from(usage.ru_majflt).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_reads_its_own_figure() {
        // A new thread starts from zero and rarely faults; the call only has to answer.
        let faults = std::thread::spawn(major_page_faults)
            .join()
            .expect("the thread answers");
        assert!(faults < u64::MAX);
    }
}
