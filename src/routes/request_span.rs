//! The server span of one HTTP request (`crate::traces`): started before the request is
//! looked up, as the child of a valid incoming `traceparent`, named `METHOD route` once its
//! route is known, ended with its status.
//!
//! Invariants: a path no route has is named by its method alone (raw paths would make a
//! name per URL); a 5xx answer marks the span as failed; names and text attributes are
//! built only for a recorded span.

use std::borrow::Cow;

use crate::http::{Method, Request};
use crate::traces::{Span, TRACEPARENT_HEADER};

/// The name of a request's span until its route is known.
const UNNAMED_REQUEST: &str = "HTTP request";
/// The first status that marks the request's span as failed.
const FAILED_STATUS_MIN: u16 = 500;

/// The span of `request`, answered on core `core`.
pub fn start(request: &Request) -> Span {
    Span::server(request.headers.get(TRACEPARENT_HEADER), UNNAMED_REQUEST)
}

/// Names `span` after its route (`None`: no route has the path) and ends it with `status`.
pub fn end(
    mut span: Span,
    method: &Method,
    route: Option<Cow<'static, str>>,
    status: u16,
    core: usize,
) {
    if !span.is_recording() {
        return;
    }
    let method = method.as_str();
    match route {
        Some(route) => {
            span.set_name(format!("{method} {route}"));
            span.set_attribute("http.route", route.into_owned());
        }
        None => span.set_name(method.to_owned()),
    }
    span.set_attribute("http.request.method", method.to_owned());
    span.set_attribute("http.response.status_code", i64::from(status));
    span.set_attribute("coresearch.core", core as i64);
    if status >= FAILED_STATUS_MIN {
        span.set_error();
    }
}
