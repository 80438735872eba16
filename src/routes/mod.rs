//! The routes: one thin file per route family (decode, authorize, call, encode), and the
//! [`Router`] that looks every request up in the [`table`] and logs one line per request.

pub mod authorize;
pub mod body;
pub mod features;
pub mod keys;
pub mod root;
pub mod table;

use std::rc::Rc;
use std::time::Instant;

use crate::control::ControlPlane;
use crate::errors::ResponseError;
use crate::http::{Handler, Request, Response};
use table::{Endpoint, Lookup};

/// What the routes of one core need: its replicas of the control state and the settings of
/// the process.
pub struct Services {
    pub core: usize,
    pub control: Rc<ControlPlane>,
    pub production: bool,
}

/// Answers every request of one core.
pub struct Router {
    services: Services,
}

impl Router {
    pub fn new(services: Services) -> Router {
        Router { services }
    }

    async fn dispatch(&self, request: Request) -> Response {
        let (route, parameters) = match table::lookup(&request.method, &request.path) {
            Lookup::Found { route, parameters } => (route, parameters),
            Lookup::MethodNotAllowed => return Response::empty(405),
            Lookup::NotFound => return Response::empty(404),
        };
        let parameter = |name: &str| Lookup::parameter(&parameters, name);
        let index_uid = parameter("index_uid");
        if let Err(error) =
            authorize::authorize(&self.services, &request, route.action, index_uid.as_deref())
        {
            return Response::error(&error);
        }
        let key = || parameter("key").unwrap_or_default();
        let services = &self.services;
        let outcome: Result<Response, ResponseError> = match route.endpoint {
            Endpoint::Root => Ok(root::root(services)),
            Endpoint::Health => Ok(root::health()),
            Endpoint::Version => Ok(root::version()),
            Endpoint::GetExperimentalFeatures => Ok(features::get(services)),
            Endpoint::PatchExperimentalFeatures => features::patch(services, request).await,
            Endpoint::CreateKey => keys::create(services, &request).await,
            Endpoint::ListKeys => keys::list(services, &request),
            Endpoint::GetKey => keys::get(services, &key()),
            Endpoint::UpdateKey => keys::update(services, &request, key()).await,
            Endpoint::DeleteKey => keys::delete(services, key()).await,
        };
        outcome.unwrap_or_else(|error| Response::error(&error))
    }
}

impl Handler for Router {
    async fn handle(&self, request: Request) -> Response {
        let started = Instant::now();
        let method = request.method.clone();
        let path = request.path.clone();
        let response = self.dispatch(request).await;
        tracing::info!(
            core = self.services.core,
            method = %method,
            path = %path,
            status = response.status,
            duration_us = started.elapsed().as_micros() as u64,
            "request"
        );
        response
    }
}
