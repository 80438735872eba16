//! The routes: one thin file per route family (decode, authorize, call, encode), and the
//! [`Router`] that looks every request up in the [`table`] and logs one line per request.

pub mod authorize;
pub mod body;
pub mod documents;
pub mod features;
pub mod fields;
pub mod indexes;
pub mod keys;
pub mod payload;
pub mod root;
pub mod search;
pub mod settings;
pub mod table;
pub mod tasks;

use std::rc::Rc;
use std::time::Instant;

use crate::control::ControlPlane;
use crate::errors::ResponseError;
use crate::http::{Handler, Request, RequestHead, Response};
use crate::request_log::{RequestLine, RequestLog};
use crate::tasks::TaskAction;
use crate::tasks::model::DocumentMethod;
use table::{Endpoint, Lookup};

/// What the routes of one core need: its replicas of the control state and the settings of
/// the process.
pub struct Services {
    pub core: usize,
    pub control: Rc<ControlPlane>,
    pub coordinator: Rc<crate::coordinator::Coordinator>,
    pub production: bool,
    /// The searches this core runs and holds waiting.
    pub search_queue: Rc<crate::search::queue::SearchQueue>,
    /// This core's request log (one line per answered request at INFO).
    pub request_log: Rc<RequestLog>,
    /// Where document additions' payloads are written.
    pub update_files: crate::tasks::update_files::UpdateFiles,
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
        let context = match authorize::authorize(
            &self.services,
            &request,
            route.action,
            index_uid.as_deref(),
        ) {
            Ok(context) => context,
            Err(error) => return Response::error(&error),
        };
        let index = || index_uid.clone().unwrap_or_default();
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
            Endpoint::ListIndexes => indexes::list(services, &request, &context),
            Endpoint::CreateIndex => indexes::create(services, &request, &context).await,
            Endpoint::GetIndex => indexes::get(services, &index()),
            Endpoint::UpdateIndex => indexes::update(services, &request, &index()).await,
            Endpoint::DeleteIndex => indexes::delete(services, &index()).await,
            Endpoint::CompactIndex => indexes::compact(services, &index()).await,
            Endpoint::SwapIndexes => indexes::swap(services, &request, &context).await,
            Endpoint::IndexStats => indexes::index_stats(services, &index()).await,
            Endpoint::ListFields => fields::list(services, &request, &index()).await,
            Endpoint::GlobalStats => indexes::global_stats(services, &context).await,
            Endpoint::Search => search::search_post(services, &request, &index(), &context).await,
            Endpoint::SearchGet => search::search_get(services, &request, &index(), &context).await,
            Endpoint::FacetSearch => {
                search::facet_search_post(services, &request, &index(), &context).await
            }
            Endpoint::MultiSearch => search::multi_search_post(services, &request, &context).await,
            Endpoint::ListDocuments => documents::list(services, &request, &index()).await,
            Endpoint::FetchDocuments => documents::fetch(services, &request, &index()).await,
            Endpoint::GetDocument => {
                let document_id = parameter("document_id").unwrap_or_default();
                documents::get_one(services, &request, &index(), &document_id).await
            }
            Endpoint::ReplaceDocuments => {
                documents::add(
                    services,
                    request,
                    &index(),
                    &context,
                    DocumentMethod::Replace,
                )
                .await
            }
            Endpoint::UpdateDocuments => {
                documents::add(
                    services,
                    request,
                    &index(),
                    &context,
                    DocumentMethod::Update,
                )
                .await
            }
            Endpoint::ClearDocuments => documents::clear(services, &request, &index()).await,
            Endpoint::DeleteDocument => {
                let document_id = parameter("document_id").unwrap_or_default();
                documents::delete_one(services, &request, &index(), document_id).await
            }
            Endpoint::DeleteDocumentsBatch => {
                documents::delete_batch(services, &request, &index()).await
            }
            Endpoint::DeleteDocumentsByFilter => {
                documents::delete_by_filter(services, &request, &index()).await
            }
            Endpoint::EditDocuments => documents::edit(services, &request, &index()).await,
            Endpoint::GetSettings => settings::get_all(services, &index()),
            Endpoint::UpdateSettings => {
                settings::update_all(services, &request, &index(), &context).await
            }
            Endpoint::ResetSettings => settings::reset_all(services, &index(), &context).await,
            Endpoint::SettingsSubRoute => {
                let segment = parameter("setting").unwrap_or_default();
                settings::sub_route_request(services, &request, &index(), &segment, &context).await
            }
            Endpoint::ListTasks => tasks::list_tasks(services, &request, context).await,
            Endpoint::GetTask => {
                let uid = parameter("task_uid").unwrap_or_default();
                tasks::get_task(services, &uid, context).await
            }
            Endpoint::GetTaskDocuments => {
                let uid = parameter("task_uid").unwrap_or_default();
                tasks::get_task_documents(services, &uid, context).await
            }
            Endpoint::CancelTasks => {
                tasks::cancel_or_delete(services, &request, context, TaskAction::Cancel).await
            }
            Endpoint::DeleteTasks => {
                tasks::cancel_or_delete(services, &request, context, TaskAction::Delete).await
            }
            Endpoint::ListBatches => tasks::list_batches(services, &request, context).await,
            Endpoint::GetBatch => {
                let uid = parameter("batch_uid").unwrap_or_default();
                tasks::get_batch(services, &uid, context).await
            }
        };
        outcome.unwrap_or_else(|error| Response::error(&error))
    }
}

impl Handler for Router {
    type Sink = crate::tasks::update_file_sink::UpdateFileSink;

    /// Document additions stream their payload into an upload; every other body is read
    /// whole (they are small JSON bodies, bounded by the payload limit).
    fn body_sink(&self, head: RequestHead<'_>) -> Option<Self::Sink> {
        match table::lookup(head.method, head.path) {
            Lookup::Found { route, .. }
                if matches!(
                    route.endpoint,
                    Endpoint::ReplaceDocuments | Endpoint::UpdateDocuments
                ) =>
            {
                Some(crate::tasks::update_file_sink::UpdateFileSink::new(
                    self.services.update_files.clone(),
                ))
            }
            _ => None,
        }
    }

    async fn handle(&self, request: Request) -> Response {
        let log = &self.services.request_log;
        if !log.is_enabled() {
            return self.dispatch(request).await;
        }
        let started = Instant::now();
        let method = request.method.clone();
        let path = request.path.clone();
        let response = self.dispatch(request).await;
        log.record(&RequestLine {
            core: self.services.core,
            method: method.as_str(),
            path: &path,
            status: response.status,
            duration_us: started.elapsed().as_micros() as u64,
        });
        response
    }
}
