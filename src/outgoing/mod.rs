//! The shared outgoing HTTP client: what embedders (REST, OpenAI, Ollama), `/export`,
//! `/network` remote search and webhooks use to call other servers.
//!
//! One [`OutgoingClient`] per core. [`OutgoingClient::send`] takes an [`OutgoingRequest`]
//! (method, `http://` or `https://` URL, headers, body bytes the caller built) and answers an
//! [`OutgoingResponse`] (status, headers, body) or an [`OutgoingError`] naming the step
//! that failed. Each attempt resolves the host (off the core), checks every address
//! against the [`IpPolicy`], connects on the core's readiness set, runs the TLS handshake
//! for `https` ([`tls`], Mozilla roots), writes the request and reads the response (a
//! gzip body decoded, [`encoding`]), all within the request timeout; failed attempts are
//! retried by [`retry`]'s rules.
//!
//! [`OutgoingClient::send_streamed`] answers at the response head and hands the body over
//! piece by piece ([`streamed`]); [`event_stream`] reads server-sent events from those pieces.
//!
//! Invariants:
//! - only `runtime`, `traces` and std/crates are imported (this module sits below every use
//!   case);
//! - a request sent under a span context carries it as `traceparent` (W3C trace context),
//!   unless its caller set that header ([`OutgoingRequest::with_trace_context`]);
//! - the client and its sockets stay on the core that built them (`Rc`, not `Send`);
//! - a response of any status is an `Ok`: callers map statuses to their own errors; a 429
//!   or 5xx is returned only once the attempts are spent;
//! - connections are kept alive ([`pool`]): one whose response ended cleanly serves the
//!   next request to the same scheme, host and port; a pooled connection the server
//!   closed meanwhile is replaced by a new one within the same attempt.

mod connect;
mod encoding;
pub mod error;
pub mod event_stream;
pub mod path_segment;
pub mod policy;
mod pool;
pub mod request;
pub mod retry;
pub mod shared;
pub mod streamed;
pub mod tls;
mod wire;

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod tests;

use std::cell::OnceCell;
use std::rc::Rc;

use futures_lite::io::AsyncWriteExt;
use futures_rustls::rustls::pki_types::CertificateDer;

use crate::runtime::readiness::Readiness;

pub use error::OutgoingError;
pub use path_segment::path_segment;
pub use policy::{InvalidNetwork, IpPolicy};
use pool::{Connection, Pool};
pub use request::{Method, OutgoingRequest, OutgoingResponse, SendOptions};
pub use streamed::StreamedResponse;
pub use tls::TlsClient;

/// The outgoing HTTP client of one core.
pub struct OutgoingClient {
    policy: IpPolicy,
    options: SendOptions,
    readiness: Rc<Readiness>,
    /// Built at the first `https` request (or given with extra roots).
    tls: OnceCell<TlsClient>,
    /// Idle keep-alive connections.
    pool: Pool,
}

impl OutgoingClient {
    /// A client whose connections join `readiness`, limited by `policy`, with the default
    /// [`SendOptions`].
    pub fn new(policy: IpPolicy, readiness: Rc<Readiness>) -> Self {
        OutgoingClient {
            policy,
            options: SendOptions::default(),
            readiness,
            tls: OnceCell::new(),
            pool: Pool::default(),
        }
    }

