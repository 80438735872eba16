//! `POST /logs/stream`, `DELETE /logs/stream` and `POST /logs/stderr` (experimental
//! `logsRoute`, or `--experimental-enable-logs-route`): a client receives the process's logs
//! as they happen, in one long response, and the stderr filter changes without a restart.
//!
//! Checks in Meilisearch's order: the key (`metrics.get`), the body (its errors are
//! `bad_request`, whatever the feature), then the feature. One stream at a time: a second
//! `POST /logs/stream` while one runs is refused; the stream ends when its client leaves or
//! `DELETE /logs/stream` is called, and the route is then free again.

use std::str::FromStr;

use deserr::Deserr;

use crate::decode::JsonError;
use crate::errors::{Code, ResponseError};
use crate::http::{BodyStream, Request, Response};
use crate::logs::{LogTargets, OpenError, StreamMode, TargetsError};
use crate::routes::{Services, body};

/// The discussion `feature_not_enabled` points to for the `/logs/*` routes.
const LOGS_ROUTE_LINK: &str = "https://github.com/orgs/meilisearch/discussions/721";

/// The `POST /logs/stream` body.
#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct StreamBody {
    #[deserr(default = LogTargets::default_target(), try_from(&String) = LogTargets::from_str -> TargetsError)]
    target: LogTargets,
    #[deserr(default)]
    mode: ModeBody,
    #[deserr(default)]
    profile_memory: bool,
}

/// `mode`: how the stream writes the logs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserr)]
#[deserr(rename_all = camelCase)]
enum ModeBody {
    #[default]
    Human,
    Json,
    Profile,
}

impl ModeBody {
    /// The name Meilisearch's messages give the mode.
    fn name(self) -> &'static str {
        match self {
            ModeBody::Human => "Human",
            ModeBody::Json => "Json",
            ModeBody::Profile => "Profile",
        }
    }
}

/// The `POST /logs/stderr` body.
#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct StderrBody {
    #[deserr(default = LogTargets::default_target(), try_from(&String) = LogTargets::from_str -> TargetsError)]
    target: LogTargets,
}

/// 400 `feature_not_enabled` unless `logsRoute` is on.
fn check_feature(services: &Services) -> Result<(), ResponseError> {
    if services.control.features().logs_route {
        return Ok(());
    }
    Err(ResponseError::feature_not_enabled(
        "Modifying logs through the `/logs/*` routes",
        "logs route",
        LOGS_ROUTE_LINK,
    ))
}

/// The mode of a decoded stream body; `profileMemory` only goes with `profile`.
fn stream_mode(body: &StreamBody) -> Result<StreamMode, ResponseError> {
    match (body.mode, body.profile_memory) {
        (ModeBody::Profile, memory) => Ok(StreamMode::Profile { memory }),
        // Meilisearch answers this one with the code of another check.
        (mode, true) => Err(ResponseError::new(
            Code::InvalidSettingsTypoTolerance,
            format!(
                "Invalid value: `profile_memory` can only be used while profiling code and is not compatible with the {} mode.",
                mode.name()
            ),
        )),
        (ModeBody::Human, false) => Ok(StreamMode::Human),
        (ModeBody::Json, false) => Ok(StreamMode::Json),
    }
}

/// `POST /logs/stream`: 200 and the logs as they come, until the client leaves or the
/// stream is deleted.
pub fn stream(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let body = body::json::<StreamBody, JsonError>(request)?;
    let mode = stream_mode(&body)?;
    check_feature(services)?;
    match services.logs.open_stream(body.target, mode) {
        Ok(stream) => {
            Ok(Response::streamed(200, BodyStream::new(stream))
                .with_header("x-accel-buffering", "no"))
        }
        Err(OpenError::InUse) => Err(ResponseError::new(
            Code::BadRequest,
            "The `/logs/stream` route is currently in use by someone else.",
        )),
        Err(OpenError::Unavailable(reason)) => Err(ResponseError::internal(reason)),
    }
}

/// `DELETE /logs/stream`: 204; the running stream, if any, ends.
pub fn cancel(services: &Services) -> Result<Response, ResponseError> {
    check_feature(services)?;
    services.logs.close_stream();
    Ok(Response::empty(204))
}

/// `POST /logs/stderr`: 204; stderr keeps what the new target keeps from now on.
pub fn stderr(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let body = body::json::<StderrBody, JsonError>(request)?;
    check_feature(services)?;
    services
        .logs
        .set_stderr_targets(body.target)
        .map_err(ResponseError::internal)?;
    Ok(Response::empty(204))
}
