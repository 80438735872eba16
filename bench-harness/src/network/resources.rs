//! What each instance of a network spent during one phase (ingestion, a search run, a
//! topology change): its CPU time, from `/proc/PID/stat` (utime + stime of every thread),
//! and its peak resident memory, from `/proc/PID/status` (`VmHWM`).
//!
//! Invariants: the CPU time counts only the phase (the difference between its end and its
//! start); the peak is reset at the start of the phase (writing `5` to
//! `/proc/PID/clear_refs`, which the kernel allows the process's owner) so it is the phase's
//! own peak, and when the reset is refused the figure is marked as the peak since the
//! process started instead of being passed off as the phase's.

use crate::load::process_cpu::CpuMeter;
use crate::measure::peak_resident_bytes;

/// What `/proc/PID/clear_refs` takes to reset the peak resident memory (`VmHWM`).
const CLEAR_PEAK_RESIDENT: &[u8] = b"5";

/// One instance's use of the machine during a phase.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceUsage {
    /// The instance's remote name.
    pub name: String,
    /// CPU seconds (user + system) spent in the phase.
    pub cpu_seconds: f64,
    /// Average cores used over the phase.
    pub cores_used: f64,
    /// Peak resident memory, in bytes, when readable.
    pub peak_resident_bytes: Option<u64>,
    /// Whether the peak is the phase's own (reset at its start) rather than since the start.
    pub peak_is_phase_own: bool,
}

/// A started measurement of several instances.
#[derive(Debug)]
pub struct UsageMeter {
    instances: Vec<(String, u32, CpuMeter, bool)>,
}

/// Resets the peak resident memory of `pid`; false when the kernel refused.
fn reset_peak_resident(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), CLEAR_PEAK_RESIDENT).is_ok()
}

impl UsageMeter {
    /// Starts measuring the instances `(name, pid)` now.
    pub fn start(instances: &[(String, u32)]) -> Result<UsageMeter, String> {
        let mut measured = Vec::with_capacity(instances.len());
        for (name, pid) in instances {
            let process_id =
                i32::try_from(*pid).map_err(|_| format!("process id {pid} out of range"))?;
            let meter =
                CpuMeter::start(&[process_id]).map_err(|error| format!("{name}: {error}"))?;
            let reset = reset_peak_resident(*pid);
            measured.push((name.clone(), *pid, meter, reset));
        }
        Ok(UsageMeter {
            instances: measured,
        })
    }

    /// Ends the measurement now.
    pub fn finish(&self) -> Vec<InstanceUsage> {
        self.instances
            .iter()
            .map(|(name, pid, meter, reset)| {
                let cpu = meter.finish();
                InstanceUsage {
                    name: name.clone(),
                    cpu_seconds: cpu.cpu_seconds,
                    cores_used: cpu.cores_used,
                    peak_resident_bytes: peak_resident_bytes(Some(*pid)),
                    peak_is_phase_own: *reset,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_process_is_measured_with_a_peak() {
        let pid = std::process::id();
        let meter = UsageMeter::start(&[("self".to_string(), pid)]).expect("start succeeds");
        let usage = meter.finish();
        assert_eq!(usage.len(), 1);
        assert_eq!(usage[0].name, "self");
        assert!(usage[0].cpu_seconds >= 0.0);
        assert!(usage[0].peak_resident_bytes.is_some_and(|bytes| bytes > 0));
        assert!(UsageMeter::start(&[("gone".to_string(), u32::MAX)]).is_err());
    }
}
