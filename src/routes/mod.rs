//! The routes: one thin file per route family (decode, authorize, call, encode), and the
//! [`Router`] that looks every request up in the [`table`], logs one line per request,
//! counts it in the core's request metrics (`crate::metrics::http_recorder`) and, with
//! tracing on, runs it in its span ([`request_span`]).

pub mod authorize;
pub mod body;
pub mod chats;
pub mod document_reads;
pub mod documents;
pub mod dumps;
pub mod dynamic_search_rules;
pub mod export;
pub mod features;
pub mod fields;
pub mod indexes;
pub mod keys;
pub mod logs;
pub mod metrics;
pub mod network;
pub mod payload;
pub mod rate_limit;
pub mod render;
pub mod request_span;
pub mod root;
pub mod search;
pub mod settings;
pub mod snapshots;
pub mod table;
pub mod tasks;
pub mod webhooks;
pub mod write_headers;

use std::rc::Rc;
use std::time::Instant;

use crate::auth::AuthContext;
use crate::control::ControlPlane;
use crate::errors::ResponseError;
use crate::http::{Handler, Request, RequestHead, Response};
use crate::metrics::http_recorder::{self, PathLabel};
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
    /// Whether task-creating routes read the `TaskId` and `DryRun` headers.
    pub replication_parameters: bool,
    /// The searches this core runs and holds waiting.
    pub search_queue: Rc<crate::search::queue::SearchQueue>,
    /// This core's request log (one line per answered request at INFO).
    pub request_log: Rc<RequestLog>,
    /// The process's log switches, which the `/logs/*` routes change.
    pub logs: crate::logs::LogControl,
    /// Where document additions' payloads are written.
    pub update_files: crate::tasks::update_files::UpdateFiles,
    /// The rerank service of personalized searches (`--experimental-personalization-*`).
    pub personalization: crate::personalization::Personalization,
    /// Which remotes answer lately (shared by the process's cores).
    pub remote_availability: std::sync::Arc<crate::network::availability::RemoteAvailability>,
    /// Starting, ready or draining: what `GET /health` answers.
    pub lifecycle: crate::runtime::lifecycle::Lifecycle,
    /// This core's rate limiter; `None` when no rate limit is configured.
    pub rate_limiter: Option<crate::auth::rate_limit::RateLimiter>,
}

/// Answers every request of one core.
pub struct Router {
    services: Services,
}

/// One authorized request on its way to its handler: the request, its decoded path
/// parameters and what its key may do.
struct Call {
    request: Request,
    parameters: Vec<(&'static str, String)>,
    context: AuthContext,
}

impl Call {
    /// The path parameter `name`, empty when the route has none.
    fn parameter(&self, name: &str) -> String {
        self.parameters
            .iter()
            .find(|(parameter, _)| *parameter == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    }

    /// The route's `{index_uid}`, empty when the route has none.
    fn index(&self) -> String {
        self.parameter("index_uid")
    }
}

impl Router {
    pub fn new(services: Services) -> Router {
        Router { services }
    }

    /// Looks the request up, authorizes it and hands it to the handler of its route family;
    /// answers the response and the path the request counts under in the metrics.
    async fn dispatch(&self, request: Request) -> (Response, PathLabel) {
        let (label, found) = self.authorized_call(request);
        let (endpoint, call) = match found {
            Ok(found) => found,
            Err(response) => return (response, label),
        };
        (self.run(endpoint, call).await, label)
    }

