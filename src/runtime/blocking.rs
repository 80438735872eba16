//! Running a blocking call (a file sync, say) off the core, on glommio's helper threads, so
//! the core keeps serving requests while it waits; and running background maintenance on a
//! thread of its own at a low CPU priority, so that it takes the CPU only when requests and
//! indexing leave it idle.

use std::io;

/// The nice value of background maintenance threads: the kernel gives a thread of nice 10
/// about a tenth of the CPU share of a nice-0 thread (weight 110 against 1024) when both
/// want it.
pub const BACKGROUND_NICE: i32 = 10;

/// Runs `work` on a helper thread and awaits its result.
pub async fn run<Output, Work>(work: Work) -> Output
where
    Work: FnOnce() -> Output + Send + 'static,
    Output: Send + 'static,
{
    glommio::executor().spawn_blocking(work).await
}

/// Runs `work` on a new thread at nice [`BACKGROUND_NICE`] and awaits its result. A thread
/// of its own, because a thread's nice value cannot be lowered back without privileges.
pub async fn run_in_background<Output, Work>(name: &str, work: Work) -> io::Result<Output>
where
    Work: FnOnce() -> Output + Send + 'static,
    Output: Send + 'static,
{
    let (sender, receiver) = futures_channel::oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            if let Err(error) = lower_own_priority(BACKGROUND_NICE) {
                tracing::warn!(%error, "a background thread runs at normal priority");
            }
            // The receiver is gone only if the awaiting task was dropped: nothing to tell.
            let _ = sender.send(work());
        })?;
    receiver
        .await
        .map_err(|_| io::Error::other("a background thread ended without an answer"))
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
