//! `GET /metrics` (experimental feature `metrics`, or `--experimental-enable-metrics`): the
//! instance's figures in the Prometheus text format (see `crate::metrics`).
//!
//! Invariants: with the feature off the answer is Meilisearch's 400 `feature_not_enabled`;
//! a key must cover every index: one restricted to some indexes is refused at authentication
//! (the instance-wide actions of `crate::auth::IndexScope::Global`), with the 403
//! `invalid_api_key` message Meilisearch 1.41 gives it on this route.

use std::borrow::Cow;

use time::OffsetDateTime;

use crate::auth::{Action, AuthContext, is_index_restricted_key};
use crate::errors::{Code, ResponseError};
use crate::http::{Request, Response};
use crate::metrics::exposition::TEXT_FORMAT;
use crate::routes::Services;

/// The discussion `feature_not_enabled` points to.
const METRICS_DISCUSSION: &str = "https://github.com/meilisearch/product/discussions/625";

/// What Meilisearch adds to `invalid_api_key` for a key restricted to some indexes.
const EVERY_INDEX_REQUIRED: &str =
    " The API key for the `/metrics` route must allow access to all indexes.";

/// `GET /metrics`.
pub async fn get(services: &Services, context: &AuthContext) -> Result<Response, ResponseError> {
    if !services.control.features().metrics {
        return Err(ResponseError::feature_not_enabled(
            "Getting metrics",
            "metrics",
            METRICS_DISCUSSION,
        ));
    }
    if !context.all_indexes_authorized() {
        return Err(restricted_key_refusal());
    }
    let text = crate::metrics::scrape::scrape(&services.coordinator, &services.remote_availability)
        .await?;
    Ok(Response {
        status: 200,
        headers: vec![(Cow::Borrowed("content-type"), TEXT_FORMAT.to_owned())],
        body: text.into_bytes(),
        stream: None,
    })
}

/// The authentication's refusal of `request`, in Meilisearch's words for a key restricted to
/// some indexes that otherwise may get the metrics.
pub fn refusal(services: &Services, request: &Request, error: ResponseError) -> ResponseError {
    let keys = services.control.keys();
    let authorization = request.headers.get("authorization");
    if error.code == Code::InvalidApiKey
        && is_index_restricted_key(
            &keys,
            authorization,
            Action::MetricsGet,
            OffsetDateTime::now_utc(),
        )
    {
        restricted_key_refusal()
    } else {
        error
    }
}

fn restricted_key_refusal() -> ResponseError {
    ResponseError::new(
        Code::InvalidApiKey,
        format!("The provided API key is invalid.{EVERY_INDEX_REQUIRED}"),
    )
}
