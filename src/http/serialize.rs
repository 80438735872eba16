//! Serialization of response heads into the connection's output buffer.
//!
//! Invariants: every head carries `content-length` (except 1xx and 204, where RFC 9110
//! forbids it; and streamed bodies, framed by `transfer-encoding: chunked` or by the close)
//! and `date`; the handler's own `content-length`, `transfer-encoding`, `connection` and
//! `date` headers are replaced by the connection's.

use super::cors;
use super::date;
use super::negotiate::Encoding;
use super::response::{Response, reason_phrase};

/// What the connection adds to a handler's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadExtras<'a> {
    /// CORS headers of a non-preflight answer: `Some(request_has_origin)`.
    pub(crate) simple_cors: Option<bool>,
    /// The coding the body was compressed with.
    pub(crate) content_encoding: Option<Encoding>,
    /// The `connection` header value, if one is needed.
    pub(crate) connection: Option<&'a str>,
    /// How the body's end is marked.
    pub(crate) framing: BodyFraming,
}

/// How a response body's end is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    /// `content-length` of the whole body.
    Length,
    /// `transfer-encoding: chunked`: a body streamed to an HTTP/1.1 peer.
    Chunked,
    /// Neither: a body streamed to an HTTP/1.0 peer ends with the connection.
    UntilClose,
}
impl HeadExtras<'_> {
    /// No addition besides length and date.
    #[cfg(test)]
    pub(crate) const NONE: HeadExtras<'static> = HeadExtras {
        simple_cors: None,
        content_encoding: None,
        connection: None,
        framing: BodyFraming::Length,
    };
}

/// Headers the connection owns; a handler's copies are dropped.
const CONNECTION_OWNED_HEADERS: [&str; 4] =
    ["content-length", "transfer-encoding", "connection", "date"];

/// Appends the head of `response` (status line, headers, blank line).
pub(crate) fn write_response_head(
    output: &mut Vec<u8>,
    response: &Response,
    extras: HeadExtras<'_>,
) {
    write_status_line(output, response.status);
    let mut handler_vary = None;
    for (name, value) in &response.headers {
        if CONNECTION_OWNED_HEADERS
            .iter()
            .any(|owned| name.eq_ignore_ascii_case(owned))
        {
            continue;
        }
        if let Some(request_has_origin) = extras.simple_cors {
            if name.eq_ignore_ascii_case("vary") && handler_vary.is_none() {
                handler_vary = Some(value.as_str());
                continue;
            }
            if request_has_origin && name.eq_ignore_ascii_case("access-control-allow-origin") {
                continue;
            }
        }
        write_header(output, name.as_bytes(), value.as_bytes());
    }
    if let Some(request_has_origin) = extras.simple_cors {
        cors::write_simple_headers(output, request_has_origin, handler_vary);
    }
    if let Some(encoding) = extras.content_encoding {
        write_header(output, b"content-encoding", encoding.token().as_bytes());
        output.extend_from_slice(b"vary: accept-encoding\r\n");
    }
    match extras.framing {
        BodyFraming::Length if !(response.status < 200 || response.status == 204) => {
            output.extend_from_slice(b"content-length: ");
            write_decimal(output, response.body.len() as u64);
            output.extend_from_slice(b"\r\n");
        }
        BodyFraming::Chunked => output.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        BodyFraming::Length | BodyFraming::UntilClose => {}
    }
    if let Some(connection) = extras.connection {
        write_header(output, b"connection", connection.as_bytes());
    }
    write_header(output, b"date", &date::now());
    output.extend_from_slice(b"\r\n");
}

/// Appends a bodiless answer that closes the connection (protocol errors, 408).
pub(crate) fn write_bare_status(output: &mut Vec<u8>, status: u16) {
    write_status_line(output, status);
    output.extend_from_slice(b"content-length: 0\r\nconnection: close\r\n");
    write_header(output, b"date", &date::now());
    output.extend_from_slice(b"\r\n");
}

/// Appends the interim `100 Continue`.
pub(crate) fn write_continue(output: &mut Vec<u8>) {
    output.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
}

