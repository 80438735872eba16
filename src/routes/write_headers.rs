//! The headers of a task-creating request: the network's (a write forwarded by the leader,
//! an import of a network change) and, with `--experimental-replication-parameters`,
//! Meilisearch's replication parameters — `TaskId` (the uid the task must get; refused when
//! below the next uid) and `DryRun` (`true`: answer the task without registering it).
//!
//! Invariants: read before the request's body is consumed; without the flag `TaskId` and
//! `DryRun` are ignored, as Meilisearch ignores them; a bad value is `bad_request` with
//! Meilisearch's message.

use crate::errors::{Code, ResponseError};
use crate::http::Request;
use crate::network::headers::NetworkHeaders;
use crate::routes::Services;
use crate::tasks::queue::RegisterOptions;

/// The header naming the uid a task must get.
const TASK_ID_HEADER: &str = "TaskId";
/// The header asking for a registration that stores nothing.
const DRY_RUN_HEADER: &str = "DryRun";

/// What a task-creating request's headers ask for.
#[derive(Debug, Clone)]
pub struct WriteHeaders {
    pub network: NetworkHeaders,
    /// `requested_uid` and `dry_run` (its `network` is set later, by the network's rules).
    pub replication: RegisterOptions,
}

/// Reads the headers of `request`.
pub fn write_headers(
    services: &Services,
    request: &Request,
) -> Result<WriteHeaders, ResponseError> {
    let network = NetworkHeaders::read(|name| request.headers.get(name))?;
    let replication = if services.replication_parameters {
        RegisterOptions {
            requested_uid: task_id(request)?,
            dry_run: dry_run(request)?,
            network: None,
            network_change: None,
        }
    } else {
        RegisterOptions::default()
    };
    Ok(WriteHeaders {
        network,
        replication,
    })
}

fn task_id(request: &Request) -> Result<Option<u32>, ResponseError> {
    let Some(value) = header_text(request, TASK_ID_HEADER)? else {
        return Ok(None);
    };
    value.parse::<u32>().map(Some).map_err(|error| {
        ResponseError::new(
            Code::BadRequest,
            format!("Could not parse the TaskId as a u32: {error}"),
        )
    })
}

fn dry_run(request: &Request) -> Result<bool, ResponseError> {
    Ok(header_text(request, DRY_RUN_HEADER)?.is_some_and(|value| value.to_lowercase() == "true"))
}

fn header_text<'request>(
    request: &'request Request,
    name: &str,
) -> Result<Option<&'request str>, ResponseError> {
    request
        .headers
        .get(name)
        .map(|value| {
            std::str::from_utf8(value).map_err(|error| {
                ResponseError::new(
                    Code::BadRequest,
                    format!("{name} is not a valid utf-8 string: {error}"),
                )
            })
        })
        .transpose()
}
