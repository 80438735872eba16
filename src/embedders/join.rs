//! Running a few futures of one task at once and collecting their outputs in order: how
//! an embedder has several batches in flight without spawning tasks.
//!
//! Invariants: every future is polled until it is done (none is dropped early), outputs
//! come back in the order of the futures, and all of them run on the calling task.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Awaits all of `futures` concurrently; their outputs, in the same order.
pub async fn join_in_order<Work: Future>(futures: Vec<Work>) -> Vec<Work::Output> {
    let mut futures: Vec<Pin<Box<Work>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<Work::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|context| {
        let mut waiting = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_some() {
                continue;
            }
            match future.as_mut().poll(context) {
                Poll::Ready(value) => *output = Some(value),
                Poll::Pending => waiting = true,
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_come_back_in_order() {
        let futures: Vec<_> = (0..5).map(|value| async move { value * 2 }).collect();
        let outputs = futures_lite::future::block_on(join_in_order(futures));
        assert_eq!(outputs, [0, 2, 4, 6, 8]);
    }
}
