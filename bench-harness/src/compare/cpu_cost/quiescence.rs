//! Waiting until a process is quiet: none of its threads running or runnable. A server may
//! still work (free memory, log, finish its write) after the last byte of an answer left, so
//! the CPU reading after a request waits for quiet, and so does the reading before the next.
//!
//! Invariants: the state of a thread is the third field of `/proc/PID/task/TID/stat`, read
//! after the last `)` (a thread name may hold spaces and parentheses); `R` is the only busy
//! state; a thread that ends while being read counts as quiet; the wait never exceeds its
//! timeout and says whether quiet was reached.

use std::time::{Duration, Instant};

/// Pause between two looks at the threads' states.
pub const QUIET_POLL_INTERVAL: Duration = Duration::from_micros(50);
/// The scheduler state of a running or runnable thread.
const RUNNING_STATE: char = 'R';

/// The state letter of a `/proc/.../stat` line.
pub fn thread_state(stat_text: &str) -> Option<char> {
    let after_name = &stat_text[stat_text.rfind(')')? + 1..];
    after_name.split_ascii_whitespace().next()?.chars().next()
}

/// Whether no thread of process `pid` is running or runnable.
pub fn is_quiet(pid: u32) -> Result<bool, String> {
    let task_directory = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&task_directory)
        .map_err(|error| format!("cannot list {task_directory}: {error}"))?;
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if thread_state(&text) == Some(RUNNING_STATE) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Waits until process `pid` is quiet or `timeout` passed; whether it became quiet.
pub fn wait_until_quiet(pid: u32, timeout: Duration) -> Result<bool, String> {
    let started = Instant::now();
    loop {
        if is_quiet(pid)? {
            return Ok(true);
        }
        if started.elapsed() >= timeout {
            return Ok(false);
        }
        std::thread::sleep(QUIET_POLL_INTERVAL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_follows_the_last_parenthesis_of_the_name() {
        assert_eq!(
            thread_state("18944 (core-0-2) S 18940 18940 1 0 -1"),
            Some('S')
        );
        assert_eq!(thread_state("7 (a) (b) c) R 1 1"), Some('R'));
        assert_eq!(thread_state("7 (truncated"), None);
        assert_eq!(thread_state("7 (name)"), None);
    }

    #[test]
    fn a_missing_process_is_an_error() {
        assert!(is_quiet(u32::MAX).is_err());
        assert!(wait_until_quiet(u32::MAX, Duration::ZERO).is_err());
    }
}
