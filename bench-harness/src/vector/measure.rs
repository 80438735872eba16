//! Timing, percentiles and page-cache eviction for cold measurements.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

/// Seconds since `start`.
pub fn seconds(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

/// CPU seconds this thread has run (immune to time spent waiting for a core on a loaded
/// machine, unlike the wall clock).
pub fn thread_cpu_seconds() -> f64 {
    turns::pace::thread_cpu_time().as_secs_f64()
}

/// The `fraction` percentile of `values` (sorted copy), in the values' unit.
pub fn percentile(values: &[f64], fraction: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[index]
}

/// Drops the clean page-cache pages of `path` (after syncing it), so that the next reads
/// come from the disk. Pages mapped by a live mapping are not dropped: close first.
pub fn evict(path: &Path) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
    file.sync_all().map_err(|error| error.to_string())?;
    // SAFETY: advice on a descriptor we own; no memory is involved.
    let outcome = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if outcome == 0 {
        Ok(())
    } else {
        Err(format!("posix_fadvise failed: {outcome}"))
    }
}

/// This process's resident memory now and at its peak (`VmRSS`, `VmHWM` of
/// `/proc/self/status`), in MiB; `None` where the file does not exist. Mapped file pages
/// the process touched (vector files, page store) count as resident.
pub fn resident_mebibytes() -> Option<(f64, f64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map(|kibibytes| kibibytes / 1024.0)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// A Markdown line with the process's resident memory at `moment`.
pub fn print_memory(moment: &str) {
    if let Some((now, peak)) = resident_mebibytes() {
        println!("\nmemory ({moment}): resident {now:.0} MiB, peak resident {peak:.0} MiB\n");
    }
}
