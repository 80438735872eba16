//! The span context the code running on this thread works for, and the future wrapper that
//! sets it while a future is polled.
//!
//! A core runs many requests interleaved on one thread, so the context cannot simply be
//! set once per request: [`within`] sets it around every poll of its future and puts the
//! previous value back after, the way a task-local would. Code called synchronously inside
//! that poll (building a mesh invocation, an outgoing request, a child span) reads it with
//! [`current`].
//!
//! Invariants:
//! - after a poll of a [`within`] future returns (or unwinds), the thread's context is what
//!   it was before the poll;
//! - a future spawned as a separate task does not inherit the context: whoever spawns it
//!   passes [`current`] on explicitly (the mesh invocations, the webhook delivery);
//! - reading or setting the context allocates nothing.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::context::SpanContext;

thread_local! {
    /// The context of the span this thread works for right now.
    static CURRENT: Cell<Option<SpanContext>> = const { Cell::new(None) };
}

/// The span context the running code works for, if any.
pub fn current() -> Option<SpanContext> {
    CURRENT.with(Cell::get)
}

/// Runs `future` with `context` as the thread's current span context during each poll.
pub async fn within<F: Future>(context: Option<SpanContext>, future: F) -> F::Output {
    let future = std::pin::pin!(future);
    Within { context, future }.await
}

/// A future polled with its span context set.
struct Within<F> {
    context: Option<SpanContext>,
    future: F,
}

impl<F: Future + Unpin> Future for Within<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, waker: &mut Context<'_>) -> Poll<F::Output> {
        let _restore = Restore(CURRENT.with(|current| current.replace(self.context)));
        Pin::new(&mut self.future).poll(waker)
    }
}

/// Puts the previous context back when dropped (also when the poll unwinds).
struct Restore(Option<SpanContext>);

impl Drop for Restore {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(self.0));
    }
}
