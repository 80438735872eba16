//! [`StartupGate`]: the handler a core serves with from its first moment, before its router
//! exists.
//!
//! A core accepts connections as soon as it runs, while it still joins the meshes and builds
//! its router. Until then the gate answers `GET /health` at once with 503
//! `{"status":"starting"}`, so that a load balancer waits, and holds every other request
//! until the router is in place, then hands it over: a client that connects early sees a
//! slower answer, never a refusal or an error of a kind Meilisearch does not give.
//!
//! Invariants: the router is installed once ([`StartupGate::open`] asserts it); a request
//! held by the gate is answered by the router once it is installed, whichever the order of
//! the request's arrival and the installation.

use std::cell::OnceCell;
use std::rc::Rc;
use std::time::Duration;

use super::lifecycle::{HEALTH_PATH, Lifecycle, health_response};
use crate::http::{Handler, Method, Request, RequestHead, Response};

/// How often a held request looks whether the router is in place.
pub const HELD_REQUEST_POLL: Duration = Duration::from_millis(1);

/// A core's handler before and after its router exists.
pub struct StartupGate<H: Handler> {
    handler: OnceCell<Rc<H>>,
    lifecycle: Lifecycle,
}

impl<H: Handler> StartupGate<H> {
    /// A gate with no router yet.
    pub fn new(lifecycle: Lifecycle) -> StartupGate<H> {
        StartupGate {
            handler: OnceCell::new(),
            lifecycle,
        }
    }

    /// Installs the router: from now on every request goes to it.
    pub fn open(&self, handler: Rc<H>) {
        let installed = self.handler.set(handler).is_ok();
        assert!(installed, "a core's router is installed once");
    }

    async fn handler(&self) -> Rc<H> {
        loop {
            if let Some(handler) = self.handler.get() {
                return handler.clone();
            }
            glommio::timer::sleep(HELD_REQUEST_POLL).await;
        }
    }
}

impl<H: Handler> Handler for StartupGate<H> {
    type Sink = H::Sink;

    fn body_sink(&self, head: RequestHead<'_>) -> Option<H::Sink> {
        // Before the router exists, a body is received whole and handed over with its request.
        self.handler.get()?.body_sink(head)
    }

    async fn handle(&self, request: Request) -> Response {
        if self.handler.get().is_none() && is_health(&request) {
            return health_response(self.lifecycle.phase());
        }
        self.handler().await.handle(request).await
    }
}

fn is_health(request: &Request) -> bool {
    request.method == Method::Get && request.path == HEALTH_PATH
}
