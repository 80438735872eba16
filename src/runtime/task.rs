//! What the server's code needs of the executor beyond I/O: starting a task on this core,
//! yielding to the core's other tasks, sleeping, a permit semaphore, and a one-core executor
//! for tests. The rest of the server names these, never glommio, so the runtime can change
//! in this folder alone.
//!
//! Invariants:
//! - every task started here runs on the core that started it, in the latency class of the
//!   task that started it; nothing moves between cores except through the mesh;
//! - a task started here works for the span context current where it was started
//!   ([`crate::traces::current`]): spans it starts are children of its starter's.

use std::future::Future;
use std::time::Duration;

/// A task running on this core; awaiting it gives its output, dropping it cancels it.
pub type Task<Output> = glommio::Task<Output>;

/// Starts `future` as a task of this core (in the current latency class).
pub fn spawn<Output: 'static>(future: impl Future<Output = Output> + 'static) -> Task<Output> {
    match crate::traces::current() {
        None => glommio::spawn_local(future),
        Some(parent) => glommio::spawn_local(crate::traces::within(Some(parent), future)),
    }
}

/// Starts `future` as a task of this core whose handle is not kept.
pub fn spawn_detached(future: impl Future<Output = ()> + 'static) {
    spawn(future).detach();
}

/// Lets the core's other tasks run if this one has used up its time slice.
pub async fn yield_if_needed() {
    glommio::yield_if_needed().await;
}

/// Waits `duration` without holding the core.
pub async fn sleep(duration: Duration) {
    glommio::timer::sleep(duration).await;
}

/// A counting semaphore of one core (not shared between cores).
pub type Semaphore = glommio::sync::Semaphore;

/// Runs the future `make` gives to completion on a new one-core executor on its own thread,
/// and answers its output: for tests of code that needs a core (tasks, yields, helpers).
#[cfg(test)]
pub fn run_on_test_core<Work, Output>(make: impl FnOnce() -> Work + Send + 'static) -> Output
where
    Work: Future<Output = Output> + 'static,
    Output: Send + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .spawn(make)
        .expect("a test executor starts")
        .join()
        .expect("the test executor ran")
}

/// A task that runs to its end even when its handle is dropped; awaiting the handle gives
/// `None` if the task was canceled.
pub type Detached<Output> = glommio::task::JoinHandle<Output>;

/// Starts `future` as a task of this core that outlives its handle.
pub fn spawn_to_completion<Output: 'static>(
    future: impl Future<Output = Output> + 'static,
) -> Detached<Output> {
    spawn(future).detach()
}
