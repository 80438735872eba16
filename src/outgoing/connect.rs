//! From a URL's host to a connected socket: resolution (off the core), the IP policy on
//! every resolved address, then a connect per address under the connect timeout.
//!
//! Invariants: an IP-literal host is never sent to the resolver; every resolved address
//! passes the policy before any connection is tried (one refused address refuses the
//! request); a connect attempt never outlives its timeout.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::time::Duration;

use url::{Host, Url};

use crate::runtime::readiness::Readiness;
use crate::runtime::socket::Socket;

use super::error::OutgoingError;
use super::policy::IpPolicy;

/// The host of `url` as written (without brackets for IPv6) and its port.
pub fn host_and_port(url: &Url) -> Result<(Host<String>, u16), OutgoingError> {
    let invalid = |reason: &str| OutgoingError::InvalidUrl {
        url: url.to_string(),
        reason: reason.to_owned(),
    };
    let host = url.host().ok_or_else(|| invalid("the URL has no host"))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| invalid("the URL has no port"))?;
    Ok((host.to_owned(), port))
}

/// The addresses of `host`: the literal itself, or the resolver's answers (on a helper
/// thread, so the core keeps serving).
pub async fn resolve(host: &Host<String>, port: u16) -> Result<Vec<SocketAddr>, OutgoingError> {
    let name = match host {
        Host::Ipv4(address) => return Ok(vec![SocketAddr::new(IpAddr::V4(*address), port)]),
        Host::Ipv6(address) => return Ok(vec![SocketAddr::new(IpAddr::V6(*address), port)]),
        Host::Domain(name) => name.clone(),
    };
    let lookup = name.clone();
    let answer =
        crate::runtime::blocking::run(move || (lookup.as_str(), port).to_socket_addrs()).await;
    let addresses: Vec<SocketAddr> = answer
        .map_err(|error| OutgoingError::Resolve {
            host: name.clone(),
            reason: error.to_string(),
        })?
        .collect();
    if addresses.is_empty() {
        return Err(OutgoingError::Resolve {
            host: name,
            reason: "no address".to_owned(),
        });
    }
    Ok(addresses)
}

/// Fails on the first address `policy` refuses.
pub fn check_policy(
    policy: &IpPolicy,
    host: &Host<String>,
    addresses: &[SocketAddr],
) -> Result<(), OutgoingError> {
    match addresses
        .iter()
        .find(|address| !policy.permits(address.ip()))
    {
        Some(refused) => Err(OutgoingError::RejectedAddress {
            host: host.to_string(),
            address: refused.ip(),
        }),
        None => Ok(()),
    }
}

/// Connects to the first of `addresses` that answers, each within `timeout`; the error of
/// the last one otherwise.
pub async fn connect_any(
    addresses: &[SocketAddr],
    readiness: &Rc<Readiness>,
    timeout: Duration,
) -> Result<Socket, OutgoingError> {
    let mut last_error = None;
    for &address in addresses {
        match connect_one(address, readiness.clone(), timeout).await {
            Ok(socket) => return Ok(socket),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.unwrap_or_else(|| OutgoingError::Resolve {
        host: String::new(),
        reason: "no address".to_owned(),
    }))
}

async fn connect_one(
    address: SocketAddr,
    readiness: Rc<Readiness>,
    timeout: Duration,
) -> Result<Socket, OutgoingError> {
    let connect = async {
        let socket =
            Socket::connect(address, readiness)
                .await
                .map_err(|error| OutgoingError::Connect {
                    address,
                    reason: error.to_string(),
                })?;
        // Requests are written whole; don't hold their last segment back.
        let _ = socket.set_nodelay(true);
        Ok(socket)
    };
    let expire = async {
        crate::runtime::sleep(timeout).await;
        Err(OutgoingError::ConnectTimeout { address, timeout })
    };
    futures_lite::future::or(connect, expire).await
}
