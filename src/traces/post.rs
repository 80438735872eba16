//! The exporter's blocking HTTP/1.1 client: one `POST {endpoint}/v1/traces` per batch, over
//! a new connection (TLS with the Mozilla roots for `https`), answered 2xx or an error.
//!
//! It runs only on the exporter thread, never on a core, so it may block; every step is
//! bounded by [`POST_TIMEOUT`] and the response read by [`RESPONSE_BYTES_MAX`].
//!
//! Invariants: the URL is `http` or `https` with a host (the configuration checks it, and
//! [`Endpoint::new`] again); a post answers `Ok` only for a 2xx status.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use futures_rustls::rustls;
use rustls::pki_types::ServerName;

/// How long connecting, writing or reading may each take at most.
pub const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes of a response read (its status line is all that matters).
const RESPONSE_BYTES_MAX: u64 = 64 * 1024;
/// The OTLP/HTTP path of traces, after the endpoint's own path.
pub const TRACES_PATH: &str = "/v1/traces";

/// Where the exporter posts, resolved once.
pub struct Endpoint {
    host: String,
    port: u16,
    /// The request target: the endpoint's path with [`TRACES_PATH`] appended.
    target: String,
    /// TLS for an `https` endpoint.
    tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
}

impl Endpoint {
    /// The endpoint of `url` (`http` or `https`, with a host).
    pub fn new(url: &url::Url) -> Result<Endpoint, String> {
        let host = url
            .host_str()
            .ok_or_else(|| format!("the OTLP endpoint `{url}` has no host"))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("the OTLP endpoint `{url}` has no port"))?;
        let tls = match url.scheme() {
            "http" => None,
            "https" => Some((tls_config()?, server_name(url)?)),
            other => {
                return Err(format!(
                    "the OTLP endpoint's scheme `{other}` is not http or https"
                ));
            }
        };
        Ok(Endpoint {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            target: format!("{}{TRACES_PATH}", url.path().trim_end_matches('/')),
            tls,
        })
    }

    /// Posts `body` as JSON; `Ok` on a 2xx answer.
    pub fn post_json(&self, body: &[u8]) -> Result<(), String> {
        let stream = self.connect()?;
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.target,
            self.host,
            self.port,
            body.len()
        );
        let response = match &self.tls {
            None => exchange(stream, head.as_bytes(), body),
            Some((config, name)) => {
                let connection = rustls::ClientConnection::new(config.clone(), name.clone())
                    .map_err(|error| format!("TLS: {error}"))?;
                exchange(
                    rustls::StreamOwned::new(connection, stream),
                    head.as_bytes(),
                    body,
                )
            }
        }
        .map_err(|error| format!("{}:{}: {error}", self.host, self.port))?;
        match status_of(&response) {
            Some(status) if (200..300).contains(&status) => Ok(()),
            Some(status) => Err(format!("the endpoint answered {status}")),
            None => Err("the endpoint's answer is not HTTP".to_owned()),
        }
    }

    /// A new connection to the endpoint, its timeouts set.
    fn connect(&self) -> Result<TcpStream, String> {
        let addresses = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|error| format!("could not resolve {}: {error}", self.host))?;
        let mut last_error = format!("{} resolves to no address", self.host);
        for address in addresses {
            match TcpStream::connect_timeout(&address, POST_TIMEOUT) {
                Ok(stream) => {
                    stream
                        .set_read_timeout(Some(POST_TIMEOUT))
                        .and_then(|()| stream.set_write_timeout(Some(POST_TIMEOUT)))
                        .map_err(|error| error.to_string())?;
                    return Ok(stream);
                }
                Err(error) => last_error = format!("could not connect to {address}: {error}"),
            }
        }
        Err(last_error)
    }
}

/// Writes the request, then reads the response until the server closes, at most
/// [`RESPONSE_BYTES_MAX`] bytes.
fn exchange(mut stream: impl Read + Write, head: &[u8], body: &[u8]) -> std::io::Result<Vec<u8>> {
    stream.write_all(head)?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut response = Vec::new();
    let mut limited = stream.take(RESPONSE_BYTES_MAX);
    match limited.read_to_end(&mut response) {
        Ok(_) => Ok(response),
        // The status line arrived: a server that resets instead of closing cleanly answered.
        Err(_) if status_of(&response).is_some() => Ok(response),
        Err(error) => Err(error),
    }
}

/// The status code of an HTTP/1.x response.
fn status_of(response: &[u8]) -> Option<u16> {
    let line = response.split(|byte| *byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    words
        .next()
        .filter(|version| version.starts_with("HTTP/1."))?;
    words.next()?.parse().ok()
}

/// The client TLS configuration: the Mozilla roots, rustls's safe defaults.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS configuration: {error}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The name the endpoint's certificate must carry.
fn server_name(url: &url::Url) -> Result<ServerName<'static>, String> {
    match url.host() {
        Some(url::Host::Domain(domain)) => ServerName::try_from(domain.to_owned())
            .map_err(|error| format!("`{domain}` is not a TLS server name: {error}")),
        Some(url::Host::Ipv4(address)) => {
            Ok(ServerName::IpAddress(std::net::IpAddr::V4(address).into()))
        }
        Some(url::Host::Ipv6(address)) => {
            Ok(ServerName::IpAddress(std::net::IpAddr::V6(address).into()))
        }
        None => Err(format!("the OTLP endpoint `{url}` has no host")),
    }
}
