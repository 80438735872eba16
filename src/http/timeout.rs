//! Racing a future against a [`Timer`], or against a connection's [`LazyDeadline`] and
//! its registration with the [`ShutdownSignal`](super::ShutdownSignal).
//!
//! Invariant: the timer is created only if the future does not complete at its first poll,
//! so the hot path (data already there) never pays for a timer.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use super::Timer;
use super::deadline::LazyDeadline;
use super::shutdown::ShutdownWait;

/// How a raced future ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Raced<T> {
    Done(T),
    TimedOut,
    ShutDown,
}

/// Runs `future` until it completes or `duration` passes (`None`).
pub(crate) async fn with_timeout<T: Timer, F: Future>(
    timer: &T,
    duration: Duration,
    future: F,
) -> Option<F::Output> {
    match race(timer, duration, future).await {
        Raced::Done(output) => Some(output),
        Raced::TimedOut | Raced::ShutDown => None,
    }
}

/// Runs `future` until it completes or `duration` passes.
pub(crate) async fn race<T: Timer, F: Future>(
    timer: &T,
    duration: Duration,
    future: F,
) -> Raced<F::Output> {
    let mut future = pin!(future);
    let mut sleep = pin!(None);
    poll_fn(|context| {
        if let Poll::Ready(output) = future.as_mut().poll(context) {
            return Poll::Ready(Raced::Done(output));
        }
        if sleep.is_none() {
            sleep.set(Some(timer.sleep(duration)));
        }
        if let Some(sleep) = sleep.as_mut().as_pin_mut() {
            if sleep.poll(context).is_ready() {
                return Poll::Ready(Raced::TimedOut);
            }
        }
        Poll::Pending
    })
    .await
}

/// Runs `future` until it completes, `deadline` passes, or `shutdown` fires. The deadline
/// and the shutdown wait outlive the race, so a connection registers them once, not once
/// per wait.
pub(crate) async fn race_deadline<T: Timer, F: Future>(
    deadline: &mut LazyDeadline<'_, T>,
    shutdown: &mut ShutdownWait<'_>,
    future: F,
) -> Raced<F::Output> {
    let mut future = pin!(future);
    poll_fn(|context| {
        if let Poll::Ready(output) = future.as_mut().poll(context) {
            return Poll::Ready(Raced::Done(output));
        }
        if deadline.poll_expired(context).is_ready() {
            return Poll::Ready(Raced::TimedOut);
        }
        if std::pin::Pin::new(&mut *shutdown).poll(context).is_ready() {
            return Poll::Ready(Raced::ShutDown);
        }
        Poll::Pending
    })
    .await
}
