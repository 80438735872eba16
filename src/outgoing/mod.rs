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
//! Invariants:
//! - only `runtime` and std/crates are imported (this module sits below every use case);
//! - the client and its sockets stay on the core that built them (`Rc`, not `Send`);
//! - a response of any status is an `Ok`: callers map statuses to their own errors; a 429
//!   or 5xx is returned only once the attempts are spent;
//! - one connection per attempt, closed after the response (`Connection: close`); a
//!   keep-alive pool is a later step.

mod connect;
mod encoding;
pub mod error;
pub mod policy;
pub mod request;
pub mod retry;
pub mod tls;
mod wire;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;

use std::cell::OnceCell;
use std::rc::Rc;

use futures_lite::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use futures_rustls::rustls::pki_types::CertificateDer;

use crate::runtime::readiness::Readiness;

pub use error::OutgoingError;
pub use policy::{InvalidNetwork, IpPolicy};
pub use request::{Method, OutgoingRequest, OutgoingResponse, SendOptions};
pub use tls::TlsClient;

/// The outgoing HTTP client of one core.
pub struct OutgoingClient {
    policy: IpPolicy,
    options: SendOptions,
    readiness: Rc<Readiness>,
    /// Built at the first `https` request (or given with extra roots).
    tls: OnceCell<TlsClient>,
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

    /// The policy requests are checked against.
    pub fn policy(&self) -> &IpPolicy {
        &self.policy
    }

    /// Sends `request`, retrying transient failures, 429 and 5xx with backoff; the last
    /// answer or error once no retry is due.
    pub async fn send(&self, request: OutgoingRequest) -> Result<OutgoingResponse, OutgoingError> {
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

    /// Resolve, check, connect, write, read.
    async fn exchange(
        &self,
        request: &OutgoingRequest,
        options: &SendOptions,
        host: &url::Host<String>,
        port: u16,
    ) -> Result<OutgoingResponse, OutgoingError> {
        let addresses = connect::resolve(host, port).await?;
        connect::check_policy(&self.policy, host, &addresses)?;
        let socket =
            connect::connect_any(&addresses, &self.readiness, options.connect_timeout).await?;
        if request.url.scheme() == tls::TLS_SCHEME {
            let stream = self.tls()?.connect(host, socket).await?;
            return talk(stream, request, options, host).await;
        }
        talk(socket, request, options, host).await
    }
}

/// Writes `request` on `stream` and reads the response.
async fn talk<Stream: AsyncRead + AsyncWrite + Unpin>(
    mut stream: Stream,
    request: &OutgoingRequest,
    options: &SendOptions,
    host: &url::Host<String>,
) -> Result<OutgoingResponse, OutgoingError> {
    let transfer = |error: std::io::Error| OutgoingError::Transfer {
        host: host.to_string(),
        reason: error.to_string(),
    };
    stream
        .write_all(&wire::serialize(request))
        .await
        .map_err(transfer)?;
    stream.flush().await.map_err(transfer)?;
    let response = wire::read_response(&mut stream, &request.method, options.max_response_bytes)
        .await
        .and_then(|response| encoding::decode(response, options.max_response_bytes));
    response.map_err(|error| match error {
        wire::ReadError::Io(error) => transfer(error),
        wire::ReadError::Invalid(reason) => OutgoingError::InvalidResponse {
            host: host.to_string(),
            reason,
        },
        wire::ReadError::TooLarge(limit) => OutgoingError::ResponseTooLarge {
            host: host.to_string(),
            limit,
        },
    })
}

/// A short description of an attempt's outcome for the logs.
fn describe(outcome: &Result<OutgoingResponse, OutgoingError>) -> String {
    match outcome {
        Ok(response) => format!("status {}", response.status),
        Err(error) => error.to_string(),
    }
}