    /// Runs an authorized call on the handler of its route family.
    async fn run(&self, endpoint: Endpoint, call: Call) -> Response {
        let services = &self.services;
        let outcome = match endpoint {
            Endpoint::Root
            | Endpoint::Health
            | Endpoint::Version
            | Endpoint::GetExperimentalFeatures
            | Endpoint::PatchExperimentalFeatures
            | Endpoint::GetNetwork
            | Endpoint::PatchNetwork
            | Endpoint::NetworkControl
            | Endpoint::Metrics => dispatch_instance(services, endpoint, call).await,
            Endpoint::CreateKey
            | Endpoint::ListKeys
            | Endpoint::GetKey
            | Endpoint::UpdateKey
            | Endpoint::DeleteKey => dispatch_keys(services, endpoint, call).await,
            Endpoint::ListIndexes
            | Endpoint::CreateIndex
            | Endpoint::GetIndex
            | Endpoint::UpdateIndex
            | Endpoint::DeleteIndex
            | Endpoint::CompactIndex
            | Endpoint::SwapIndexes
            | Endpoint::IndexStats
            | Endpoint::ListFields
            | Endpoint::GlobalStats => dispatch_indexes(services, endpoint, call).await,
            Endpoint::Search
            | Endpoint::SearchGet
            | Endpoint::Similar
            | Endpoint::SimilarGet
            | Endpoint::FacetSearch
            | Endpoint::MultiSearch => dispatch_search(services, endpoint, call).await,
            Endpoint::ListDocuments
            | Endpoint::FetchDocuments
            | Endpoint::GetDocument
            | Endpoint::ReplaceDocuments
            | Endpoint::UpdateDocuments
            | Endpoint::ClearDocuments
            | Endpoint::DeleteDocument
            | Endpoint::DeleteDocumentsBatch
            | Endpoint::DeleteDocumentsByFilter
            | Endpoint::EditDocuments => dispatch_documents(services, endpoint, call).await,
            Endpoint::GetSettings
            | Endpoint::UpdateSettings
            | Endpoint::ResetSettings
            | Endpoint::SettingsSubRoute => dispatch_settings(services, endpoint, call).await,
            Endpoint::ListTasks
            | Endpoint::GetTask
            | Endpoint::GetTaskDocuments
            | Endpoint::CancelTasks
            | Endpoint::DeleteTasks
            | Endpoint::CompactTaskQueue
            | Endpoint::ListBatches
            | Endpoint::GetBatch => dispatch_tasks(services, endpoint, call).await,
            Endpoint::ListWebhooks
            | Endpoint::CreateWebhook
            | Endpoint::GetWebhook
            | Endpoint::UpdateWebhook
            | Endpoint::DeleteWebhook => dispatch_webhooks(services, endpoint, call).await,
            // Dynamic search rules, chats, templates, export, dumps, snapshots and the logs
            // routes.
            _ => dispatch_instance_features(services, endpoint, call).await,
        };
        outcome.unwrap_or_else(|error| Response::error(&error))
    }

