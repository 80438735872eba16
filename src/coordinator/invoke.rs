//! Typed requests between cores: a request type names its answer type, so the compiler pairs
//! every request with its answer, in the spirit of seastar's `invoke_on`.
//!
//! A [`CoreRequest`] runs on the core it is sent to, with that core's [`Coordinator`]; its
//! answer travels back on a one-shot channel of exactly its type. The mesh itself carries
//! one erased [`Invocation`] per request and acknowledges it with `()`. A request for this
//! core is run in place, without the mesh.
//!
//! Invariants:
//! - an invocation answers its requester at most once (the one-shot sender is consumed);
//!   a requester whose invocation never answers (the core went away) gets an error, never
//!   waits forever: the mesh's reply comes only after the invocation ran;
//! - the request's latency class is fixed by its type ([`CoreRequest::CLASS`]).

use std::future::Future;
use std::pin::Pin;

use futures_channel::oneshot;

use super::Coordinator;
use crate::runtime::latency::LatencyClass;

/// A request one core runs on another (or on itself), answered with [`Self::Answer`].
pub trait CoreRequest: Send + 'static {
    /// What the request answers.
    type Answer: Send + 'static;
    /// The latency class the request runs in on the target core.
    const CLASS: LatencyClass;
    /// Runs the request on the target core.
    fn run(self, coordinator: &Coordinator) -> impl Future<Output = Self::Answer>;
}

/// A request with the channel its answer goes back on, its types erased for the mesh.
pub struct Invocation {
    class: LatencyClass,
    work: Box<dyn ErasedRequest>,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Invocation")
            .field("class", &self.class)
            .finish_non_exhaustive()
    }
}

/// The future an erased request runs as, borrowing the target core's coordinator.
type Running<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

trait ErasedRequest: Send {
    fn run<'a>(self: Box<Self>, coordinator: &'a Coordinator) -> Running<'a>;
}

struct Typed<Request: CoreRequest> {
    request: Request,
    answer: oneshot::Sender<Request::Answer>,
}

impl<Request: CoreRequest> ErasedRequest for Typed<Request> {
    fn run<'a>(self: Box<Self>, coordinator: &'a Coordinator) -> Running<'a> {
        let Typed { request, answer } = *self;
        Box::pin(async move {
            // A requester that stopped waiting has nothing to be told.
            let _ = answer.send(request.run(coordinator).await);
        })
    }
}

impl Invocation {
    /// `request` as an invocation, and where its answer arrives.
    pub fn new<Request: CoreRequest>(
        request: Request,
    ) -> (Invocation, oneshot::Receiver<Request::Answer>) {
        let (sender, receiver) = oneshot::channel();
        let invocation = Invocation {
            class: Request::CLASS,
            work: Box::new(Typed {
                request,
                answer: sender,
            }),
        };
        (invocation, receiver)
    }

    /// The latency class the invocation runs in.
    pub fn class(&self) -> LatencyClass {
        self.class
    }

    /// Runs the invocation on this core; its answer goes to its requester.
    pub async fn run(self, coordinator: &Coordinator) {
        self.work.run(coordinator).await;
    }
}
