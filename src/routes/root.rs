//! `GET /`, `GET /health` and `GET /version`.

use std::borrow::Cow;

use crate::dashboard::DASHBOARD;
use crate::http::Response;
use crate::routes::Services;

/// The Meilisearch version whose API coresearch speaks.
pub const API_VERSION: &str = "1.41.0";

/// `GET /`: Meilisearch's status object in production, the dashboard in development (as
/// Meilisearch 1.41 serves its mini-dashboard only with `--env development`).
pub fn root(services: &Services) -> Response {
    if services.production {
        return Response::json(200, &br#"{"status":"Meilisearch is running"}"#[..]);
    }
    let dashboard = &*DASHBOARD;
    let mut response = Response::empty(200);
    let mut add = |name: &'static str, value: String| {
        response.headers.push((Cow::Borrowed(name), value));
    };
    add("content-type", "text/html; charset=utf-8".to_owned());
    add(
        "content-security-policy",
        dashboard.content_security_policy.clone(),
    );
    add("x-content-type-options", "nosniff".to_owned());
    add("referrer-policy", "no-referrer".to_owned());
    // The page is part of the binary: a new binary may serve another one.
    add("cache-control", "no-cache".to_owned());
    response.body = dashboard.html.as_bytes().to_vec();
    response
}

/// `GET /health`: 200 `{"status":"available"}` while the process serves, 503
/// `{"status":"draining"}` once shutdown began (coresearch's extension for load balancers;
/// see `runtime::lifecycle`).
pub fn health(services: &Services) -> Response {
    crate::runtime::lifecycle::health_response(services.lifecycle.phase())
}

/// `GET /version`: the build's commit and date, and the API version spoken.
pub fn version() -> Response {
    let body = serde_json::json!({
        "commitSha": option_env!("CORESEARCH_COMMIT_SHA").unwrap_or("unknown"),
        "commitDate": option_env!("CORESEARCH_COMMIT_DATE").unwrap_or("unknown"),
        "pkgVersion": API_VERSION,
    });
    Response::json(200, body.to_string())
}
