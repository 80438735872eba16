//! CORS as Meilisearch configures actix-cors 0.7: `allow_any_origin`, `send_wildcard`,
//! `allow_any_method`, `allow_any_header`, `max_age(86_400)`.
//!
//! Behaviour reproduced:
//! - preflight = `OPTIONS` with an `Access-Control-Request-Method` that is a valid method
//!   token; it is answered here, without calling the handler: 200, empty body,
//!   `access-control-allow-origin: *`, the nine allowed methods, the requested headers
//!   echoed, `access-control-max-age: 86400`, and the CORS `vary`. A requested method outside
//!   the nine (extension methods, lowercase spellings) is answered 400 with actix's text.
//! - every other response gets `access-control-allow-origin: *` when the request carried an
//!   `Origin`, and always the CORS `vary` (merged into the handler's `vary` if it set one).
//!
//! Invariant: no credentials header is ever sent (wildcard origin forbids it).

use std::borrow::Cow;

use super::request::{Headers, Method};
use super::response::Response;

/// `access-control-max-age` of preflight answers (24 h).
pub(crate) const PREFLIGHT_MAX_AGE_SECONDS: u32 = 86_400;
/// The `vary` value actix-cors adds.
pub(crate) const CORS_VARY: &str =
    "Origin, Access-Control-Request-Method, Access-Control-Request-Headers";
/// The methods `allow_any_method` allows, as sent in `access-control-allow-methods`.
const ALLOWED_METHODS: [&str; 9] = [
    "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "CONNECT", "PATCH", "TRACE",
];
/// Body of the 400 answer to a preflight asking for a method outside `ALLOWED_METHODS`.
pub(crate) const METHOD_NOT_ALLOWED_TEXT: &str = "Requested method is not allowed";

/// The answer to a preflight request, or `None` when the request is not a preflight.
pub(crate) fn preflight(method: &Method, headers: &Headers) -> Option<Response> {
    if *method != Method::Options {
        return None;
    }
    let requested_method = headers.get("access-control-request-method")?;
    if !is_method_token(requested_method) {
        return None;
    }
    if !ALLOWED_METHODS
        .iter()
        .any(|allowed| allowed.as_bytes() == requested_method)
    {
        return Some(Response {
            status: 400,
            headers: Vec::new(),
            body: METHOD_NOT_ALLOWED_TEXT.as_bytes().to_vec(),
            stream: None,
        });
    }
    let mut response = Response::empty(200);
    let mut add = |name: &'static str, value: String| {
        response.headers.push((Cow::Borrowed(name), value));
    };
    add("access-control-allow-origin", "*".to_string());
    add("access-control-allow-methods", ALLOWED_METHODS.join(", "));
    if let Some(requested_headers) = headers.get("access-control-request-headers") {
        add(
            "access-control-allow-headers",
            String::from_utf8_lossy(requested_headers).into_owned(),
        );
    }
    add(
        "access-control-max-age",
        PREFLIGHT_MAX_AGE_SECONDS.to_string(),
    );
    add("vary", CORS_VARY.to_string());
    Some(response)
}

/// A method token as `http::Method` accepts it: non-empty, only `tchar` bytes.
fn is_method_token(value: &[u8]) -> bool {
    !value.is_empty()
        && value
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(byte))
}

/// Writes the CORS header lines of a non-preflight response: the wildcard origin when the
/// request carried an `Origin`, and `vary` (the handler's own `vary`, if any, followed by the
/// CORS names, as actix-cors merges them).
pub(crate) fn write_simple_headers(
    output: &mut Vec<u8>,
    request_has_origin: bool,
    handler_vary: Option<&str>,
) {
    if request_has_origin {
        output.extend_from_slice(b"access-control-allow-origin: *\r\n");
    }
    output.extend_from_slice(b"vary: ");
    if let Some(vary) = handler_vary {
        output.extend(vary.bytes().filter(|byte| !matches!(byte, b'\r' | b'\n')));
        output.extend_from_slice(b", ");
    }
    output.extend_from_slice(CORS_VARY.as_bytes());
    output.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        let mut headers = Headers::new();
        for (name, value) in pairs {
            headers.push(name, value.as_bytes());
        }
        headers
    }

    #[test]
    fn preflight_allows_everything_and_echoes_requested_headers() {
        let request = headers(&[
            ("Origin", "http://example.com"),
            ("Access-Control-Request-Method", "DELETE"),
            ("Access-Control-Request-Headers", "authorization, x-custom"),
        ]);
        let response = preflight(&Method::Options, &request).expect("preflight");
        assert_eq!(response.status, 200);
        assert!(response.body.is_empty());
        assert_eq!(response.header("access-control-allow-origin"), Some("*"));
        assert_eq!(
            response.header("access-control-allow-methods"),
            Some("GET, POST, PUT, DELETE, HEAD, OPTIONS, CONNECT, PATCH, TRACE")
        );
        assert_eq!(
            response.header("access-control-allow-headers"),
            Some("authorization, x-custom")
        );
        assert_eq!(response.header("access-control-max-age"), Some("86400"));
        assert_eq!(response.header("vary"), Some(CORS_VARY));
    }

    #[test]
    fn preflight_needs_options_and_a_valid_requested_method() {
        let request = headers(&[("Access-Control-Request-Method", "GET")]);
        assert!(preflight(&Method::Get, &request).is_none());
        assert!(preflight(&Method::Options, &headers(&[])).is_none());
        let invalid = headers(&[("Access-Control-Request-Method", "GE T")]);
        assert!(preflight(&Method::Options, &invalid).is_none());
        let extension = headers(&[("Access-Control-Request-Method", "get")]);
        let refused = preflight(&Method::Options, &extension).expect("answered");
        assert_eq!(refused.status, 400);
        assert_eq!(refused.body, METHOD_NOT_ALLOWED_TEXT.as_bytes());
        assert_eq!(refused.header("vary"), None);
    }

    #[test]
    fn simple_responses_get_origin_only_when_asked_and_always_vary() {
        let mut with_origin = Vec::new();
        write_simple_headers(&mut with_origin, true, None);
        assert_eq!(
            String::from_utf8(with_origin).expect("ascii"),
            format!("access-control-allow-origin: *\r\nvary: {CORS_VARY}\r\n")
        );
        let mut merged = Vec::new();
        write_simple_headers(&mut merged, false, Some("Cookie"));
        assert_eq!(
            String::from_utf8(merged).expect("ascii"),
            format!("vary: Cookie, {CORS_VARY}\r\n")
        );
    }
}
