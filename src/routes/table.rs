//! The one route table of the server: every method and path, the API-key action it
//! requires, and the endpoint that answers it.
//!
//! Invariants:
//! - a path pattern is a sequence of literal segments and `{name}` parameters;
//! - a request path that matches no pattern is answered 404 with an empty body, one that
//!   matches a pattern only under other methods is answered 405 with an empty body (as
//!   actix-web does for Meilisearch); `HEAD` is a method of its own, no route has it, so
//!   a `HEAD` on any route's path is 405 (actix's method guards do not take it for `GET`);
//! - every route names the actions it requires (none for the public ones; all of them when
//!   it names several, as `POST /render-template` needs both `settings.get` and
//!   `documents.get`); authorization checks them before anything else looks at the request;
//! - patterns name their parameters as Meilisearch's routes do (`{index_uid}`,
//!   `{task_id}`, ...): a pattern is the `path` label of the request metrics.

use std::sync::OnceLock;

use crate::auth::Action;
use crate::http::Method;

/// What answers a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Root,
    Health,
    Version,
    GetExperimentalFeatures,
    PatchExperimentalFeatures,
    Metrics,
    CreateKey,
    ListKeys,
    GetKey,
    UpdateKey,
    DeleteKey,
    ListIndexes,
    CreateIndex,
    GetIndex,
    UpdateIndex,
    DeleteIndex,
    CompactIndex,
    SwapIndexes,
    IndexStats,
    ListFields,
    GlobalStats,
    Search,
    SearchGet,
    Similar,
    SimilarGet,
    MultiSearch,
    FacetSearch,
    ListDocuments,
    FetchDocuments,
    GetDocument,
    ReplaceDocuments,
    UpdateDocuments,
    ClearDocuments,
    DeleteDocument,
    DeleteDocumentsBatch,
    DeleteDocumentsByFilter,
    EditDocuments,
    GetSettings,
    UpdateSettings,
    ResetSettings,
    SettingsSubRoute,
    ListTasks,
    GetTask,
    GetTaskDocuments,
    CancelTasks,
    DeleteTasks,
    CompactTaskQueue,
    ListBatches,
    GetBatch,
    ListWebhooks,
    CreateWebhook,
    GetWebhook,
    UpdateWebhook,
    DeleteWebhook,
    GetNetwork,
    PatchNetwork,
    NetworkControl,
    CreateDump,
    CreateSnapshot,
    Export,
    StreamLogs,
    CancelLogStream,
    UpdateStderrLogs,
    ListDynamicSearchRules,
    GetDynamicSearchRule,
    UpdateDynamicSearchRule,
    DeleteDynamicSearchRule,
    ClearDynamicSearchRules,
    ListChats,
    GetChatSettings,
    UpdateChatSettings,
    ResetChatSettings,
    GetChat,
    DeleteChat,
    ChatCompletions,
    RenderTemplate,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub method: Method,
    pub pattern: &'static str,
    /// The API-key actions the route requires, every one of them, checked in this order;
    /// empty for public routes.
    pub actions: &'static [Action],
    pub endpoint: Endpoint,
}

