//! Latency classes (ARCHITECTURE.md §2.3): on every core, serving requests comes before indexing.
//!
//! Each core runs its work in two glommio task queues. The serving queue is the executor's
//! default queue: connections, searches, document reads and task reads run there. The
//! indexing queue holds the scheduler (on the control core) and every shard's share of a
//! write batch (preparing, applying, editing, committing, rebuilding after a settings
//! change). glommio gives each active queue CPU time in proportion to its shares, so while
//! both have work the serving queue gets glommio's default 1000 shares for what the indexing
//! share gives indexing ([`super::indexing_share::IndexingShare::queue_shares`], a tenth of the
//! core by default); an idle serving queue leaves the whole core to indexing.
//!
//! A queue keeps the core until the executor's preemption timer fires
//! ([`PREEMPTION_INTERVAL`]) and its running task yields (`glommio::yield_if_needed`, which
//! every long write loop calls on a budget). The interval therefore bounds how long one step
//! of a request (a read, a hop through the mesh, a reply) waits behind a busy indexing
//! queue; glommio's own default of 100 ms made a request of a few such steps wait most of a
//! second while a long document edition ran.
//!
//! glommio 0.9 can park an executor that still has runnable tasks: when the preemption
//! timer has already fired by the time the executor looks at its task queues (the thread
//! was descheduled for longer than the interval), it reports "nothing ran" and sleeps until
//! the next I/O event or timer. At startup, with nothing in flight, that is a hang; seen
//! here with many servers starting at once on two CPUs. Each core therefore keeps a
//! heartbeat timer, so such a sleep lasts at most [`HEARTBEAT_INTERVAL`]. Before a core's
//! future first runs there is no heartbeat yet; [`super::first_poll`] covers that window. The cost is that
//! many wake-ups per second on an idle core: the idle server (two cores) went from 4.5-4.9
//! to 14.5 ms of CPU per second with a 10 ms period, to 11.5 ms with this one (measured by
//! `search_cpu`, which also found the CPU per search unchanged).
//!
//! Invariants:
//! - [`install`] runs once per core, before anything is spawned into [`LatencyClass::Indexing`];
//! - a task spawned with `glommio::spawn_local` stays in the queue of the task that spawned
//!   it, so the whole tree of a batch's work runs in the indexing queue;
//! - no queue handle crosses cores: each core keeps its own in a thread-local.

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use glommio::{Latency, Shares, TaskQueueHandle};

/// How long a task queue may keep the core before the executor looks at the others.
pub const PREEMPTION_INTERVAL: Duration = Duration::from_millis(5);

/// Period of each core's heartbeat timer (see [`install`]).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(20);

/// Which queue a piece of work runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyClass {
    /// Requests: anything a client waits on.
    Serving,
    /// The write path: batches, settings rebuilds, index removal.
    Indexing,
}

thread_local! {
    /// This core's indexing queue, once [`install`] created it.
    static INDEXING_QUEUE: Cell<Option<TaskQueueHandle>> = const { Cell::new(None) };
}

/// Creates this core's indexing queue, with `indexing_shares` CPU shares beside the serving
/// queue's 1000, and starts its heartbeat. Called by the runtime at the start of every core.
pub fn install(indexing_shares: usize) {
    let handle = glommio::executor().create_task_queue(
        Shares::Static(indexing_shares),
        Latency::NotImportant,
        "indexing",
    );
    INDEXING_QUEUE.with(|queue| queue.set(Some(handle)));
    glommio::spawn_local(async {
        loop {
            glommio::timer::sleep(HEARTBEAT_INTERVAL).await;
        }
    })
    .detach();
}

/// Whether the running task is in this core's indexing queue (never on a core where
/// [`install`] has not run).
pub fn in_indexing_queue() -> bool {
    INDEXING_QUEUE
        .with(Cell::get)
        .is_some_and(|queue| queue == glommio::executor().current_task_queue())
}

/// Gives the core back if the running task is in the indexing queue and its slice is spent
/// (`glommio::yield_if_needed`); a serving task goes on. For steps that run for both classes
/// and that a caller may repeat without any await that yields (a request for a shard of this
/// core runs inline): an indexing loop of them would hold the core for the whole loop, while
/// a serving task yielding there would only put its own answer behind indexing work.
pub async fn yield_if_indexing_needs() {
    if in_indexing_queue() {
        glommio::yield_if_needed().await;
    }
}

