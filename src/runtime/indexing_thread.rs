//! Each core's indexing thread: where a shard's CPU-heavy write work runs (applying a chunk of
//! a batch, committing it, rebuilding after a settings change, editing documents), on the
//! core's own CPU, giving way to the core's executor while it serves requests.
//!
//! Why a thread of its own, and why paced: glommio's task queues give indexing a tenth of the
//! executor's time (see [`super::latency`]), but the heavy steps of a batch run off the
//! executor, on helper threads, so that a step of hundreds of milliseconds never stalls the
//! requests queued behind it. Left alone, the kernel splits the CPU evenly between the
//! executor and a busy helper and lets the helper finish its time slice (milliseconds) before
//! a search that just arrived runs: search p99 rose tenfold under sustained writes. This
//! thread is paced instead (see [`super::indexing_priority`]): while the executor serves, it
//! keeps the indexing share of the CPU (`--indexing-cpu-share`, see
//! [`super::indexing_share`]) and sleeps the rest, giving the CPU back every turn; an idle
//! executor leaves the whole CPU to indexing, which then competes with the host's other
//! processes as they compete with each other.
//!
//! Invariants:
//! - one indexing thread per core, pinned to the core's CPU; jobs run one at a time, in the
//!   order they were handed over (a shard's steps are sequential anyway);
//! - a job that panics makes its awaiting task panic with the same payload, as
//!   [`super::blocking::run`] does; the thread itself goes on with the next job;
//! - on a core where [`install`] has not run (a unit test's bare executor), jobs run on
//!   glommio's helper threads instead.

use std::any::Any;
use std::cell::RefCell;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc;

/// Stack of an indexing thread: a document edition's script recurses on it (see
/// `host::edition::SCRIPT_CALL_DEPTH_MAX`); reserved address space, touched only as deep
/// as a job goes.
pub const INDEXING_THREAD_STACK_BYTES: usize = 8 << 20;

/// One job for the indexing thread.
type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// This core's indexing thread, once [`install`] started it.
    static INDEXING_THREAD: RefCell<Option<mpsc::Sender<Job>>> = const { RefCell::new(None) };
}

/// Starts this core's indexing thread, pinned to `cpu` (none: unpinned) and scheduled as
/// `share` says. Called by the runtime at the start of every core.
pub fn install(
    core: usize,
    cpu: Option<usize>,
    share: super::indexing_share::IndexingShare,
) -> io::Result<()> {
    let (sender, receiver) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name(format!("indexing-{core}"))
        .stack_size(INDEXING_THREAD_STACK_BYTES)
        .spawn(move || {
            // A thread that could not be pinned shares no CPU with one executor: not paced.
            let pinned = cpu.filter(|&cpu| match pin_to_cpu(cpu) {
                Ok(()) => true,
                Err(error) => {
                    tracing::warn!(%error, cpu, "an indexing thread runs unpinned");
                    false
                }
            });
            super::indexing_priority::set_up_indexing_thread("indexing", share, pinned);
            // The loop ends when the core's sender goes, at the core's end.
            while let Ok(job) = receiver.recv() {
                turns::start_turn();
                job();
            }
        })?;
    INDEXING_THREAD.with(|slot| *slot.borrow_mut() = Some(sender));
    Ok(())
}

/// Runs `work` on this core's indexing thread and awaits its result.
pub async fn run<Output, Work>(work: Work) -> Output
where
    Work: FnOnce() -> Output + Send + 'static,
    Output: Send + 'static,
{
    let sender = INDEXING_THREAD.with(|slot| slot.borrow().clone());
    let Some(sender) = sender else {
        return super::blocking::run(work).await;
    };
    let (answer, answered) =
        futures_channel::oneshot::channel::<Result<Output, Box<dyn Any + Send>>>();
    let job: Job = Box::new(move || {
        // The receiver is gone only if the awaiting task was dropped: nothing to tell.
        let _ = answer.send(catch_unwind(AssertUnwindSafe(work)));
    });
    if let Err(mpsc::SendError(job)) = sender.send(job) {
        // The thread ended (it never does while its core runs): run the job here instead.
        tracing::error!("the indexing thread is gone; a job runs on a helper thread");
        return run_on_helper(job, answered).await;
    }
    settle(answered.await)
}