fn write_status_line(output: &mut Vec<u8>, status: u16) {
    output.extend_from_slice(b"HTTP/1.1 ");
    write_decimal(output, u64::from(status));
    output.push(b' ');
    output.extend_from_slice(reason_phrase(status).as_bytes());
    output.extend_from_slice(b"\r\n");
}

fn write_header(output: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    output.extend_from_slice(name);
    output.extend_from_slice(b": ");
    // A value never spans lines: CR and LF would split the head (response splitting).
    output.extend(value.iter().map(|&byte| match byte {
        b'\r' | b'\n' => b' ',
        other => other,
    }));
    output.extend_from_slice(b"\r\n");
}

/// Appends `value` in decimal without allocating (shared with the request log).
pub(crate) fn write_decimal(output: &mut Vec<u8>, mut value: u64) {
    const DIGITS_MAX: usize = 20;
    let mut digits = [0u8; DIGITS_MAX];
    let mut position = DIGITS_MAX;
    loop {
        position -= 1;
        digits[position] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    output.extend_from_slice(&digits[position..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_has_length_and_date_and_drops_owned_headers() {
        let response = Response::json(200, "{}")
            .with_header("content-length", "99")
            .with_header("x-evil", "a\r\nset-cookie: b");
        let mut output = Vec::new();
        let extras = HeadExtras {
            connection: Some("close"),
            ..HeadExtras::NONE
        };
        write_response_head(&mut output, &response, extras);
        let text = String::from_utf8(output).expect("ascii head");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"));
        assert!(text.contains("x-evil: a  set-cookie: b\r\n"));
        assert!(text.contains("content-length: 2\r\n"));
        assert!(!text.contains("99"));
        assert!(text.contains("connection: close\r\n"));
        assert!(text.contains("\r\ndate: "));
        assert!(text.ends_with(" GMT\r\n\r\n"));
    }

    #[test]
    fn cors_and_coding_lines_are_added_and_merged() {
        let response = Response::json(200, "x")
            .with_header("Vary", "Cookie")
            .with_header("access-control-allow-origin", "http://a");
        let extras = HeadExtras {
            simple_cors: Some(true),
            content_encoding: Some(Encoding::Gzip),
            connection: None,
            framing: BodyFraming::Length,
        };
        let mut output = Vec::new();
        write_response_head(&mut output, &response, extras);
        let text = String::from_utf8(output).expect("ascii head");
        assert!(text.contains(&format!("vary: Cookie, {}\r\n", cors::CORS_VARY)));
        assert!(text.contains("access-control-allow-origin: *\r\n"));
        assert!(!text.contains("http://a"));
        assert!(text.contains("content-encoding: gzip\r\nvary: accept-encoding\r\n"));
    }

    #[test]
    fn streamed_bodies_are_chunked_or_end_with_the_connection() {
        let response = Response::empty(200).with_header("transfer-encoding", "gzip");
        let mut output = Vec::new();
        let extras = HeadExtras {
            framing: BodyFraming::Chunked,
            ..HeadExtras::NONE
        };
        write_response_head(&mut output, &response, extras);
        let text = String::from_utf8(output).expect("ascii head");
        assert!(text.contains("transfer-encoding: chunked\r\n"), "{text}");
        assert!(!text.contains("gzip") && !text.contains("content-length"));
        let mut output = Vec::new();
        let extras = HeadExtras {
            framing: BodyFraming::UntilClose,
            ..HeadExtras::NONE
        };
        write_response_head(&mut output, &response, extras);
        let text = String::from_utf8(output).expect("ascii head");
        assert!(!text.contains("transfer-encoding") && !text.contains("content-length"));
    }

    #[test]
    fn no_content_has_no_length() {
        let mut output = Vec::new();
        write_response_head(&mut output, &Response::empty(204), HeadExtras::NONE);
        let text = String::from_utf8(output).expect("ascii head");
        assert!(text.starts_with("HTTP/1.1 204 No Content\r\n"));
        assert!(!text.contains("content-length"));
    }

    #[test]
    fn decimals_are_written_exactly() {
        for value in [0u64, 7, 10, 1234567890, u64::MAX] {
            let mut output = Vec::new();
            write_decimal(&mut output, value);
            assert_eq!(output, value.to_string().into_bytes());
        }
    }
}
