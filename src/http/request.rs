//! A parsed HTTP request as the handler receives it: method, normalized path, raw query,
//! case-insensitive headers and the decoded body (or why it could not be read).
//!
//! Invariants:
//! - `path` never ends with `/` unless it is exactly `/` (actix `TrailingSlash::Trim`);
//! - `query` is the raw text after the first `?`, without the `?`;
//! - header names are stored as sent; every lookup compares them ASCII-case-insensitively.

use std::fmt;

/// The request method. Unknown methods keep their exact spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
    Options,
    Other(String),
}

impl Method {
    /// Parses a method token; methods are case-sensitive (RFC 9110 §9.1).
    pub fn parse(token: &str) -> Method {
        match token {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            other => Method::Other(other.to_string()),
        }
    }

    /// The method as it appears on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other(other) => other,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// The request headers, in the order they were sent.
///
/// All names and values live in one byte buffer (two allocations per request, whatever the
/// header count); `entries` holds their ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    bytes: Vec<u8>,
    entries: Vec<HeaderEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HeaderEntry {
    name_start: usize,
    value_start: usize,
    value_end: usize,
}

impl Headers {
    /// An empty header list.
    pub fn new() -> Headers {
        Headers::default()
    }

    /// An empty header list with room for `count` headers totalling `bytes` bytes.
    pub fn with_capacity(count: usize, bytes: usize) -> Headers {
        Headers {
            bytes: Vec::with_capacity(bytes),
            entries: Vec::with_capacity(count),
        }
    }

    /// Appends a header as sent (repeated names are kept, in order).
    pub fn push(&mut self, name: &str, value: &[u8]) {
        let name_start = self.bytes.len();
        self.bytes.extend_from_slice(name.as_bytes());
        let value_start = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.entries.push(HeaderEntry {
            name_start,
            value_start,
            value_end: self.bytes.len(),
        });
    }

    fn name_of(&self, entry: &HeaderEntry) -> &str {
        std::str::from_utf8(&self.bytes[entry.name_start..entry.value_start])
            .expect("header names are pushed as str")
    }

    fn name_bytes_of(&self, entry: &HeaderEntry) -> &[u8] {
        &self.bytes[entry.name_start..entry.value_start]
    }

    fn value_of(&self, entry: &HeaderEntry) -> &[u8] {
        &self.bytes[entry.value_start..entry.value_end]
    }

    /// The value of the first header called `name` (ASCII case-insensitive).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|entry| {
                self.name_bytes_of(entry)
                    .eq_ignore_ascii_case(name.as_bytes())
            })
            .map(|entry| self.value_of(entry))
    }

    /// The value of the first header called `name`, if it is valid UTF-8.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name)
            .and_then(|value| std::str::from_utf8(value).ok())
    }

    /// Every value of the headers called `name`, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.entries
            .iter()
            .filter(move |entry| {
                self.name_bytes_of(entry)
                    .eq_ignore_ascii_case(name.as_bytes())
            })
            .map(|entry| self.value_of(entry))
    }

    /// Whether a header called `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every header as (name as sent, value), in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.entries
            .iter()
            .map(|entry| (self.name_of(entry), self.value_of(entry)))
    }

    /// The number of headers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no header.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why the body of a request could not be read. The handler turns it into the API error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// The body is larger than `limit` bytes. `content_length` is the announced length when
    /// the request carried a `Content-Length` over the limit (the body was then not read);
    /// `None` when the limit was hit while streaming (chunked, or after decoding).
    TooLarge {
        content_length: Option<u64>,
        limit: u64,
    },
    /// The connection ended (or stalled past the body read timeout) before the whole body
    /// arrived.
    Incomplete,
    /// The body is not valid for its `Content-Encoding`: the decoder's error, in its `Debug`
    /// form (which Meilisearch's message shows).
    MalformedEncoding(String),
    /// The handler's [`super::BodySink`] could not store the body (its I/O error's text and
    /// OS error number).
    Sink {
        message: String,
        os_error: Option<i32>,
    },
}

impl BodyError {
    /// The error of a sink that could not store a body.
    pub fn from_sink(error: std::io::Error) -> BodyError {
        BodyError::Sink {
            message: error.to_string(),
            os_error: error.raw_os_error(),
        }
    }
}

