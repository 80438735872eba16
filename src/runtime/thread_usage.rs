//! What the kernel counts for the calling thread: here its major page faults, the reads a
//! core had to wait for because a page of a memory map was not in memory (ARCHITECTURE.md §2.4: a
//! major fault stalls the core's every request).
//!
//! It also counts the calling thread's CPU time, user and system, for a core's load.
//!
//! Invariant: called on a core's executor thread, it answers that core's own figure.

/// What `getrusage` says of the calling thread, or `None` when the kernel does not tell.
fn thread_usage() -> Option<libc::rusage> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory the size of a `rusage`, which is all
    // `getrusage` writes; `RUSAGE_THREAD` asks about the calling thread only.
    let outcome = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    if outcome != 0 {
        return None;
    }
    // SAFETY: a `rusage` is plain integers, valid when zeroed, and `getrusage` succeeded.
    Some(unsafe { usage.assume_init() })
}

/// The CPU time, user and system, the calling thread used since it started, in seconds (0
/// when the kernel does not tell).
pub fn cpu_seconds() -> f64 {
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    thread_usage().map_or(0.0, |usage| {
        seconds(usage.ru_utime) + seconds(usage.ru_stime)
    })
}

/// The major page faults of the calling thread since it started (0 when the kernel does not
/// tell).
pub fn major_page_faults() -> u64 {
    thread_usage().map_or(0, |usage| u64::try_from(usage.ru_majflt).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_counts_its_cpu_time() {
        let used = std::thread::spawn(|| {
            let start = cpu_seconds();
            let mut sum = 0_u64;
            let begun = std::time::Instant::now();
            while begun.elapsed() < std::time::Duration::from_millis(50) {
                sum = std::hint::black_box(sum.wrapping_add(1));
            }
            cpu_seconds() - start
        })
        .join()
        .expect("the thread ends");
        assert!(used >= 0.02, "50 ms of spinning counted {used} s");
    }

    #[test]
    fn a_thread_reads_its_own_figure() {
        // A new thread starts from zero and rarely faults; the call only has to answer.
        let faults = std::thread::spawn(major_page_faults)
            .join()
            .expect("the thread answers");
        assert!(faults < u64::MAX);
    }
}