    /// The same client also trusting `roots` for `https` (a private certificate
    /// authority, say).
    pub fn with_extra_roots(
        self,
        roots: &[CertificateDer<'static>],
    ) -> Result<Self, OutgoingError> {
        let tls = TlsClient::new(roots)?;
        let _ = self.tls.set(tls);
        Ok(self)
    }

    /// The TLS client, built on first use.
    fn tls(&self) -> Result<&TlsClient, OutgoingError> {
        if let Some(tls) = self.tls.get() {
            return Ok(tls);
        }
        let tls = TlsClient::new(&[])?;
        Ok(self.tls.get_or_init(|| tls))
    }

    /// A client on this core's readiness set; `None` on a thread that is not a core.
    pub fn for_this_core(policy: IpPolicy) -> Option<Self> {
        crate::runtime::readiness::current().map(|readiness| OutgoingClient::new(policy, readiness))
    }

    /// The same client with other default options.
    pub fn with_options(mut self, options: SendOptions) -> Self {
        self.options = options;
        self
    }

    /// The options requests without their own are sent with.
    pub fn options(&self) -> SendOptions {
        self.options
    }

    /// The policy requests are checked against.
    pub fn policy(&self) -> &IpPolicy {
        &self.policy
    }

    /// Sends `request`, retrying transient failures, 429 and 5xx with backoff; the last
    /// answer or error once no retry is due.
    pub async fn send(&self, request: OutgoingRequest) -> Result<OutgoingResponse, OutgoingError> {
        let request = request.with_trace_context();
        let options = request.options.unwrap_or(self.options);
        let mut attempt = 1;
        loop {
            let outcome = self.attempt(&request, &options).await;
            let Some(pause) = retry::pause_before_retry(&outcome, attempt, &options) else {
                return outcome;
            };
            tracing::debug!(
                url = %request.url, attempt, ?pause,
                outcome = %describe(&outcome),
                "an outgoing request is retried"
            );
            crate::runtime::sleep(pause).await;
            attempt += 1;
        }
    }

    /// One attempt, bounded by the request timeout.
    async fn attempt(
        &self,
        request: &OutgoingRequest,
        options: &SendOptions,
    ) -> Result<OutgoingResponse, OutgoingError> {
        let (host, port) = connect::host_and_port(&request.url)?;
        let expire = async {
            crate::runtime::sleep(options.request_timeout).await;
            Err(OutgoingError::Timeout {
                host: host.to_string(),
                timeout: options.request_timeout,
            })
        };
        futures_lite::future::or(self.exchange(request, options, &host, port), expire).await
    }

    /// On a pooled connection to the server when one waits (a fresh one when the server
    /// closed it meanwhile), else on a new one; the connection is pooled again when the
    /// response leaves it reusable.
    async fn exchange(
        &self,
        request: &OutgoingRequest,
        options: &SendOptions,
        host: &url::Host<String>,
        port: u16,
    ) -> Result<OutgoingResponse, OutgoingError> {
        let server = (request.url.scheme().to_owned(), host.to_string(), port);
        if let Some(connection) = self.pool.take(&server) {
            match talk(connection, request, options, host).await {
                Ok(answer) => return Ok(self.keep(server, answer)),
                Err(error) => {
                    tracing::debug!(%error, "a pooled connection failed; connecting anew");
                }
            }
        }
        let connection = self.connect(request, options, host, port).await?;
        let answer = talk(connection, request, options, host).await?;
        Ok(self.keep(server, answer))
    }

    /// Pools the connection of `answer` when it is reusable.
    fn keep(&self, server: pool::ServerKey, answer: Answer) -> OutgoingResponse {
        let (response, connection) = answer;
        if let Some(connection) = connection {
            self.pool.put(server, connection);
        }
        response
    }

    /// Resolve, check, connect, and the TLS handshake for `https`.
    async fn connect(
        &self,
        request: &OutgoingRequest,
        options: &SendOptions,
        host: &url::Host<String>,
        port: u16,
    ) -> Result<Connection, OutgoingError> {
        let addresses = connect::resolve(host, port).await?;
        connect::check_policy(&self.policy, host, &addresses)?;
        let socket =
            connect::connect_any(&addresses, &self.readiness, options.connect_timeout).await?;
        if request.url.scheme() == tls::TLS_SCHEME {
            let stream = self.tls()?.connect(host, socket).await?;
            return Ok(Connection::Tls(Box::new(stream)));
        }
        Ok(Connection::Plain(socket))
    }
}

/// A response, and its connection when it may carry another request.
type Answer = (OutgoingResponse, Option<Connection>);

/// Writes `request` on `connection` and reads the response.
async fn talk(
    mut connection: Connection,
    request: &OutgoingRequest,
    options: &SendOptions,
    host: &url::Host<String>,
) -> Result<Answer, OutgoingError> {
    let transfer = |error: std::io::Error| OutgoingError::Transfer {
        host: host.to_string(),
        reason: error.to_string(),
    };
    connection
        .write_all(&wire::serialize(request))
        .await
        .map_err(transfer)?;
    connection.flush().await.map_err(transfer)?;
    let read = wire::read_response(&mut connection, &request.method, options.max_response_bytes)
        .await
        .and_then(|(response, reusable)| {
            let response = encoding::decode(response, options.max_response_bytes)?;
            Ok((response, reusable))
        });
    let (response, reusable) = read.map_err(|error| match error {
        wire::ReadError::Io(error) => transfer(error),
        wire::ReadError::Invalid(reason) => OutgoingError::InvalidResponse {
            host: host.to_string(),
            reason,
        },
        wire::ReadError::TooLarge(limit) => OutgoingError::ResponseTooLarge {
            host: host.to_string(),
            limit,
        },
    })?;
    Ok((response, reusable.then_some(connection)))
}

/// A short description of an attempt's outcome for the logs.
fn describe(outcome: &Result<OutgoingResponse, OutgoingError>) -> String {
    match outcome {
        Ok(response) => format!("status {}", response.status),
        Err(error) => error.to_string(),
    }
}
