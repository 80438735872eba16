//! Running a blocking call (a file sync, say) off the core, on glommio's helper threads, so
//! the core keeps serving requests while it waits; and running background maintenance on a
//! thread of its own in the kernel's idle scheduling class, so that it takes the CPU only
//! when requests and indexing leave it idle.

use std::io;

/// The nice value of background maintenance threads where the idle scheduling class cannot
/// be entered: the kernel gives a thread of nice 19 about a seventieth of the CPU share of a
/// nice-0 thread (weight 15 against 1024) when both want it.
pub const BACKGROUND_NICE: i32 = 19;

/// Runs `work` on a helper thread and awaits its result.
pub async fn run<Output, Work>(work: Work) -> Output
where
    Work: FnOnce() -> Output + Send + 'static,
    Output: Send + 'static,
{
    glommio::executor().spawn_blocking(work).await
}

/// Runs `work` on a new thread in the kernel's idle scheduling class and awaits its result. A
/// thread of its own, because a thread cannot leave that class without privileges.
///
/// Why the idle class (`SCHED_IDLE`, weight 3 against a nice-0 thread's 1024) rather than a
/// nice value: a snapshot or a dump reads and compresses every page store, about 2.6 CPU
/// seconds for 886k documents. At nice 10 (a tenth of a CPU while searches want it) search
/// p99 under a 16-connection load rose 1.23× during back-to-back snapshots and throughput
/// fell 14 %; in the idle class 0.95–1.05× and at most 6 % (`backup_bench`, three alternating
/// rounds, connections balanced over the cores by [`super::connection_balance`];
/// `tuning/results/backup-bench-2026-11-26.md`). Without the balancing the uneven connection
/// split moves p99 more than the snapshot does.
///
/// The cost: on a machine kept fully busy the idle class gets almost no CPU (its weight is
/// 0.3 % of a nice-0 thread's), so a snapshot or dump waits for a gap. Under the benchmark's
/// closed loop, which keeps both CPUs busy, every snapshot took 24.3 s: it finished about 2 s
/// after each 22 s load ended, against 3 s on an idle server. Background work comes last in
/// the latency classes; a server that never has a gap gets its snapshot when load drops.
///
/// Only work nothing waits on belongs here. The idle repack and release of free pages ran here
/// too, and a task arriving during it waited for the starved thread to see its interrupt
/// flag: under a full search load, writes waited seconds to tens of seconds for it
/// (`tuning/results/fair-share-2026-11-28.md`). That work now runs on the core's indexing
/// thread, as batches do.
pub async fn run_in_background<Output, Work>(name: &str, work: Work) -> io::Result<Output>
where
    Work: FnOnce() -> Output + Send + 'static,
    Output: Send + 'static,
{
    let (sender, receiver) = futures_channel::oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            if let Err(error) = enter_idle_class() {
                tracing::debug!(%error, "a background thread runs at nice {BACKGROUND_NICE}");
                if let Err(error) = lower_own_priority(BACKGROUND_NICE) {
                    tracing::warn!(%error, "a background thread runs at normal priority");
                }
            }
            // The receiver is gone only if the awaiting task was dropped: nothing to tell.
            let _ = sender.send(work());
        })?;
    receiver
        .await
        .map_err(|_| io::Error::other("a background thread ended without an answer"))
}

/// Moves the calling thread into the kernel's idle scheduling class (on Linux the policy is
/// a thread's own): it gets a CPU only when no other thread of normal priority wants it.
fn enter_idle_class() -> io::Result<()> {
    let parameters = libc::sched_param { sched_priority: 0 };
    // SAFETY: `parameters` is a valid sched_param for the call's duration; pid 0 names the
    // calling thread, and SCHED_IDLE requires priority 0, which it has.
    let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &parameters) };
    if result == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the calling thread's nice value to `nice` (on Linux the nice value is a thread's
/// own).
pub(super) fn lower_own_priority(nice: i32) -> io::Result<()> {
    // SAFETY: gettid has no preconditions and only returns the calling thread's id.
    let thread = unsafe { libc::syscall(libc::SYS_gettid) };
    let thread = libc::id_t::try_from(thread).map_err(io::Error::other)?;
    // SAFETY: setpriority reads its three integer arguments only; `thread` is this thread.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, thread, nice) };
    if result == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
