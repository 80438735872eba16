//! The scheduling of the threads that index (each core's indexing and analysis threads): the
//! process's own priority, a short scheduler slice, cooperative turns and pacing.
//!
//! - Pacing (`turns::pace`): while the executor of the CPU a thread is pinned to serves
//!   requests (see [`super::serving_activity`]), the thread keeps the indexing share of that
//!   CPU (`--indexing-cpu-share`, see [`super::indexing_share`]) and sleeps the rest; while it
//!   does not, the thread runs as any other thread of the process's nice value. Other
//!   processes of the host therefore compete with indexing as with any thread of theirs,
//!   where a lower nice value made indexing give way to all of them.
//! - Turns (the `turns` crate): the long loops of a batch give the CPU back every
//!   `turns::TURN_LENGTH`, and pace there, so that a busy executor never waits a whole
//!   scheduler tick behind them.
//! - The scheduling policy ([`SchedulingPolicy`], `--indexing-scheduler-policy`): `SCHED_BATCH`
//!   by default, so that a thread waking from its pacing sleep waits for the executor's slice
//!   to end instead of preempting it (`tuning/results/fair-share-2026-11-29.md`).
//! - A scheduler slice of [`SCHEDULER_SLICE`] (`sched_setattr`'s runtime, which the kernel's
//!   EEVDF scheduler takes as the slice, from Linux 6.12): a thread that gives its CPU back
//!   moves its virtual deadline by one slice, so with the default slice each turn cost it
//!   several ticks of waiting; with this one an executor that wakes up preempts it within a
//!   tenth of a millisecond. A kernel before 6.12 ignores it (`--indexing-scheduler-slice-micros
//!   0` forces that behaviour, `tuning/results/fair-share-2026-11-28.md`).
//!
//! Invariant: only threads that index are set up here; an executor keeps the default slice and
//! never takes turns.

use std::io;
use std::time::Duration;

/// The scheduler slice of the threads that index (the kernel clamps it to 0.1–100 ms).
pub const SCHEDULER_SLICE: Duration = Duration::from_micros(100);

/// The kernel scheduling policy of the threads that index (`--indexing-scheduler-policy`).
/// Both are the fair class at the process's nice value, the same weight against other
/// processes; they differ in wake-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulingPolicy {
    /// `SCHED_OTHER`: a thread that wakes from its pacing sleep may preempt the executor.
    Normal,
    /// `SCHED_BATCH`: a thread that wakes never preempts; it runs once the executor's slice
    /// ends or the executor sleeps.
    Batch,
}

impl SchedulingPolicy {
    fn kernel_policy(self) -> libc::c_int {
        match self {
            SchedulingPolicy::Normal => libc::SCHED_OTHER,
            SchedulingPolicy::Batch => libc::SCHED_BATCH,
        }
    }
}

/// The arguments of `sched_setattr` (`struct sched_attr` of `linux/sched/types.h`), which the
/// `libc` crate does not declare.
#[repr(C)]
struct SchedulingAttributes {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    utilisation_minimum: u32,
    utilisation_maximum: u32,
}

/// Puts the calling thread in the fair scheduling class under `policy` at `nice`, with a
/// scheduler slice of `slice` (zero: the kernel's default). A kernel without custom slices
/// keeps its default slice whatever it is asked.
fn set_policy_and_slice(policy: SchedulingPolicy, nice: i32, slice: Duration) -> io::Result<()> {
    let attributes = SchedulingAttributes {
        size: u32::try_from(size_of::<SchedulingAttributes>()).map_err(io::Error::other)?,
        policy: u32::try_from(policy.kernel_policy()).map_err(io::Error::other)?,
        flags: 0,
        nice,
        priority: 0,
        runtime: u64::try_from(slice.as_nanos()).map_err(io::Error::other)?,
        deadline: 0,
        period: 0,
        utilisation_minimum: 0,
        utilisation_maximum: 0,
    };
    // SAFETY: `attributes` is a valid sched_attr whose size field says its size; pid 0 names
    // the calling thread; the kernel only reads it, during the call.
    let result = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &raw const attributes, 0) };
    if result == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets up the calling thread to index: the process's nice value with the scheduling policy
/// and slice of `share`, and turns, paced against the executor of `cpu` (the CPU the thread is pinned to;
/// `None`: not pinned, so not paced). `role` names the thread in the warnings.
pub fn set_up_indexing_thread(
    role: &str,
    share: super::indexing_share::IndexingShare,
    cpu: Option<usize>,
) {
    let nice = own_nice();
    let slice = share.scheduler_slice().unwrap_or(Duration::ZERO);
    if let Err(error) = set_policy_and_slice(share.scheduling_policy(), nice, slice) {
        tracing::warn!(
            %error,
            role,
            "a thread that indexes keeps the default scheduling policy and slice"
        );
    }
    match cpu {
        Some(cpu) => turns::take_paced_turns_on_this_thread(
            turns::Pacer::percent(share.as_percent()),
            Box::new(super::serving_activity::CpuContention { cpu }),
        ),
        None => turns::take_turns_on_this_thread(),
    }
}

/// The calling thread's nice value (0 if the kernel does not tell).
fn own_nice() -> i32 {
    // SAFETY: getpriority reads its integer arguments only; who 0 is the calling thread.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    nice.clamp(-20, 19)
}