    /// The path the request counts under in the metrics, and the request's endpoint and
    /// call once its route is found, its key authorized and charged to its rate limit;
    /// otherwise the answer: 404 (no route), 405 (no route for the method), the authorization
    /// error or 429 (over the rate limit).
    fn authorized_call(&self, request: Request) -> (PathLabel, Result<(Endpoint, Call), Response>) {
        let (route, parameters) = match table::lookup(&request.method, &request.path) {
            Lookup::Found { route, parameters } => (route, parameters),
            Lookup::MethodNotAllowed { pattern } => {
                return (routed_label(pattern), Err(Response::empty(405)));
            }
            Lookup::NotFound => {
                return (unrouted_label(&request.path), Err(Response::empty(404)));
            }
        };
        let label = route_label(route, &parameters, &request.path);
        let index_uid = Lookup::parameter(&parameters, "index_uid");
        let context = authorize::authorize(
            &self.services,
            &request,
            route.actions,
            index_uid.as_deref(),
        )
        .map_err(|error| {
            let error = match route.endpoint {
                Endpoint::Metrics => metrics::refusal(&self.services, &request, error),
                _ => error,
            };
            Response::error(&error)
        });
        let context = match context {
            Ok(context) => context,
            Err(response) => return (label, Err(response)),
        };
        if let Some(limiter) = &self.services.rate_limiter
            && let Err(response) = rate_limit::charge(limiter, &request, &context)
        {
            return (label, Err(response));
        }
        let parameters = parameters
            .iter()
            .filter_map(|(name, _)| Some((*name, Lookup::parameter(&parameters, name)?)))
            .collect();
        let call = Call {
            request,
            parameters,
            context,
        };
        (label, Ok((route.endpoint, call)))
    }
}

/// The metrics path of a route's pattern.
fn routed_label(pattern: &'static str) -> PathLabel {
    PathLabel {
        path: std::borrow::Cow::Borrowed(pattern),
        routed: true,
    }
}

/// The metrics path of a path no route has: the path as sent.
fn unrouted_label(path: &str) -> PathLabel {
    PathLabel {
        path: std::borrow::Cow::Owned(path.to_owned()),
        routed: false,
    }
}

/// The metrics path of a request found in the table: its route's pattern, except for the
/// settings sub-routes, which Meilisearch routes one by one (`/indexes/{index_uid}/settings/
/// filterable-attributes`); an unknown setting belongs to no route there.
fn route_label(
    route: &'static table::Route,
    parameters: &[(&'static str, &str)],
    path: &str,
) -> PathLabel {
    if route.endpoint != Endpoint::SettingsSubRoute {
        return routed_label(route.pattern);
    }
    let segment = parameters
        .iter()
        .find(|(name, _)| *name == "setting")
        .map_or("", |(_, segment)| segment);
    match crate::settings::decode::sub_route(segment) {
        Some(sub_route) => PathLabel {
            path: std::borrow::Cow::Owned(format!(
                "/indexes/{{index_uid}}/settings/{}",
                sub_route.segment
            )),
            routed: true,
        },
        None => unrouted_label(path),
    }
}

/// The root, health, version, experimental-features and network routes. Every dispatcher below
/// answers 404 for an endpoint of another family (`Router::dispatch` never passes one).
async fn dispatch_instance(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    match endpoint {
        Endpoint::Root => Ok(root::root(services)),
        Endpoint::Health => Ok(root::health(services)),
        Endpoint::Version => Ok(root::version()),
        Endpoint::GetExperimentalFeatures => Ok(features::get(services)),
        Endpoint::PatchExperimentalFeatures => features::patch(services, call.request).await,
        Endpoint::GetNetwork => network::get(services),
        Endpoint::PatchNetwork => network::patch(services, &call.request).await,
        Endpoint::NetworkControl => network::control(services, &call.request).await,
        Endpoint::Metrics => metrics::get(services, &call.context).await,
        _ => Ok(Response::empty(404)),
    }
}

/// The API-key routes.
async fn dispatch_keys(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let key = call.parameter("key");
    let request = &call.request;
    match endpoint {
        Endpoint::CreateKey => keys::create(services, request).await,
        Endpoint::ListKeys => keys::list(services, request),
        Endpoint::GetKey => keys::get(services, &key),
        Endpoint::UpdateKey => keys::update(services, request, key).await,
        Endpoint::DeleteKey => keys::delete(services, key).await,
        _ => Ok(Response::empty(404)),
    }
}

/// The webhook routes.
async fn dispatch_webhooks(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let uuid = call.parameter("uuid");
    let request = &call.request;
    match endpoint {
        Endpoint::ListWebhooks => Ok(webhooks::list(services)),
        Endpoint::CreateWebhook => webhooks::create(services, request).await,
        Endpoint::GetWebhook => webhooks::get(services, &uuid),
        Endpoint::UpdateWebhook => webhooks::update(services, request, &uuid).await,
        Endpoint::DeleteWebhook => webhooks::delete(services, &uuid).await,
        _ => Ok(Response::empty(404)),
    }
}

/// The instance's gated features (dynamic search rules, chats, template rendering) and
/// operations.
async fn dispatch_instance_features(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    match endpoint {
        Endpoint::ListDynamicSearchRules
        | Endpoint::GetDynamicSearchRule
        | Endpoint::UpdateDynamicSearchRule
        | Endpoint::DeleteDynamicSearchRule
        | Endpoint::ClearDynamicSearchRules => dispatch_rules(services, endpoint, call).await,
        Endpoint::ListChats
        | Endpoint::GetChatSettings
        | Endpoint::UpdateChatSettings
        | Endpoint::ResetChatSettings
        | Endpoint::GetChat
        | Endpoint::DeleteChat
        | Endpoint::ChatCompletions => dispatch_chats(services, endpoint, call).await,
        Endpoint::RenderTemplate => {
            render::render_template(services, &call.request, &call.context).await
        }
        _ => dispatch_operations(services, endpoint, call).await,
    }
}

/// The instance's operations: export, dumps, snapshots and the logs routes.
async fn dispatch_operations(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let request = &call.request;
    match endpoint {
        Endpoint::Export => export::export(services, request).await,
        Endpoint::CreateDump => dumps::create(services, request).await,
        Endpoint::CreateSnapshot => snapshots::create(services, request).await,
        Endpoint::StreamLogs => logs::stream(services, request),
        Endpoint::CancelLogStream => logs::cancel(services),
        Endpoint::UpdateStderrLogs => logs::stderr(services, request),
        _ => Ok(Response::empty(404)),
    }
}

/// The dynamic search rule routes.
async fn dispatch_rules(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let uid = call.parameter("uid");
    let request = &call.request;
    match endpoint {
        Endpoint::ListDynamicSearchRules => dynamic_search_rules::list(services, request),
        Endpoint::GetDynamicSearchRule => dynamic_search_rules::get(services, &uid),
        Endpoint::UpdateDynamicSearchRule => {
            dynamic_search_rules::update(services, request, &uid).await
        }
        Endpoint::DeleteDynamicSearchRule => {
            dynamic_search_rules::delete(services, request, &uid).await
        }
        Endpoint::ClearDynamicSearchRules => dynamic_search_rules::clear(services, request).await,
        _ => Ok(Response::empty(404)),
    }
}

/// The chat routes.
async fn dispatch_chats(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let uid = call.parameter("workspace_uid");
    let request = &call.request;
    match endpoint {
        Endpoint::ListChats => chats::list(services, request),
        Endpoint::GetChatSettings => chats::get_settings(services, &uid),
        Endpoint::UpdateChatSettings => chats::patch_settings(services, request, &uid).await,
        Endpoint::ResetChatSettings => chats::reset_settings(services, &uid).await,
        Endpoint::GetChat => chats::get(services, &uid),
        Endpoint::DeleteChat => chats::delete(services, &uid).await,
        Endpoint::ChatCompletions => {
            chats::completions(services, request, &uid, &call.context).await
        }
        _ => Ok(Response::empty(404)),
    }
}

/// The index routes: listing, creation, update, deletion, compaction, swap, fields, stats.
async fn dispatch_indexes(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let index = call.index();
    let (request, context) = (&call.request, &call.context);
    match endpoint {
        Endpoint::ListIndexes => indexes::list(services, request, context),
        Endpoint::CreateIndex => indexes::create(services, request, context).await,
        Endpoint::GetIndex => {
            indexes::checked_path_uid(&index).and_then(|()| indexes::get(services, &index))
        }
        Endpoint::UpdateIndex => indexes::update(services, request, &index).await,
        Endpoint::DeleteIndex => indexes::delete(services, request, &index).await,
        Endpoint::CompactIndex => indexes::compact(services, request, &index).await,
        Endpoint::SwapIndexes => indexes::swap(services, request, context).await,
        Endpoint::IndexStats => match indexes::checked_path_uid(&index) {
            Ok(()) => indexes::index_stats(services, request, &index).await,
            Err(error) => Err(error),
        },
        Endpoint::ListFields => fields::list(services, request, &index).await,
        Endpoint::GlobalStats => indexes::global_stats(services, request, context).await,
        _ => Ok(Response::empty(404)),
    }
}

/// The search, facet-search and multi-search routes.
async fn dispatch_search(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let index = call.index();
    let (request, context) = (&call.request, &call.context);
    match endpoint {
        Endpoint::Search => search::search_post(services, request, &index, context).await,
        Endpoint::SearchGet => search::search_get(services, request, &index, context).await,
        Endpoint::Similar => search::similar_post(services, request, &index).await,
        Endpoint::SimilarGet => search::similar_get(services, request, &index).await,
        Endpoint::FacetSearch => {
            search::facet_search_post(services, request, &index, context).await
        }
        Endpoint::MultiSearch => search::multi_search_post(services, request, context).await,
        _ => Ok(Response::empty(404)),
    }
}

/// The document routes: reads, additions (which take the request's streamed payload),
/// deletions and edition.
async fn dispatch_documents(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let index = call.index();
    let document_id = call.parameter("document_id");
    let Call {
        request, context, ..
    } = call;
    match endpoint {
        Endpoint::ListDocuments => document_reads::list(services, &request, &index).await,
        Endpoint::FetchDocuments => document_reads::fetch(services, &request, &index).await,
        Endpoint::GetDocument => {
            document_reads::get_one(services, &request, &index, &document_id).await
        }
        Endpoint::ReplaceDocuments => {
            documents::add(services, request, &index, &context, DocumentMethod::Replace).await
        }
        Endpoint::UpdateDocuments => {
            documents::add(services, request, &index, &context, DocumentMethod::Update).await
        }
        Endpoint::ClearDocuments => documents::clear(services, &request, &index).await,
        Endpoint::DeleteDocument => {
            documents::delete_one(services, &request, &index, document_id).await
        }
        Endpoint::DeleteDocumentsBatch => documents::delete_batch(services, &request, &index).await,
        Endpoint::DeleteDocumentsByFilter => {
            documents::delete_by_filter(services, &request, &index).await
        }
        Endpoint::EditDocuments => documents::edit(services, &request, &index).await,
        _ => Ok(Response::empty(404)),
    }
}

/// The settings routes: all settings at once, or one setting's sub-route.
async fn dispatch_settings(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let index = call.index();
    let (request, context) = (&call.request, &call.context);
    match endpoint {
        Endpoint::GetSettings => {
            indexes::checked_path_uid(&index).and_then(|()| settings::get_all(services, &index))
        }
        Endpoint::UpdateSettings => settings::update_all(services, request, &index, context).await,
        Endpoint::ResetSettings => settings::reset_all(services, request, &index, context).await,
        Endpoint::SettingsSubRoute => {
            let segment = call.parameter("setting");
            settings::sub_route_request(services, request, &index, &segment, context).await
        }
        _ => Ok(Response::empty(404)),
    }
}

/// The task and batch routes.
async fn dispatch_tasks(
    services: &Services,
    endpoint: Endpoint,
    call: Call,
) -> Result<Response, ResponseError> {
    let task_uid = call.parameter("task_id");
    let batch_uid = call.parameter("batch_id");
    let Call {
        request, context, ..
    } = call;
    match endpoint {
        Endpoint::ListTasks => tasks::list_tasks(services, &request, context).await,
        Endpoint::GetTask => tasks::get_task(services, &task_uid, context).await,
        Endpoint::GetTaskDocuments => tasks::get_task_documents(services, &task_uid, context).await,
        Endpoint::CancelTasks => {
            tasks::cancel_or_delete(services, &request, context, TaskAction::Cancel).await
        }
        Endpoint::DeleteTasks => {
            tasks::cancel_or_delete(services, &request, context, TaskAction::Delete).await
        }
        Endpoint::CompactTaskQueue => tasks::compact_task_queue(services).await,
        Endpoint::ListBatches => tasks::list_batches(services, &request, context).await,
        Endpoint::GetBatch => tasks::get_batch(services, &batch_uid, context).await,
        _ => Ok(Response::empty(404)),
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

    /// Answers the request in its span when tracing is on (see [`Router::answer`]).
    async fn handle(&self, request: Request) -> Response {
        if !crate::traces::enabled() {
            return self.answer(request, false).await.0;
        }
        let span = request_span::start(&request);
        let method = request.method.clone();
        let (response, route) = crate::traces::within(
            span.context(),
            Box::pin(self.answer(request, span.is_recording())),
        )
        .await;
        request_span::end(span, &method, route, response.status, self.services.core);
        response
    }
}

impl Router {
    /// Answers the request, then counts it in the core's metrics (its response time too
    /// while the `metrics` feature is on, as Meilisearch's middleware decides at the start
    /// of the request) and logs it. With `traced`, also answers its route's pattern (`None`
    /// when no route has the path) for the request's span.
    async fn answer(
        &self,
        request: Request,
        traced: bool,
    ) -> (Response, Option<std::borrow::Cow<'static, str>>) {
        let log = &self.services.request_log;
        let timed = self.services.control.features().metrics;
        let started = (timed || log.is_enabled()).then(Instant::now);
        let method = request.method.clone();
        let logged_path = log.is_enabled().then(|| request.path.clone());
        let (response, label) = self.dispatch(request).await;
        let route = (traced && label.routed).then(|| label.path.clone());
        let elapsed = started.map(|started| started.elapsed());
        http_recorder::record(
            method.as_str(),
            label,
            response.status,
            elapsed.filter(|_| timed),
        );
        if let (Some(path), Some(elapsed)) = (logged_path, elapsed) {
            log.record(&RequestLine {
                core: self.services.core,
                method: method.as_str(),
                path: &path,
                status: response.status,
                duration_us: elapsed.as_micros() as u64,
            });
        }
        (response, route)
    }
}