/// Runs a job the indexing thread could not take on glommio's helper threads.
async fn run_on_helper<Output: Send + 'static>(
    job: Job,
    answered: futures_channel::oneshot::Receiver<Result<Output, Box<dyn Any + Send>>>,
) -> Output {
    super::blocking::run(job).await;
    settle(answered.await)
}

/// The job's output, or its panic resumed on the awaiting task.
fn settle<Output>(
    answered: Result<Result<Output, Box<dyn Any + Send>>, futures_channel::oneshot::Canceled>,
) -> Output {
    match answered {
        Ok(Ok(output)) => output,
        Ok(Err(panic)) => resume_unwind(panic),
        // A job always answers before it is dropped, panic or not.
        Err(futures_channel::oneshot::Canceled) => {
            panic!("an indexing job was dropped without an answer")
        }
    }
}

/// Pins the calling thread to `cpu`.
pub(super) fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    let in_set = usize::try_from(libc::CPU_SETSIZE).is_ok_and(|size| cpu < size);
    if !in_set {
        return Err(io::Error::other(format!(
            "CPU {cpu} is past the CPU set's size"
        )));
    }
    // SAFETY: cpu_set_t is a plain bit array; an all-zero value is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit of `set`; `cpu` is below CPU_SETSIZE (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` lives across the call and its size is passed with it; pid 0 is this thread.
    let result = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if result == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::time::Duration;

    use futures_lite::FutureExt;
    use glommio::{LocalExecutorBuilder, Placement};

    use super::super::indexing_share::IndexingShare;
    use super::{install, run};

    /// A share other than the default.
    const TEST_SHARE_PERCENT: u8 = 5;

    /// Runs `body` on a fresh executor whose core has an indexing thread.
    fn on_core<Output: Send + 'static>(
        body: impl AsyncFnOnce() -> Output + Send + 'static,
    ) -> Output {
        LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(super::super::executors::IO_MEMORY_BYTES)
            .spawn(|| async move {
                install(0, None, IndexingShare::percent(TEST_SHARE_PERCENT))
                    .expect("the indexing thread starts");
                body().await
            })
            .expect("an executor starts")
            .join()
            .expect("the executor finishes")
    }

    #[test]
    fn jobs_run_in_order_on_one_thread_at_the_process_nice_value_that_takes_turns() {
        let answers = on_core(async || {
            let mut answers = Vec::new();
            for job in 0..4u32 {
                answers.push(
                    run(move || {
                        std::thread::sleep(Duration::from_millis(1));
                        // SAFETY: getpriority reads its integer arguments only.
                        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
                        let name = std::thread::current().name().map(str::to_owned);
                        (job, nice, name, turns::takes_turns(), turns::is_paced())
                    })
                    .await,
                );
            }
            answers
        });
        // SAFETY: getpriority reads its integer arguments only.
        let own_nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        for (index, (job, nice, name, takes_turns, paced)) in answers.into_iter().enumerate() {
            assert_eq!(job as usize, index);
            assert_eq!(nice, own_nice, "indexing runs at the process's nice value");
            assert_eq!(name.as_deref(), Some("indexing-0"));
            assert!(
                takes_turns,
                "the indexing thread gives its CPU back in turns"
            );
            assert!(!paced, "an unpinned thread shares no CPU with one executor");
        }
    }

    #[test]
    fn a_panicking_job_panics_its_caller_and_the_thread_goes_on() {
        let (panicked, after) = on_core(async || {
            let panicked = AssertUnwindSafe(run(|| panic!("job failed")))
                .catch_unwind()
                .await
                .is_err();
            (panicked, run(|| 7).await)
        });
        assert!(panicked, "the awaiting task panicked");
        assert_eq!(after, 7);
    }
}
