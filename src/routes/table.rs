//! The one route table of the server: every method and path, the API-key action it
//! requires, and the endpoint that answers it.
//!
//! Invariants:
//! - a path pattern is a sequence of literal segments and `{name}` parameters;
//! - a request path that matches no pattern is answered 404 with an empty body, one that
//!   matches a pattern only under other methods is answered 405 with an empty body (as
//!   actix-web does for Meilisearch);
//! - every route names its action (or `None` for the public ones); authorization uses it
//!   before anything else looks at the request.

use crate::http::Method;

/// What answers a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Root,
    Health,
    Version,
    GetExperimentalFeatures,
    PatchExperimentalFeatures,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub method: Method,
    pub pattern: &'static str,
    /// The API-key action the route requires; `None` for public routes.
    pub action: Option<&'static str>,
    pub endpoint: Endpoint,
}

/// Every route, in the order of the reference's route table.
pub static ROUTES: &[Route] = &[
    Route {
        method: Method::Get,
        pattern: "/",
        action: None,
        endpoint: Endpoint::Root,
    },
    Route {
        method: Method::Get,
        pattern: "/health",
        action: None,
        endpoint: Endpoint::Health,
    },
    Route {
        method: Method::Get,
        pattern: "/version",
        action: Some("version"),
        endpoint: Endpoint::Version,
    },
    Route {
        method: Method::Get,
        pattern: "/experimental-features",
        action: Some("experimental.get"),
        endpoint: Endpoint::GetExperimentalFeatures,
    },
    Route {
        method: Method::Patch,
        pattern: "/experimental-features",
        action: Some("experimental.update"),
        endpoint: Endpoint::PatchExperimentalFeatures,
    },
];

/// The outcome of looking a request up in the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'path> {
    Found {
        route: &'static Route,
        parameters: Vec<(&'static str, &'path str)>,
    },
    MethodNotAllowed,
    NotFound,
}

/// Finds the route for `method` and `path` (already normalized: no trailing slash).
pub fn lookup<'path>(method: &Method, path: &'path str) -> Lookup<'path> {
    let mut path_matched = false;
    for route in ROUTES {
        if let Some(parameters) = match_pattern(route.pattern, path) {
            if route.method == *method || (*method == Method::Head && route.method == Method::Get) {
                return Lookup::Found { route, parameters };
            }
            path_matched = true;
        }
    }
    if path_matched {
        Lookup::MethodNotAllowed
    } else {
        Lookup::NotFound
    }
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
        assert_eq!(lookup(&Method::Delete, "/health"), Lookup::MethodNotAllowed);
    }

    #[test]
    fn unknown_path_is_not_found() {
        assert_eq!(lookup(&Method::Get, "/nope"), Lookup::NotFound);
        assert_eq!(lookup(&Method::Get, "/health/extra"), Lookup::NotFound);
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
}