/// Every route, in the order of the reference's route table.
pub static ROUTES: &[Route] = &[
    Route {
        method: Method::Get,
        pattern: "/",
        actions: &[],
        endpoint: Endpoint::Root,
    },
    Route {
        method: Method::Get,
        pattern: "/health",
        actions: &[],
        endpoint: Endpoint::Health,
    },
    Route {
        method: Method::Get,
        pattern: "/version",
        actions: &[Action::Version],
        endpoint: Endpoint::Version,
    },
    Route {
        method: Method::Get,
        pattern: "/experimental-features",
        actions: &[Action::ExperimentalGet],
        endpoint: Endpoint::GetExperimentalFeatures,
    },
    Route {
        method: Method::Patch,
        pattern: "/experimental-features",
        actions: &[Action::ExperimentalUpdate],
        endpoint: Endpoint::PatchExperimentalFeatures,
    },
    Route {
        method: Method::Get,
        pattern: "/metrics",
        actions: &[Action::MetricsGet],
        endpoint: Endpoint::Metrics,
    },
    Route {
        method: Method::Post,
        pattern: "/keys",
        actions: &[Action::KeysCreate],
        endpoint: Endpoint::CreateKey,
    },
    Route {
        method: Method::Get,
        pattern: "/keys",
        actions: &[Action::KeysGet],
        endpoint: Endpoint::ListKeys,
    },
    Route {
        method: Method::Get,
        pattern: "/keys/{key}",
        actions: &[Action::KeysGet],
        endpoint: Endpoint::GetKey,
    },
    Route {
        method: Method::Patch,
        pattern: "/keys/{key}",
        actions: &[Action::KeysUpdate],
        endpoint: Endpoint::UpdateKey,
    },
    Route {
        method: Method::Delete,
        pattern: "/keys/{key}",
        actions: &[Action::KeysDelete],
        endpoint: Endpoint::DeleteKey,
    },
    Route {
        method: Method::Get,
        pattern: "/stats",
        actions: &[Action::StatsGet],
        endpoint: Endpoint::GlobalStats,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes",
        actions: &[Action::IndexesGet],
        endpoint: Endpoint::ListIndexes,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes",
        actions: &[Action::IndexesCreate],
        endpoint: Endpoint::CreateIndex,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}",
        actions: &[Action::IndexesGet],
        endpoint: Endpoint::GetIndex,
    },
    Route {
        method: Method::Patch,
        pattern: "/indexes/{index_uid}",
        actions: &[Action::IndexesUpdate],
        endpoint: Endpoint::UpdateIndex,
    },
    Route {
        method: Method::Delete,
        pattern: "/indexes/{index_uid}",
        actions: &[Action::IndexesDelete],
        endpoint: Endpoint::DeleteIndex,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/compact",
        actions: &[Action::IndexesCompact],
        endpoint: Endpoint::CompactIndex,
    },
    Route {
        method: Method::Post,
        pattern: "/swap-indexes",
        actions: &[Action::IndexesSwap],
        endpoint: Endpoint::SwapIndexes,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}/stats",
        actions: &[Action::StatsGet],
        endpoint: Endpoint::IndexStats,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/fields",
        actions: &[Action::FieldsPost],
        endpoint: Endpoint::ListFields,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/search",
        actions: &[Action::Search],
        endpoint: Endpoint::Search,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}/search",
        actions: &[Action::Search],
        endpoint: Endpoint::SearchGet,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/similar",
        actions: &[Action::Search],
        endpoint: Endpoint::Similar,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}/similar",
        actions: &[Action::Search],
        endpoint: Endpoint::SimilarGet,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/facet-search",
        actions: &[Action::Search],
        endpoint: Endpoint::FacetSearch,
    },
    Route {
        method: Method::Post,
        pattern: "/multi-search",
        actions: &[Action::Search],
        endpoint: Endpoint::MultiSearch,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}/documents",
        actions: &[Action::DocumentsGet],
        endpoint: Endpoint::ListDocuments,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/documents/fetch",
        actions: &[Action::DocumentsGet],
        endpoint: Endpoint::FetchDocuments,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}/documents/{document_id}",
        actions: &[Action::DocumentsGet],
        endpoint: Endpoint::GetDocument,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/documents",
        actions: &[Action::DocumentsAdd],
        endpoint: Endpoint::ReplaceDocuments,
    },
    Route {
        method: Method::Put,
        pattern: "/indexes/{index_uid}/documents",
        actions: &[Action::DocumentsAdd],
        endpoint: Endpoint::UpdateDocuments,
    },
    Route {
        method: Method::Delete,
        pattern: "/indexes/{index_uid}/documents",
        actions: &[Action::DocumentsDelete],
        endpoint: Endpoint::ClearDocuments,
    },
    Route {
        method: Method::Delete,
        pattern: "/indexes/{index_uid}/documents/{document_id}",
        actions: &[Action::DocumentsDelete],
        endpoint: Endpoint::DeleteDocument,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/documents/delete-batch",
        actions: &[Action::DocumentsDelete],
        endpoint: Endpoint::DeleteDocumentsBatch,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/documents/delete",
        actions: &[Action::DocumentsDelete],
        endpoint: Endpoint::DeleteDocumentsByFilter,
    },
    Route {
        method: Method::Post,
        pattern: "/indexes/{index_uid}/documents/edit",
        // `documents.*` is never stored in a key (the wildcard expands to the concrete
        // actions), so only `*` keys and the master key pass, as in Meilisearch.
        actions: &[Action::DocumentsAll],
        endpoint: Endpoint::EditDocuments,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}/settings",
        actions: &[Action::SettingsGet],
        endpoint: Endpoint::GetSettings,
    },
    Route {
        method: Method::Patch,
        pattern: "/indexes/{index_uid}/settings",
        actions: &[Action::SettingsUpdate],
        endpoint: Endpoint::UpdateSettings,
    },
    Route {
        method: Method::Delete,
        pattern: "/indexes/{index_uid}/settings",
        actions: &[Action::SettingsUpdate],
        endpoint: Endpoint::ResetSettings,
    },
    Route {
        method: Method::Get,
        pattern: "/indexes/{index_uid}/settings/{setting}",
        actions: &[Action::SettingsGet],
        endpoint: Endpoint::SettingsSubRoute,
    },
    Route {
        method: Method::Put,
        pattern: "/indexes/{index_uid}/settings/{setting}",
        actions: &[Action::SettingsUpdate],
        endpoint: Endpoint::SettingsSubRoute,
    },
    Route {
        method: Method::Patch,
        pattern: "/indexes/{index_uid}/settings/{setting}",
        actions: &[Action::SettingsUpdate],
        endpoint: Endpoint::SettingsSubRoute,
    },
    Route {
        method: Method::Delete,
        pattern: "/indexes/{index_uid}/settings/{setting}",
        actions: &[Action::SettingsUpdate],
        endpoint: Endpoint::SettingsSubRoute,
    },
    Route {
        method: Method::Get,
        pattern: "/tasks",
        actions: &[Action::TasksGet],
        endpoint: Endpoint::ListTasks,
    },
    Route {
        method: Method::Post,
        pattern: "/tasks/cancel",
        actions: &[Action::TasksCancel],
        endpoint: Endpoint::CancelTasks,
    },
    Route {
        method: Method::Delete,
        pattern: "/tasks",
        actions: &[Action::TasksDelete],
        endpoint: Endpoint::DeleteTasks,
    },
    Route {
        method: Method::Post,
        pattern: "/tasks/compact",
        actions: &[Action::TasksCompact],
        endpoint: Endpoint::CompactTaskQueue,
    },
    Route {
        method: Method::Get,
        pattern: "/tasks/{task_id}",
        actions: &[Action::TasksGet],
        endpoint: Endpoint::GetTask,
    },
    Route {
        method: Method::Get,
        pattern: "/tasks/{task_id}/documents",
        actions: &[Action::TasksGet],
        endpoint: Endpoint::GetTaskDocuments,
    },
    Route {
        method: Method::Get,
        pattern: "/batches",
        actions: &[Action::TasksGet],
        endpoint: Endpoint::ListBatches,
    },
    Route {
        method: Method::Get,
        pattern: "/batches/{batch_id}",
        actions: &[Action::TasksGet],
        endpoint: Endpoint::GetBatch,
    },
    Route {
        method: Method::Get,
        pattern: "/webhooks",
        actions: &[Action::WebhooksGet],
        endpoint: Endpoint::ListWebhooks,
    },
    Route {
        method: Method::Post,
        pattern: "/webhooks",
        actions: &[Action::WebhooksCreate],
        endpoint: Endpoint::CreateWebhook,
    },
    Route {
        method: Method::Get,
        pattern: "/webhooks/{uuid}",
        actions: &[Action::WebhooksGet],
        endpoint: Endpoint::GetWebhook,
    },
    Route {
        method: Method::Patch,
        pattern: "/webhooks/{uuid}",
        actions: &[Action::WebhooksUpdate],
        endpoint: Endpoint::UpdateWebhook,
    },
    Route {
        method: Method::Delete,
        pattern: "/webhooks/{uuid}",
        actions: &[Action::WebhooksDelete],
        endpoint: Endpoint::DeleteWebhook,
    },
    Route {
        method: Method::Get,
        pattern: "/network",
        actions: &[Action::NetworkGet],
        endpoint: Endpoint::GetNetwork,
    },
    Route {
        method: Method::Patch,
        pattern: "/network",
        actions: &[Action::NetworkUpdate],
        endpoint: Endpoint::PatchNetwork,
    },
    Route {
        method: Method::Post,
        pattern: "/network/control",
        actions: &[Action::NetworkUpdate],
        endpoint: Endpoint::NetworkControl,
    },
    Route {
        method: Method::Post,
        pattern: "/dumps",
        actions: &[Action::DumpsCreate],
        endpoint: Endpoint::CreateDump,
    },
    Route {
        method: Method::Post,
        pattern: "/snapshots",
        actions: &[Action::SnapshotsCreate],
        endpoint: Endpoint::CreateSnapshot,
    },
    Route {
        method: Method::Post,
        pattern: "/export",
        actions: &[Action::Export],
        endpoint: Endpoint::Export,
    },
    Route {
        method: Method::Post,
        pattern: "/logs/stream",
        actions: &[Action::MetricsGet],
        endpoint: Endpoint::StreamLogs,
    },
    Route {
        method: Method::Delete,
        pattern: "/logs/stream",
        actions: &[Action::MetricsGet],
        endpoint: Endpoint::CancelLogStream,
    },
    Route {
        method: Method::Post,
        pattern: "/logs/stderr",
        actions: &[Action::MetricsGet],
        endpoint: Endpoint::UpdateStderrLogs,
    },
    Route {
        method: Method::Post,
        pattern: "/dynamic-search-rules",
        actions: &[Action::DynamicSearchRulesGet],
        endpoint: Endpoint::ListDynamicSearchRules,
    },
    Route {
        method: Method::Delete,
        pattern: "/dynamic-search-rules",
        actions: &[Action::DynamicSearchRulesDelete],
        endpoint: Endpoint::ClearDynamicSearchRules,
    },
    Route {
        method: Method::Get,
        pattern: "/dynamic-search-rules/{uid}",
        actions: &[Action::DynamicSearchRulesGet],
        endpoint: Endpoint::GetDynamicSearchRule,
    },
    Route {
        method: Method::Patch,
        pattern: "/dynamic-search-rules/{uid}",
        actions: &[Action::DynamicSearchRulesUpdate],
        endpoint: Endpoint::UpdateDynamicSearchRule,
    },
    Route {
        method: Method::Delete,
        pattern: "/dynamic-search-rules/{uid}",
        actions: &[Action::DynamicSearchRulesDelete],
        endpoint: Endpoint::DeleteDynamicSearchRule,
    },
    Route {
        method: Method::Get,
        pattern: "/chats",
        actions: &[Action::ChatsGet],
        endpoint: Endpoint::ListChats,
    },
    Route {
        method: Method::Get,
        pattern: "/chats/{workspace_uid}/settings",
        actions: &[Action::ChatsSettingsGet],
        endpoint: Endpoint::GetChatSettings,
    },
    Route {
        method: Method::Patch,
        pattern: "/chats/{workspace_uid}/settings",
        actions: &[Action::ChatsSettingsUpdate],
        endpoint: Endpoint::UpdateChatSettings,
    },
    Route {
        method: Method::Delete,
        pattern: "/chats/{workspace_uid}/settings",
        actions: &[Action::ChatsSettingsUpdate],
        endpoint: Endpoint::ResetChatSettings,
    },
    Route {
        method: Method::Get,
        pattern: "/chats/{workspace_uid}",
        actions: &[Action::ChatsGet],
        endpoint: Endpoint::GetChat,
    },
    Route {
        method: Method::Delete,
        pattern: "/chats/{workspace_uid}",
        actions: &[Action::ChatsDelete],
        endpoint: Endpoint::DeleteChat,
    },
    Route {
        method: Method::Post,
        pattern: "/chats/{workspace_uid}/chat/completions",
        actions: &[Action::ChatCompletions],
        endpoint: Endpoint::ChatCompletions,
    },
    Route {
        method: Method::Post,
        pattern: "/render-template",
        actions: &[Action::SettingsGet, Action::DocumentsGet],
        endpoint: Endpoint::RenderTemplate,
    },
];

