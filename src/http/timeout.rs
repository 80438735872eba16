//! Racing a future against a [`Timer`] and against the [`ShutdownSignal`].
//!
//! Invariant: the timer is created only if the future does not complete at its first poll,
//! so the hot path (data already there) never pays for a timer.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use super::Timer;
use super::shutdown::ShutdownSignal;

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
    match race(timer, duration, None, future).await {
        Raced::Done(output) => Some(output),
        Raced::TimedOut | Raced::ShutDown => None,
    }
}

/// Runs `future` until it completes, `duration` passes, or `shutdown` (if given) fires.
pub(crate) async fn race<T: Timer, F: Future>(
    timer: &T,
    duration: Duration,
    shutdown: Option<&ShutdownSignal>,
    future: F,
) -> Raced<F::Output> {
    let mut future = pin!(future);
    let mut sleep = pin!(None);
    let mut shutdown_wait = pin!(shutdown.map(ShutdownSignal::wait));
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
        if let Some(wait) = shutdown_wait.as_mut().as_pin_mut() {
            if wait.poll(context).is_ready() {
                return Poll::Ready(Raced::ShutDown);
            }
        }
        Poll::Pending
    })
    .await
}
