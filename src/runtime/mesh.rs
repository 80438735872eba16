//! The core mesh: bounded, typed channels between every pair of cores.
//!
//! A core can ask another core something and await the reply ([`CoreMesh::request`]), or
//! tell every other core something ([`CoreMesh::broadcast`]). Messages are plain owned
//! values (`Send`); nothing is shared.
//!
//! Invariants:
//! - every channel holds at most [`MESH_QUEUE_CAPACITY`] messages: a full channel makes the
//!   sender wait (backpressure), it never grows;
//! - messages from one core to another arrive in the order they were sent, so broadcasts
//!   of successive versions of a state are applied in order;
//! - a request is answered exactly once; if the peer is gone, the requester gets
//!   [`MeshError::PeerGone`] instead of waiting forever;
//! - while [`super::mesh_latency`] records, a reply carries how long its peer held the
//!   request, and the requester records the round trip less that time.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use glommio::channels::channel_mesh::{MeshBuilder, Receivers, Senders};

use super::latency::{LatencyClass, spawn_detached};
use super::mesh_latency;
use super::serving_activity::serving;

/// How many messages a channel between two cores holds before senders wait.
pub const MESH_QUEUE_CAPACITY: usize = 1024;

/// What travels on a channel of the mesh.
pub enum Envelope<Request, Reply, Broadcast> {
    Request {
        id: u64,
        body: Request,
    },
    /// `handled`: how long the peer held the request, when it measured it.
    Reply {
        id: u64,
        body: Reply,
        handled: Option<Duration>,
    },
    Broadcast(Broadcast),
}

/// The builder every core joins at start-up.
pub type MeshSetup<Request, Reply, Broadcast> =
    MeshBuilder<Envelope<Request, Reply, Broadcast>, glommio::channels::channel_mesh::Full>;

/// Creates the mesh for `cores` cores; each core then calls [`CoreMesh::join`] with a clone.
pub fn setup<Request, Reply, Broadcast>(cores: usize) -> MeshSetup<Request, Reply, Broadcast>
where
    Request: Send + 'static,
    Reply: Send + 'static,
    Broadcast: Send + 'static,
{
    MeshBuilder::full(cores, MESH_QUEUE_CAPACITY)
}

/// Why a message could not be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeshError {
    /// The destination core is shutting down or gone.
    PeerGone,
    /// The destination is this core itself: call the handler directly instead.
    SelfTarget,
}

/// What a core does with the messages other cores send it.
pub trait MeshHandler<Request, Reply, Broadcast> {
    /// Answers a request from core `from`.
    fn on_request(&self, from: usize, request: Request) -> impl Future<Output = Reply>;
    /// Applies a broadcast from core `from`.
    fn on_broadcast(&self, from: usize, message: Broadcast);
    /// The latency class `request` is answered in (see [`super::latency`]).
    fn class(&self, _request: &Request) -> LatencyClass {
        LatencyClass::Serving
    }
}

/// A request awaiting its reply.
struct PendingRequest<Reply> {
    peer: usize,
    reply: oneshot::Sender<Reply>,
    sent_at: Option<Instant>,
}

/// One core's end of the mesh.
pub struct CoreMesh<Request: Send, Reply: Send, Broadcast: Send> {
    core: usize,
    cores: usize,
    senders: Senders<Envelope<Request, Reply, Broadcast>>,
    /// Requests awaiting their reply: id → the peer asked, where the reply goes and when
    /// the request left (when round trips are recorded).
    pending: RefCell<HashMap<u64, PendingRequest<Reply>>>,
    next_request_id: Cell<u64>,
}