impl Lookup<'_> {
    /// The value of path parameter `name`, when the route has it.
    pub fn parameter(parameters: &[(&'static str, &str)], name: &str) -> Option<String> {
        parameters
            .iter()
            .find(|(parameter, _)| *parameter == name)
            .map(|(_, value)| percent_decode(value))
    }
}

/// Decodes `%XX` escapes of a path segment (an invalid escape is kept as written).
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut position = 0;
    while position < bytes.len() {
        let escape = bytes
            .get(position + 1..position + 3)
            .filter(|_| bytes[position] == b'%')
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escape {
            Some(byte) => {
                decoded.push(byte);
                position += 3;
            }
            None => {
                decoded.push(bytes[position]);
                position += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// The outcome of looking a request up in the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'path> {
    Found {
        route: &'static Route,
        parameters: Vec<(&'static str, &'path str)>,
    },
    /// The path matches a route's pattern (the first such) under other methods only.
    MethodNotAllowed {
        pattern: &'static str,
    },
    NotFound,
}

/// Finds the route for `method` and `path` (already normalized: no trailing slash).
///
/// As actix-web routes Meilisearch's resources, the path picks the resource first and the
/// method then picks among its routes: the resource is the matching pattern with the most
/// literal segments (Meilisearch registers `/tasks/cancel` before `/tasks/{task_id}`, and
/// `/documents/fetch` before `/documents/{document_id}`), so `GET /tasks/compact` is 405,
/// not a read of task `compact`.
pub fn lookup<'path>(method: &Method, path: &'path str) -> Lookup<'path> {
    let slashes = slash_count(path);
    let mut resource: Option<(&'static str, usize)> = None;
    for (route, shape) in ROUTES.iter().zip(shapes()) {
        if shape.slashes != slashes || !pattern_matches(route.pattern, path) {
            continue;
        }
        if resource.is_none_or(|(_, most)| shape.literals > most) {
            resource = Some((route.pattern, shape.literals));
        }
    }
    let Some((pattern, _)) = resource else {
        return Lookup::NotFound;
    };
    ROUTES
        .iter()
        .filter(|route| route.pattern == pattern && route.method == *method)
        .find_map(|route| {
            match_pattern(route.pattern, path).map(|parameters| Lookup::Found { route, parameters })
        })
        .unwrap_or(Lookup::MethodNotAllowed { pattern })
}

/// What a lookup knows of a route's pattern without splitting it again.
struct Shape {
    /// Its `/` count: a path matches it only with as many (as many segments).
    slashes: usize,
    /// Its segments that are not parameters ([`literal_segments`]).
    literals: usize,
}

/// The shape of every route of [`ROUTES`], index for index, computed at the first lookup:
/// a request splits and compares only the patterns of its own segment count.
fn shapes() -> &'static [Shape] {
    static SHAPES: OnceLock<Vec<Shape>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        ROUTES
            .iter()
            .map(|route| Shape {
                slashes: slash_count(route.pattern),
                literals: literal_segments(route.pattern),
            })
            .collect()
    })
}

