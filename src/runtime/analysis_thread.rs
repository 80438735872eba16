//! Each core's analysis thread: it shares the analysis of the documents of a batch this core
//! applies (parsing, compressing, cutting into words; see `shards::shard::analysis_ahead`)
//! with the core's indexing thread, which merges them; pinned to the next core's CPU.
//!
//! Why on the next core's CPU: an index has one shard on a server of up to two cores (see
//! `config::default_shards_per_index`), so its batches are applied by one indexing thread, and
//! the other CPU sat idle while it indexed (`tuning/results/analysis-ahead-2026-11-28.md`).
//!
//! Why paced like the indexing thread: it is indexing work, and it must give the next core's
//! CPU to that core's executor while it serves, as the indexing thread gives its own (see
//! [`super::indexing_thread`]).
//!
//! Invariants:
//! - at most one analysis thread per core, started only on a server of two cores or more; its
//!   jobs run one at a time, in the order they were handed over;
//! - a job that panics fails its chunk (the batch reports the error); the thread goes on with
//!   the next job;
//! - a job the thread cannot take (it ended, which it does only with its core) runs on a new
//!   thread instead, or is dropped if none starts (the indexing thread then analyses the
//!   whole chunk).

use std::cell::RefCell;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};

use shards::shard::{AheadJob, AheadRunner};

use super::indexing_thread::{INDEXING_THREAD_STACK_BYTES, pin_to_cpu};

thread_local! {
    /// This core's analysis thread, once [`install`] started it.
    static ANALYSIS_THREAD: RefCell<Option<mpsc::Sender<AheadJob>>> = const { RefCell::new(None) };
}

/// Starts this core's analysis thread, pinned to `cpu` (another core's) and paced against
/// that CPU's executor with `share`, as the indexing thread. Called by the runtime at the start of every core of
/// a server of two cores or more.
pub fn install(
    core: usize,
    cpu: usize,
    share: super::indexing_share::IndexingShare,
) -> io::Result<()> {
    let (sender, receiver) = mpsc::channel::<AheadJob>();
    std::thread::Builder::new()
        .name(format!("analysis-{core}"))
        .stack_size(INDEXING_THREAD_STACK_BYTES)
        .spawn(move || {
            let pinned = match pin_to_cpu(cpu) {
                Ok(()) => Some(cpu),
                Err(error) => {
                    tracing::warn!(%error, cpu, "an analysis thread runs unpinned");
                    None
                }
            };
            super::indexing_priority::set_up_indexing_thread("analysis", share, pinned);
            // The loop ends when the core's sender goes, at the core's end.
            while let Ok(job) = receiver.recv() {
                turns::start_turn();
                if catch_unwind(AssertUnwindSafe(job)).is_err() {
                    tracing::error!("an analysis job panicked; its batch fails");
                }
            }
        })?;
    ANALYSIS_THREAD.with(|slot| *slot.borrow_mut() = Some(sender));
    Ok(())
}

/// What hands this core's batches' analysis to its analysis thread; `None` on a core without
/// one (a server of one core, a unit test's bare executor): batches analyse on their own
/// thread.
pub fn runner() -> Option<AheadRunner> {
    let sender = ANALYSIS_THREAD.with(|slot| slot.borrow().clone())?;
    Some(Arc::new(move |job: AheadJob| {
        if let Err(mpsc::SendError(job)) = sender.send(job) {
            tracing::error!("the analysis thread is gone; a chunk is analysed on a new thread");
            if let Err(error) = std::thread::Builder::new()
                .name("analysis-fallback".to_owned())
                .spawn(job)
            {
                tracing::error!(%error, "no thread shares a chunk's analysis");
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use glommio::{LocalExecutorBuilder, Placement};

    /// A share other than the default.
    const TEST_SHARE_PERCENT: u8 = 33;

    use super::{install, runner};

    /// Runs `body` on a fresh executor whose core has an analysis thread on CPU 0.
    fn on_core<Output: Send + 'static>(body: impl FnOnce() -> Output + Send + 'static) -> Output {
        LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(super::super::executors::IO_MEMORY_BYTES)
            .spawn(|| async move {
                install(
                    3,
                    0,
                    crate::runtime::indexing_share::IndexingShare::percent(TEST_SHARE_PERCENT),
                )
                .expect("the analysis thread starts");
                body()
            })
            .expect("an executor starts")
            .join()
            .expect("the executor finishes")
    }

    #[test]
    fn jobs_run_in_order_on_the_paced_analysis_thread_in_turns_and_outlive_a_panic() {
        let answers = on_core(|| {
            let run = runner().expect("the core has an analysis thread");
            let (sender, receiver) = mpsc::channel();
            run(Box::new(|| panic!("an analysis job failed")));
            for job in 0..3u32 {
                let sender = sender.clone();
                run(Box::new(move || {
                    // SAFETY: getpriority reads its integer arguments only.
                    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
                    let name = std::thread::current().name().map(str::to_owned);
                    let takes_turns = (turns::takes_turns(), turns::is_paced());
                    sender
                        .send((job, nice, name, takes_turns))
                        .expect("the test listens");
                }));
            }
            drop(sender);
            receiver.iter().collect::<Vec<_>>()
        });
        assert_eq!(answers.len(), 3, "every job after the panic ran");
        // SAFETY: getpriority reads its integer arguments only.
        let own_nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        for (index, (job, nice, name, (takes_turns, paced))) in answers.into_iter().enumerate() {
            assert_eq!(job as usize, index);
            assert_eq!(nice, own_nice, "analysis runs at the process's nice value");
            assert_eq!(name.as_deref(), Some("analysis-3"));
            assert!(
                takes_turns && paced,
                "the analysis thread gives its CPU back in turns, paced against CPU 0's executor"
            );
        }
    }

    #[test]
    fn a_core_without_an_analysis_thread_has_no_runner() {
        let none = LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(super::super::executors::IO_MEMORY_BYTES)
            .spawn(|| async move { runner().is_none() })
            .expect("an executor starts")
            .join()
            .expect("the executor finishes");
        assert!(none);
    }
}
