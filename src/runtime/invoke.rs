//! Typed requests between cores: a request type names its answer type, so the compiler pairs
//! every request with its answer, in the spirit of seastar's `invoke_on`.
//!
//! A [`CoreRequest`] runs on the core it is sent to, against that core's instance of its
//! `Target` (the coordinator, the control plane…); its answer travels back on a one-shot
//! channel of exactly its type. The mesh carries one erased [`Invocation`] per request and
//! acknowledges it with `()`. A request for this core runs in place, without the mesh
//! ([`invoke_on`]).
//!
//! Invariants:
//! - an invocation answers its requester at most once (the one-shot sender is consumed);
//!   a requester whose invocation never answers (the core went away) gets an error, never
//!   waits forever: the mesh acknowledges a request only after it ran;
//! - the request's latency class is fixed by its type ([`CoreRequest::CLASS`]);
//! - an invocation carries the span context current where it was made
//!   ([`crate::traces::current`]) and runs under it on the target core, so the spans it
//!   starts there are children of the requester's.

use std::future::Future;
use std::pin::Pin;

use futures_channel::oneshot;

use super::latency::LatencyClass;
use super::mesh::{CoreMesh, MeshError};

/// A request one core runs on another (or on itself) against its `Target`, answered with
/// [`Self::Answer`].
pub trait CoreRequest<Target>: Send + 'static {
    /// What the request answers.
    type Answer: Send + 'static;
    /// The latency class the request runs in on the target core: serving unless the request
    /// is part of the write path.
    const CLASS: LatencyClass = LatencyClass::Serving;
    /// Runs the request on the target core.
    fn run(self, target: &Target) -> impl Future<Output = Self::Answer>;
}

/// A request with the channel its answer goes back on, its types erased for the mesh.
pub struct Invocation<Target> {
    class: LatencyClass,
    /// The requester's span context (`None` with tracing off or outside a trace).
    parent: Option<crate::traces::SpanContext>,
    work: Box<dyn ErasedRequest<Target>>,
}

impl<Target> std::fmt::Debug for Invocation<Target> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Invocation")
            .field("class", &self.class)
            .finish_non_exhaustive()
    }
}

/// The future an erased request runs as, borrowing the target core's `Target`.
type Running<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

trait ErasedRequest<Target>: Send {
    fn run<'a>(self: Box<Self>, target: &'a Target) -> Running<'a>;
}

struct Typed<Target, Request: CoreRequest<Target>> {
    request: Request,
    answer: oneshot::Sender<Request::Answer>,
    target: std::marker::PhantomData<fn(&Target)>,
}

impl<Target, Request: CoreRequest<Target>> ErasedRequest<Target> for Typed<Target, Request> {
    fn run<'a>(self: Box<Self>, target: &'a Target) -> Running<'a> {
        let Typed {
            request, answer, ..
        } = *self;
        Box::pin(async move {
            // A requester that stopped waiting has nothing to be told.
            let _ = answer.send(request.run(target).await);
        })
    }
}

impl<Target: 'static> Invocation<Target> {
    /// `request` as an invocation, and where its answer arrives.
    pub fn new<Request: CoreRequest<Target>>(
        request: Request,
    ) -> (Invocation<Target>, oneshot::Receiver<Request::Answer>) {
        let (sender, receiver) = oneshot::channel();
        let invocation = Invocation {
            class: Request::CLASS,
            parent: crate::traces::current(),
            work: Box::new(Typed {
                request,
                answer: sender,
                target: std::marker::PhantomData,
            }),
        };
        (invocation, receiver)
    }

    /// The latency class the invocation runs in.
    pub fn class(&self) -> LatencyClass {
        self.class
    }

    /// Runs the invocation against this core's `target`; its answer goes to its requester.
    pub async fn run(self, target: &Target) {
        match self.parent {
            None => self.work.run(target).await,
            Some(parent) => crate::traces::within(Some(parent), self.work.run(target)).await,
        }
    }
}

/// Runs `request` on core `core` against its `Target`: in place on `local` when `core` is
/// this core, else through `mesh`. [`MeshError::PeerGone`] when the core went away before
/// answering.
pub async fn invoke_on<Target, Broadcast, Request>(
    mesh: &CoreMesh<Invocation<Target>, (), Broadcast>,
    local: &Target,
    core: usize,
    request: Request,
) -> Result<Request::Answer, MeshError>
where
    Target: 'static,
    Broadcast: Send + Clone + 'static,
    Request: CoreRequest<Target>,
{
    assert!(
        core < mesh.cores(),
        "a request for core {core}, of {} cores",
        mesh.cores()
    );
    if core == mesh.core() {
        return Ok(request.run(local).await);
    }
    let (invocation, answer) = Invocation::new(request);
    mesh.request(core, invocation).await?;
    answer.await.map_err(|_| MeshError::PeerGone)
}