/// The `/` bytes of a path or pattern.
fn slash_count(text: &str) -> usize {
    text.bytes().filter(|byte| *byte == b'/').count()
}

/// Whether `path` matches `pattern` ([`match_pattern`] without collecting the parameters:
/// every request tries every pattern of its segment count).
fn pattern_matches(pattern: &str, path: &str) -> bool {
    let mut path_segments = path.split('/');
    for expected in pattern.split('/') {
        match path_segments.next() {
            Some(actual) if expected.starts_with('{') => {
                if actual.is_empty() {
                    return false;
                }
            }
            Some(actual) if actual == expected => {}
            _ => return false,
        }
    }
    path_segments.next().is_none()
}

/// The segments of `pattern` that are not parameters.
fn literal_segments(pattern: &str) -> usize {
    pattern
        .split('/')
        .filter(|segment| !segment.starts_with('{'))
        .count()
}

fn match_pattern<'path>(
    pattern: &'static str,
    path: &'path str,
) -> Option<Vec<(&'static str, &'path str)>> {
    let mut pattern_segments = pattern.split('/');
    let mut path_segments = path.split('/');
    let mut parameters = Vec::new();
    loop {
        match (pattern_segments.next(), path_segments.next()) {
            (None, None) => return Some(parameters),
            (Some(expected), Some(actual)) => {
                if let Some(name) = expected
                    .strip_prefix('{')
                    .and_then(|rest| rest.strip_suffix('}'))
                {
                    if actual.is_empty() {
                        return None;
                    }
                    parameters.push((name, actual));
                } else if expected != actual {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_found_by_its_own_method_and_pattern() {
        for route in ROUTES {
            let path = route
                .pattern
                .split('/')
                .map(|segment| {
                    if segment.starts_with('{') {
                        "x"
                    } else {
                        segment
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            match lookup(&route.method, &path) {
                Lookup::Found { route: found, .. } => {
                    assert_eq!(found, route, "{:?} {path}", route.method)
                }
                other => panic!("{:?} {path}: {other:?}", route.method),
            }
        }
    }

    #[test]
    fn known_path_and_method_finds_its_route() {
        match lookup(&Method::Get, "/experimental-features") {
            Lookup::Found { route, parameters } => {
                assert_eq!(route.endpoint, Endpoint::GetExperimentalFeatures);
                assert!(parameters.is_empty());
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn known_path_with_another_method_is_not_allowed() {
        assert_eq!(
            lookup(&Method::Delete, "/health"),
            Lookup::MethodNotAllowed { pattern: "/health" }
        );
    }

    #[test]
    fn unknown_path_is_not_found() {
        assert_eq!(lookup(&Method::Get, "/nope"), Lookup::NotFound);
        assert_eq!(lookup(&Method::Get, "/health/extra"), Lookup::NotFound);
    }

    #[test]
    fn a_literal_segment_wins_over_a_parameter_whatever_the_method() {
        assert_eq!(
            lookup(&Method::Get, "/tasks/compact"),
            Lookup::MethodNotAllowed {
                pattern: "/tasks/compact"
            }
        );
        assert!(matches!(
            lookup(&Method::Post, "/indexes/movies/documents/delete-batch"),
            Lookup::Found { route, .. } if route.endpoint == Endpoint::DeleteDocumentsBatch
        ));
        assert!(matches!(
            lookup(&Method::Get, "/tasks/12"),
            Lookup::Found { route, .. } if route.endpoint == Endpoint::GetTask
        ));
        assert!(matches!(
            lookup(&Method::Get, "/indexes/movies/documents/42"),
            Lookup::Found { route, .. } if route.endpoint == Endpoint::GetDocument
        ));
    }

    #[test]
    fn matching_without_parameters_agrees_with_matching_with_them() {
        let paths = [
            "/",
            "/health",
            "/health/",
            "/tasks",
            "/tasks/compact",
            "/tasks/12/documents",
            "/indexes//search",
            "/indexes/movies/search",
            "/indexes/movies/settings/synonyms",
            "/indexes/movies/documents/fetch/more",
            "/keys/abc",
            "",
        ];
        for route in ROUTES {
            for path in paths {
                assert_eq!(
                    pattern_matches(route.pattern, path),
                    match_pattern(route.pattern, path).is_some(),
                    "{} against {path}",
                    route.pattern
                );
            }
        }
    }

    #[test]
    fn parameters_are_captured_by_name() {
        assert_eq!(
            match_pattern(
                "/indexes/{index_uid}/documents",
                "/indexes/movies/documents"
            ),
            Some(vec![("index_uid", "movies")])
        );
        assert_eq!(match_pattern("/indexes/{index_uid}", "/indexes/"), None);
    }

    #[test]
    fn every_route_is_unique() {
        for (position, route) in ROUTES.iter().enumerate() {
            for other in &ROUTES[position + 1..] {
                assert!(
                    !(route.method == other.method && route.pattern == other.pattern),
                    "duplicate route {} {}",
                    route.pattern,
                    other.pattern
                );
            }
        }
    }

    #[test]
    fn render_template_needs_both_reading_actions_in_meilisearch_s_order() {
        match lookup(&Method::Post, "/render-template") {
            Lookup::Found { route, .. } => {
                assert_eq!(route.endpoint, Endpoint::RenderTemplate);
                assert_eq!(route.actions, [Action::SettingsGet, Action::DocumentsGet]);
            }
            other => panic!("unexpected {other:?}"),
        }
        // Every other guarded route needs one action.
        for route in ROUTES
            .iter()
            .filter(|route| route.endpoint != Endpoint::RenderTemplate)
        {
            assert!(route.actions.len() <= 1, "{}", route.pattern);
        }
    }

    #[test]
    fn head_is_no_get() {
        assert!(matches!(
            lookup(&Method::Head, "/health"),
            Lookup::MethodNotAllowed { .. }
        ));
        assert!(matches!(
            lookup(&Method::Head, "/indexes/movies/documents"),
            Lookup::MethodNotAllowed { .. }
        ));
        assert!(matches!(
            lookup(&Method::Head, "/nowhere"),
            Lookup::NotFound
        ));
    }
}
