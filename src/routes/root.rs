//! `GET /`, `GET /health` and `GET /version`.

use crate::http::Response;
use crate::routes::Services;

/// The Meilisearch version whose API coresearch speaks.
pub const API_VERSION: &str = "1.41.0";

/// The page served at `/` in development, where Meilisearch serves its dashboard.
const DEVELOPMENT_HOME_PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\">\
<title>coresearch</title></head><body><h1>coresearch is running</h1><p>It speaks the \
Meilisearch API: point any Meilisearch client or front end at this address.</p></body></html>";

/// `GET /`: a status object in production, a small home page in development.
pub fn root(services: &Services) -> Response {
    if services.production {
        Response::json(200, &br#"{"status":"Meilisearch is running"}"#[..])
    } else {
        let mut response = Response::empty(200);
        response.headers.push((
            "content-type".into(),
            "text/html; charset=utf-8".to_string(),
        ));
        response.body = DEVELOPMENT_HOME_PAGE.as_bytes().to_vec();
        response
    }
}

/// `GET /health`.
pub fn health() -> Response {
    Response::json(200, &br#"{"status":"available"}"#[..])
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