impl fmt::Display for BodyError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::TooLarge {
                content_length: Some(length),
                limit,
            } => write!(
                formatter,
                "payload of {length} bytes is larger than the limit of {limit} bytes"
            ),
            BodyError::TooLarge {
                content_length: None,
                limit,
            } => write!(formatter, "payload has exceeded the limit of {limit} bytes"),
            BodyError::Incomplete => formatter.write_str("payload is incomplete"),
            BodyError::MalformedEncoding(reason) => {
                write!(formatter, "malformed encoded payload: {reason}")
            }
            BodyError::Sink { message, .. } => {
                write!(formatter, "the payload could not be stored: {message}")
            }
        }
    }
}

impl std::error::Error for BodyError {}

/// One request, ready for the handler.
#[derive(Debug)]
pub struct Request {
    pub method: Method,
    /// Raw (percent-encoded) path without the query; trailing slashes trimmed.
    pub path: String,
    /// Raw query string without the `?`.
    pub query: Option<String>,
    pub headers: Headers,
    /// Decoded body (`Content-Encoding` removed), or why it could not be read. Empty when the
    /// body was streamed to the handler's sink.
    pub body: Result<Vec<u8>, BodyError>,
    /// The body as the handler's [`super::BodySink`] stored it, when it streamed one.
    pub spooled: Option<super::SpooledBody>,
}

/// Splits a request target into its normalized path and raw query.
///
/// Trailing slashes are trimmed as actix `NormalizePath(TrailingSlash::Trim)` does: runs of
/// slashes are merged and a trailing one removed, except for the root path.
pub fn split_target(target: &str) -> (String, Option<String>) {
    let target = strip_scheme_and_authority(target);
    let (raw_path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query.to_string())),
        None => (target, None),
    };
    (normalize_path(raw_path), query)
}

/// An absolute-form target (`http://host/path`) keeps only its path and query.
fn strip_scheme_and_authority(target: &str) -> &str {
    let after_scheme = ["http://", "https://"].iter().find_map(|scheme| {
        let prefix = target.get(..scheme.len())?;
        prefix
            .eq_ignore_ascii_case(scheme)
            .then(|| &target[scheme.len()..])
    });
    match after_scheme {
        Some(rest) => match rest.find(['/', '?']) {
            Some(start) => &rest[start..],
            None => "/",
        },
        None => target,
    }
}

fn normalize_path(raw_path: &str) -> String {
    let mut path = String::with_capacity(raw_path.len() + 1);
    if !raw_path.starts_with('/') {
        path.push('/');
    }
    let mut previous_was_slash = false;
    for character in raw_path.chars() {
        if character == '/' {
            if previous_was_slash {
                continue;
            }
            previous_was_slash = true;
        } else {
            previous_was_slash = false;
        }
        path.push(character);
    }
    while path.len() > 1 && path.ends_with('/') {
        path.pop();
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_slashes_are_trimmed_but_root_stays() {
        assert_eq!(split_target("/indexes/"), ("/indexes".to_string(), None));
        assert_eq!(split_target("/"), ("/".to_string(), None));
        assert_eq!(split_target("//"), ("/".to_string(), None));
        assert_eq!(
            split_target("/indexes//movies/?limit=1"),
            ("/indexes/movies".to_string(), Some("limit=1".to_string()))
        );
        assert_eq!(split_target("/a?"), ("/a".to_string(), Some(String::new())));
        assert_eq!(
            split_target("http://localhost:7700/health/?x=1"),
            ("/health".to_string(), Some("x=1".to_string()))
        );
    }

    #[test]
    fn header_lookup_ignores_ascii_case() {
        let mut headers = Headers::new();
        headers.push("Content-Type", b"application/json");
        headers.push("x-a", b"1");
        headers.push("X-A", b"2");
        assert_eq!(headers.get_str("content-type"), Some("application/json"));
        assert_eq!(headers.get("X-a"), Some(&b"1"[..]));
        assert_eq!(headers.get_all("x-A").collect::<Vec<_>>(), [b"1", b"2"]);
        assert_eq!(
            headers.iter().next(),
            Some(("Content-Type", &b"application/json"[..]))
        );
        assert!(headers.get("missing").is_none());
    }

    #[test]
    fn methods_round_trip_and_keep_unknown_spelling() {
        for token in [
            "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "BREW",
        ] {
            assert_eq!(Method::parse(token).as_str(), token);
        }
        assert_eq!(Method::parse("get"), Method::Other("get".to_string()));
    }
}