/// Spawns `work` on this core in the queue of `class` and lets it run to its end. On a core
/// where [`install`] has not run (a unit test's bare executor) every class runs in the
/// current queue.
pub fn spawn_detached(class: LatencyClass, work: impl Future<Output = ()> + 'static) {
    let queue = match class {
        LatencyClass::Serving => Some(TaskQueueHandle::default()),
        LatencyClass::Indexing => INDEXING_QUEUE.with(Cell::get),
    };
    let Some(queue) = queue else {
        glommio::spawn_local(work).detach();
        return;
    };
    // glommio refuses only a queue it does not know: the default queue always exists, and
    // the indexing queue is created by `install` and never removed.
    match glommio::spawn_local_into(work, queue) {
        Ok(task) => {
            task.detach();
        }
        Err(error) => tracing::error!(%error, ?class, "no task queue for the class"),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::{Duration, Instant};

    use glommio::{LocalExecutorBuilder, Placement};

    use super::{
        LatencyClass, PREEMPTION_INTERVAL, in_indexing_queue, install, spawn_detached,
        yield_if_indexing_needs,
    };

    /// How long both busy loops compete for the core.
    const CONTENTION: Duration = Duration::from_millis(300);

    /// One unit of busy work: a few microseconds of spinning.
    fn work_unit() {
        let started = Instant::now();
        while started.elapsed() < Duration::from_micros(5) {
            std::hint::spin_loop();
        }
    }

    /// Runs one busy loop per class for [`CONTENTION`], each yielding only when glommio asks;
    /// answers the units of work each got done (serving, indexing).
    fn units_done_under_contention() -> (u64, u64) {
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(super::super::executors::IO_MEMORY_BYTES)
            .preempt_timer(PREEMPTION_INTERVAL)
            .spawn(|| async {
                install(crate::runtime::indexing_share::IndexingShare::default().queue_shares());
                let started = Instant::now();
                let counts = Rc::new([Cell::new(0u64), Cell::new(0u64)]);
                let finished = Rc::new(Cell::new(0));
                for (slot, class) in [LatencyClass::Serving, LatencyClass::Indexing]
                    .into_iter()
                    .enumerate()
                {
                    let counts = counts.clone();
                    let finished = finished.clone();
                    spawn_detached(class, async move {
                        while started.elapsed() < CONTENTION {
                            work_unit();
                            counts[slot].set(counts[slot].get() + 1);
                            glommio::yield_if_needed().await;
                        }
                        finished.set(finished.get() + 1);
                    });
                }
                while finished.get() < 2 {
                    glommio::timer::sleep(PREEMPTION_INTERVAL).await;
                }
                (counts[0].get(), counts[1].get())
            })
            .expect("an executor starts");
        handle.join().expect("the executor finishes")
    }

    #[test]
    fn the_serving_queue_gets_most_of_a_core_an_indexing_loop_also_wants() {
        let (serving, indexing) = units_done_under_contention();
        // The shares give serving ten parts to indexing's one; a loose bound keeps the test
        // about the classes, not about scheduling noise.
        assert!(
            serving > 4 * indexing,
            "serving did {serving} units, indexing {indexing}"
        );
        assert!(indexing > 0, "indexing still advances");
    }

    #[test]
    fn a_task_knows_whether_it_runs_in_the_indexing_queue() {
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(super::super::executors::IO_MEMORY_BYTES)
            .spawn(|| async {
                let before_install = in_indexing_queue();
                install(crate::runtime::indexing_share::IndexingShare::default().queue_shares());
                let seen = Rc::new([Cell::new(None), Cell::new(None)]);
                for (slot, class) in [LatencyClass::Serving, LatencyClass::Indexing]
                    .into_iter()
                    .enumerate()
                {
                    let seen = seen.clone();
                    spawn_detached(class, async move {
                        yield_if_indexing_needs().await;
                        seen[slot].set(Some(in_indexing_queue()));
                    });
                }
                while seen.iter().any(|slot| slot.get().is_none()) {
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }
                (before_install, seen[0].get(), seen[1].get())
            })
            .expect("an executor starts");
        let (before_install, serving, indexing) = handle.join().expect("the executor finishes");
        assert!(!before_install, "no indexing queue before install");
        assert_eq!(
            serving,
            Some(false),
            "a serving task is not in the indexing queue"
        );
        assert_eq!(indexing, Some(true), "an indexing task is");
    }

    #[test]
    fn without_install_every_class_still_runs() {
        let handle = LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(super::super::executors::IO_MEMORY_BYTES)
            .spawn(|| async {
                let ran = Rc::new(Cell::new(0));
                for class in [LatencyClass::Serving, LatencyClass::Indexing] {
                    let ran = ran.clone();
                    spawn_detached(class, async move { ran.set(ran.get() + 1) });
                }
                while ran.get() < 2 {
                    glommio::yield_if_needed().await;
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }
                ran.get()
            })
            .expect("an executor starts");
        assert_eq!(handle.join().expect("the executor finishes"), 2);
    }
}