impl<Request, Reply, Broadcast> CoreMesh<Request, Reply, Broadcast>
where
    Request: Send + 'static,
    Reply: Send + 'static,
    Broadcast: Send + Clone + 'static,
{
    /// Joins the mesh (waits until every core has joined) and starts this core's receive
    /// loops, which hand messages to `handler`.
    pub async fn join<Handler>(
        setup: MeshSetup<Request, Reply, Broadcast>,
        handler: impl FnOnce(Rc<Self>) -> Rc<Handler>,
    ) -> Result<(Rc<Self>, Rc<Handler>), MeshError>
    where
        Handler: MeshHandler<Request, Reply, Broadcast> + 'static,
    {
        let cores = setup.nr_peers();
        let (senders, mut receivers) = setup.join().await.map_err(|_| MeshError::PeerGone)?;
        let core = senders.peer_id();
        let mesh = Rc::new(CoreMesh {
            core,
            cores,
            senders,
            pending: RefCell::new(HashMap::new()),
            next_request_id: Cell::new(0),
        });
        let handler = handler(mesh.clone());
        mesh.clone()
            .spawn_receive_loops(&mut receivers, handler.clone());
        Ok((mesh, handler))
    }

    /// This core's index: glommio numbers the peers of a mesh by the order their executors
    /// were made, which the runtime makes the cores' order (see `executors::spawn_core`).
    pub fn core(&self) -> usize {
        self.core
    }

    /// How many cores the mesh connects.
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// Sends `body` to core `to` and waits for its reply.
    pub async fn request(&self, to: usize, body: Request) -> Result<Reply, MeshError> {
        assert!(
            to < self.cores,
            "core {to} asked, of a mesh of {} cores",
            self.cores
        );
        if to == self.core {
            return Err(MeshError::SelfTarget);
        }
        let id = self.next_request_id.get();
        self.next_request_id.set(id.wrapping_add(1));
        let (reply_sender, reply_receiver) = oneshot::channel();
        let pending = PendingRequest {
            peer: to,
            reply: reply_sender,
            sent_at: mesh_latency::is_recording().then(Instant::now),
        };
        let previous = self.pending.borrow_mut().insert(id, pending);
        assert!(
            previous.is_none(),
            "request {id} is pending once (its reply goes to one requester)"
        );
        if self
            .senders
            .send_to(to, Envelope::Request { id, body })
            .await
            .is_err()
        {
            self.pending.borrow_mut().remove(&id);
            return Err(MeshError::PeerGone);
        }
        reply_receiver.await.map_err(|_| MeshError::PeerGone)
    }

    /// Sends `message` to every other core. Delivery to each core is in order with the
    /// previous broadcasts; cores that are gone are skipped.
    pub async fn broadcast(&self, message: Broadcast) {
        for peer in (0..self.cores).filter(|peer| *peer != self.core) {
            // A peer that is gone is shutting down: it needs no new state.
            let _ = self
                .senders
                .send_to(peer, Envelope::Broadcast(message.clone()))
                .await;
        }
    }

    fn spawn_receive_loops<Handler>(
        self: Rc<Self>,
        receivers: &mut Receivers<Envelope<Request, Reply, Broadcast>>,
        handler: Rc<Handler>,
    ) where
        Handler: MeshHandler<Request, Reply, Broadcast> + 'static,
    {
        for (peer, receiver) in receivers.streams() {
            let mesh = self.clone();
            let handler = handler.clone();
            glommio::spawn_local(async move {
                while let Some(envelope) = receiver.recv().await {
                    mesh.clone().dispatch(peer, envelope, &handler);
                }
                // The peer closed its end: fail the requests still waiting on it.
                mesh.pending
                    .borrow_mut()
                    .retain(|_, pending| pending.peer != peer);
            })
            .detach();
        }
    }

    fn dispatch<Handler>(
        self: Rc<Self>,
        peer: usize,
        envelope: Envelope<Request, Reply, Broadcast>,
        handler: &Rc<Handler>,
    ) where
        Handler: MeshHandler<Request, Reply, Broadcast> + 'static,
    {
        match envelope {
            Envelope::Request { id, body } => {
                let handler = handler.clone();
                let class = handler.class(&body);
                let received_at = mesh_latency::is_recording().then(Instant::now);
                let answer = async move {
                    let reply = handler.on_request(peer, body).await;
                    let handled = received_at.map(|received_at| received_at.elapsed());
                    // If the requester is gone there is nobody left to answer.
                    let _ = self
                        .senders
                        .send_to(
                            peer,
                            Envelope::Reply {
                                id,
                                body: reply,
                                handled,
                            },
                        )
                        .await;
                };
                // A serving request's polls are what this CPU's indexing threads give way to.
                match class {
                    LatencyClass::Serving => spawn_detached(class, serving(answer)),
                    LatencyClass::Indexing => spawn_detached(class, answer),
                }
            }
            Envelope::Reply { id, body, handled } => {
                let waiting = self.pending.borrow_mut().remove(&id);
                match waiting {
                    Some(waiting) => {
                        debug_assert_eq!(waiting.peer, peer, "a reply comes from the core asked");
                        if let (Some(sent_at), Some(handled)) = (waiting.sent_at, handled) {
                            mesh_latency::record_round_trip(sent_at.elapsed(), handled);
                        }
                        // The requester may have stopped waiting; the reply is then dropped.
                        let _ = waiting.reply.send(body);
                    }
                    // A request is answered exactly once; a second reply is a peer's bug.
                    None => debug_assert!(false, "a reply to request {id} nobody waits for"),
                }
            }
            Envelope::Broadcast(message) => handler.on_broadcast(peer, message),
        }
    }

    /// Closes this core's sending side, so peers' receive loops end.
    pub fn close(&self) {
        self.senders.close();
    }
}
