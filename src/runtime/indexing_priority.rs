//! The scheduling of the threads that index (each core's indexing and analysis threads): a
//! low priority, a short scheduler slice and cooperative turns.
//!
//! - The nice value of the indexing share (see [`super::indexing_share`]; nice 10 by default)
//!   gives them that share of a CPU its executor keeps busy, the latency classes' ratio (see
//!   [`super::indexing_thread`]).
//! - Turns (the `turns` crate): the long loops of a batch give the CPU back every
//!   `turns::TURN_LENGTH`, so that a busy executor never waits a whole scheduler tick
//!   behind them.
//! - A scheduler slice of [`SCHEDULER_SLICE`] (`sched_setattr`'s runtime, which the kernel's
//!   EEVDF scheduler takes as the slice, from Linux 6.12): a thread that gives its CPU back
//!   moves its virtual deadline by one slice, so with the default slice a turn cost it several
//!   ticks of waiting and its share of a busy CPU fell to about a third of the tenth (a busy
//!   loop beside another at nice 0 on one CPU: 3.5 % instead of 10.6 %); with this one it keeps
//!   its share (9.1 %).
//!
//! Invariant: only threads that index are set up here; an executor keeps the default slice and
//! never takes turns.

use std::io;
use std::time::Duration;

/// The scheduler slice of the threads that index (the kernel clamps it to 0.1–100 ms).
pub const SCHEDULER_SLICE: Duration = Duration::from_micros(100);

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

/// Puts the calling thread in the normal scheduling class at `nice`, with a scheduler slice
/// of `slice` (zero: the kernel's default). A kernel without custom slices keeps its default
/// slice whatever it is asked.
fn set_nice_and_slice(nice: i32, slice: Duration) -> io::Result<()> {
    let attributes = SchedulingAttributes {
        size: u32::try_from(size_of::<SchedulingAttributes>()).map_err(io::Error::other)?,
        policy: u32::try_from(libc::SCHED_OTHER).map_err(io::Error::other)?,
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

/// Sets up the calling thread to index: the nice value and scheduler slice of `share`, and
/// turns. `role` names the thread in the warnings.
pub fn set_up_indexing_thread(role: &str, share: super::indexing_share::IndexingShare) {
    let nice = share.nice();
    let slice = share.scheduler_slice().unwrap_or(Duration::ZERO);
    assert!(
        (0..=19).contains(&nice),
        "a thread that indexes never runs above nice 0"
    );
    if let Err(error) = set_nice_and_slice(nice, slice) {
        tracing::warn!(%error, role, "a thread that indexes keeps the default scheduler slice");
        if let Err(error) = super::blocking::lower_own_priority(nice) {
            tracing::warn!(%error, role, "a thread that indexes runs at normal priority");
        }
    }
    turns::take_turns_on_this_thread();
}
