//! The target of a run: a plain `http://host:port[/prefix]` base URL, resolved
//! once to a socket address.
//!
//! Invariant: `base_path` is empty or starts with `/` and never ends with `/`,
//! so `base_path + template.path` is always a well-formed origin-form path.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};

/// The port used when the URL names none, as HTTP defines.
const HTTP_DEFAULT_PORT: u16 = 80;

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The value of the `Host` header (`host` or `host:port`, as written).
    pub authority: String,
    /// The path prefix every template path is appended to.
    pub base_path: String,
    /// The resolved address connections are opened to.
    pub address: SocketAddr,
}

/// Why a URL cannot be a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// Only `http://` is spoken by this driver.
    UnsupportedScheme(String),
    /// The authority part is empty or its port is not a number.
    BadAuthority(String),
    /// Name resolution failed or returned nothing.
    Unresolvable(String),
}

impl fmt::Display for TargetError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::UnsupportedScheme(url) => {
                write!(formatter, "`{url}`: only http:// URLs are supported")
            }
            TargetError::BadAuthority(url) => write!(formatter, "`{url}`: bad host or port"),
            TargetError::Unresolvable(detail) => write!(formatter, "cannot resolve {detail}"),
        }
    }
}

impl std::error::Error for TargetError {}

impl Target {
    /// Parses and resolves `url`.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| TargetError::UnsupportedScheme(url.to_string()))?;
        let (authority, path) = match rest.find('/') {
            Some(index) => (&rest[..index], &rest[index..]),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(TargetError::BadAuthority(url.to_string()));
        }
        let (host, port) =
            split_host_port(authority).ok_or_else(|| TargetError::BadAuthority(url.to_string()))?;
        let address = (host, port)
            .to_socket_addrs()
            .map_err(|error| TargetError::Unresolvable(format!("{authority}: {error}")))?
            .next()
            .ok_or_else(|| TargetError::Unresolvable(authority.to_string()))?;
        Ok(Target {
            authority: authority.to_string(),
            base_path: path.trim_end_matches('/').to_string(),
            address,
        })
    }
}

/// Splits `host:port`, `[v6]:port`, `host` or `[v6]` into a host to resolve and a port.
fn split_host_port(authority: &str) -> Option<(&str, u16)> {
    if let Some(bracketed) = authority.strip_prefix('[') {
        let close = bracketed.find(']')?;
        let host = &bracketed[..close];
        let after = &bracketed[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => HTTP_DEFAULT_PORT,
            None => return None,
        };
        return Some((host, port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => Some((host, port.parse().ok()?)),
        Some(_) => None,
        None => Some((authority, HTTP_DEFAULT_PORT)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn loopback_url_with_port_and_prefix_resolves() {
        let target = Target::parse("http://127.0.0.1:7701/prefix/").expect("parse succeeds");
        assert_eq!(target.authority, "127.0.0.1:7701");
        assert_eq!(target.base_path, "/prefix");
        assert_eq!(
            target.address,
            "127.0.0.1:7701".parse().expect("parse succeeds")
        );
    }

    #[test]
    fn ipv6_and_default_port_are_understood() {
        let target = Target::parse("http://[::1]:9000").expect("parse succeeds");
        assert_eq!(
            target.address,
            "[::1]:9000".parse().expect("parse succeeds")
        );
        assert_eq!(target.base_path, "");
        let target = Target::parse("http://127.0.0.1").expect("parse succeeds");
        assert_eq!(target.address.port(), HTTP_DEFAULT_PORT);
    }

    #[test]
    fn https_and_bad_ports_are_rejected() {
        assert!(matches!(
            Target::parse("https://127.0.0.1:1"),
            Err(TargetError::UnsupportedScheme(_))
        ));
        assert!(matches!(
            Target::parse("http://127.0.0.1:notaport"),
            Err(TargetError::BadAuthority(_))
        ));
        assert!(matches!(
            Target::parse("http:///x"),
            Err(TargetError::BadAuthority(_))
        ));
    }
}
