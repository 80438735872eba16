//! Encoding of request templates into the exact HTTP/1.1 bytes sent, once per
//! run, so that the hot loop only copies bytes.
//!
//! Invariant: every encoded request is a complete HTTP/1.1 message framed by
//! `Content-Length` (never chunked) and carries no `Connection: close`, so the
//! connection stays alive for the next request.

use super::target::Target;
use super::workload::{RequestTemplate, Workload};

/// The workload encoded for one target.
#[derive(Debug, Clone)]
pub struct EncodedWorkload {
    /// The request bytes, one per template, in workload order.
    pub requests: Vec<Vec<u8>>,
    /// Whether the response to each template can carry a body (false for HEAD).
    pub expects_body: Vec<bool>,
    /// The template labels, in workload order.
    pub labels: Vec<String>,
    /// The template weights, in workload order.
    pub weights: Vec<u32>,
}

impl EncodedWorkload {
    /// Encodes every template of `workload` for `target`.
    pub fn new(workload: &Workload, target: &Target, api_key: Option<&str>) -> EncodedWorkload {
        EncodedWorkload {
            requests: workload
                .templates
                .iter()
                .map(|template| encode(template, target, api_key))
                .collect(),
            expects_body: workload
                .templates
                .iter()
                .map(|template| !template.method.eq_ignore_ascii_case("HEAD"))
                .collect(),
            labels: workload
                .templates
                .iter()
                .map(RequestTemplate::label)
                .collect(),
            weights: workload.weights(),
        }
    }
}

/// Whether the template itself sets header `name`.
fn has_header(template: &RequestTemplate, name: &str) -> bool {
    template
        .headers
        .keys()
        .any(|key| key.eq_ignore_ascii_case(name))
}

/// The bytes of one request.
pub fn encode(template: &RequestTemplate, target: &Target, api_key: Option<&str>) -> Vec<u8> {
    let body = template.body_bytes();
    let mut head = format!(
        "{} {}{} HTTP/1.1\r\n",
        template.method, target.base_path, template.path
    );
    if !has_header(template, "host") {
        head.push_str(&format!("Host: {}\r\n", target.authority));
    }
    if let Some(key) = api_key {
        if !has_header(template, "authorization") {
            head.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
    }
    if template.json.is_some() && !has_header(template, "content-type") {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in &template.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let method_has_body = ["POST", "PUT", "PATCH"]
        .iter()
        .any(|method| template.method.eq_ignore_ascii_case(method));
    if body.is_some() || method_has_body {
        let length = body.as_ref().map_or(0, Vec::len);
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    if let Some(body) = body {
        bytes.extend_from_slice(&body);
    }
    bytes
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:7701/base").expect("parse succeeds")
    }

    #[test]
    fn get_has_host_and_bearer_and_no_length() {
        let bytes = encode(
            &RequestTemplate::new("GET", "/health"),
            &target(),
            Some("secret"),
        );
        assert_eq!(
            String::from_utf8(bytes).expect("from_utf8 succeeds"),
            "GET /base/health HTTP/1.1\r\nHost: 127.0.0.1:7701\r\nAuthorization: Bearer secret\r\n\r\n"
        );
    }

    #[test]
    fn json_patch_has_type_and_exact_length() {
        let mut template = RequestTemplate::new("PATCH", "/experimental-features");
        template.json = Some(serde_json::json!({"metrics": true}));
        let text =
            String::from_utf8(encode(&template, &target(), None)).expect("from_utf8 succeeds");
        assert!(text.contains("Content-Type: application/json\r\n"));
        assert!(
            text.ends_with("Content-Length: 16\r\n\r\n{\"metrics\":true}"),
            "{text}"
        );
    }

    #[test]
    fn template_headers_replace_defaults_and_empty_post_has_zero_length() {
        let mut template = RequestTemplate::new("POST", "/x");
        template
            .headers
            .insert("Host".to_string(), "example".to_string());
        template
            .headers
            .insert("authorization".to_string(), "Bearer other".to_string());
        let text = String::from_utf8(encode(&template, &target(), Some("secret")))
            .expect("from_utf8 succeeds");
        assert!(!text.contains("127.0.0.1:7701"));
        assert!(!text.contains("secret"));
        assert!(text.contains("Host: example\r\n"));
        assert!(text.ends_with("Content-Length: 0\r\n\r\n"));
    }
}
