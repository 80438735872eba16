//! CPU time of every thread of a process, read from `/proc/PID/task/TID/schedstat`, whose
//! first field is the nanoseconds the thread has spent on a CPU: much finer than the clock
//! ticks of `/proc/PID/stat`, so a single request of a few hundred microseconds shows up.
//!
//! Invariants: a snapshot maps each thread id to its CPU nanoseconds when it was read; the CPU
//! consumed between two snapshots counts each thread of the later one by its growth since the
//! earlier one, and a thread born in between by its whole time; a thread that ended in between
//! is absent from the later snapshot, so its last run is lost, never counted negative.

use std::collections::BTreeMap;

/// The CPU nanoseconds of each thread of a process at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadCpu {
    nanoseconds_per_thread: BTreeMap<u32, u64>,
}

/// The first field of a schedstat line: nanoseconds on a CPU.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

impl ThreadCpu {
    /// A snapshot of the given threads and their CPU nanoseconds.
    pub fn from_threads(threads: impl IntoIterator<Item = (u32, u64)>) -> ThreadCpu {
        ThreadCpu {
            nanoseconds_per_thread: threads.into_iter().collect(),
        }
    }

    /// Reads every thread of process `pid`. A thread that ends between the listing and its
    /// read is left out; a process without any readable thread is an error.
    pub fn read(pid: u32) -> Result<ThreadCpu, String> {
        let task_directory = format!("/proc/{pid}/task");
        let entries = std::fs::read_dir(&task_directory)
            .map_err(|error| format!("cannot list {task_directory}: {error}"))?;
        let mut threads = Vec::new();
        for entry in entries.flatten() {
            let Some(thread_id) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            let schedstat_path = entry.path().join("schedstat");
            let Ok(text) = std::fs::read_to_string(&schedstat_path) else {
                continue;
            };
            let nanoseconds = parse_schedstat(&text)
                .ok_or_else(|| format!("{} is malformed: {text:?}", schedstat_path.display()))?;
            threads.push((thread_id, nanoseconds));
        }
        if threads.is_empty() {
            return Err(format!("no readable thread in {task_directory}"));
        }
        Ok(ThreadCpu::from_threads(threads))
    }

    /// The CPU nanoseconds the threads spent since the `earlier` snapshot.
    pub fn consumed_since(&self, earlier: &ThreadCpu) -> u64 {
        self.nanoseconds_per_thread
            .iter()
            .map(|(thread_id, now)| {
                let before = earlier
                    .nanoseconds_per_thread
                    .get(thread_id)
                    .copied()
                    .unwrap_or(0);
                now.saturating_sub(before)
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_schedstat_field_is_the_time_on_cpu() {
        assert_eq!(
            parse_schedstat("40083249692 3330437835 43086\n"),
            Some(40_083_249_692)
        );
        assert_eq!(parse_schedstat("7"), Some(7));
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("-3 1 1"), None);
        assert_eq!(parse_schedstat("many 1 1"), None);
    }

    #[test]
    fn consumption_sums_growth_counts_new_threads_whole_and_ignores_ended_ones() {
        let earlier = ThreadCpu::from_threads([(10, 1_000), (11, 5_000), (12, 9_000)]);
        // Thread 12 ended, thread 13 was born, thread 11 did not run.
        let later = ThreadCpu::from_threads([(10, 1_750), (11, 5_000), (13, 300)]);
        assert_eq!(later.consumed_since(&earlier), 750 + 300);
        assert_eq!(earlier.consumed_since(&earlier), 0);
        // A reused thread id whose counter restarted lower counts as zero, not negative.
        let reused = ThreadCpu::from_threads([(10, 200)]);
        assert_eq!(reused.consumed_since(&earlier), 0);
    }

    #[test]
    fn the_own_process_is_readable_and_burning_cpu_grows_its_time() {
        let pid = std::process::id();
        let before = ThreadCpu::read(pid).expect("the own threads are readable");
        let mut spin = 0u64;
        for step in 0..5_000_000u64 {
            spin = spin.wrapping_add(step ^ (spin >> 3));
        }
        let after = ThreadCpu::read(pid).expect("the own threads are readable");
        assert_ne!(std::hint::black_box(spin), 1);
        assert!(after.consumed_since(&before) > 0);
        assert!(ThreadCpu::read(u32::MAX).is_err());
    }
}
