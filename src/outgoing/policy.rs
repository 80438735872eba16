//! Which destination addresses an outgoing request may reach: Meilisearch's
//! `--experimental-allowed-ip-networks` policy.
//!
//! - The default policy refuses every non-global address (private, loopback, link-local,
//!   documentation, benchmarking, reserved… by Rust std's unstable `is_global` rules, see
//!   [`is_global`]), so `http://localhost` is refused;
//! - a list of networks allows the non-global addresses inside them (global addresses are
//!   always allowed);
//! - `any` allows everything.
//!
//! Invariants: the check runs on every address the host resolved to, and one refused
//! address refuses the request (no "try the next one"); an IPv4-mapped IPv6 address is
//! checked as its IPv4 address. The flag is not wired here: `config` builds the policy
//! with [`IpPolicy::parse`] from the comma-separated values.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use cidr::IpCidr;

/// The value of the flag that allows every address.
pub const ALLOW_ANY: &str = "any";

/// The destinations outgoing requests may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpPolicy {
    allow_all: bool,
    allowed: Vec<IpCidr>,
}

/// A flag value that is neither `any`, a CIDR with zero host bits, nor an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidNetwork {
    pub value: String,
    pub reason: String,
}

impl fmt::Display for InvalidNetwork {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "`{}` is not an allowed IP network: {}",
            self.value, self.reason
        )
    }
}

impl std::error::Error for InvalidNetwork {}

impl IpPolicy {
    /// The default: global addresses only.
    pub fn global_only() -> Self {
        IpPolicy::default()
    }

    /// Every address, private and loopback included (`any`).
    pub fn allow_all() -> Self {
        IpPolicy {
            allow_all: true,
            allowed: Vec::new(),
        }
    }

    /// Global addresses and the addresses inside `networks`.
    pub fn allowing(networks: Vec<IpCidr>) -> Self {
        IpPolicy {
            allow_all: false,
            allowed: networks,
        }
    }

    /// Reads the flag's values: each `any`, a CIDR (`10.0.0.0/8`, host bits zero) or a bare
    /// address (one host); blank values are skipped. No values is the default policy.
    pub fn parse<'value>(
        values: impl IntoIterator<Item = &'value str>,
    ) -> Result<Self, InvalidNetwork> {
        let mut policy = IpPolicy::global_only();
        for value in values
            .into_iter()
            .map(str::trim)
            .filter(|value| !value.is_empty())
        {
            if value.eq_ignore_ascii_case(ALLOW_ANY) {
                policy.allow_all = true;
                continue;
            }
            let network = IpCidr::from_str(value).map_err(|error| InvalidNetwork {
                value: value.to_owned(),
                reason: error.to_string(),
            })?;
            policy.allowed.push(network);
        }
        Ok(policy)
    }

    /// Whether a request may connect to `address`.
    pub fn permits(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        self.allow_all
            || is_global(address)
            || self
                .allowed
                .iter()
                .any(|network| network.contains(&address))
    }
}

/// `address`, with an IPv4-mapped IPv6 address turned into its IPv4 address.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

/// Whether `address` is globally reachable, by the rules of Rust std's `IpAddr::is_global`
/// (unstable, so written out here).
pub fn is_global(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_global_v4(v4),
        IpAddr::V6(v6) => is_global_v6(v6),
    }
}

/// The IPv4 networks that are not global, as (network, prefix length).
const NON_GLOBAL_V4: [(u32, u32); 13] = [
    (0x0000_0000, 8),  // "this network"
    (0x0A00_0000, 8),  // private 10/8
    (0x6440_0000, 10), // shared 100.64/10
    (0x7F00_0000, 8),  // loopback
    (0xA9FE_0000, 16), // link-local
    (0xAC10_0000, 12), // private 172.16/12
    (0xC000_0200, 24), // documentation 192.0.2/24
    (0xC0A8_0000, 16), // private 192.168/16
    (0xC612_0000, 15), // benchmarking 198.18/15
    (0xC633_6400, 24), // documentation 198.51.100/24
    (0xCB00_7100, 24), // documentation 203.0.113/24
    (0xF000_0000, 4),  // reserved 240/4, broadcast included
    (0xC000_0000, 24), // IETF protocol assignments 192.0.0/24 (see the exceptions)
];

/// The globally reachable exceptions inside 192.0.0/24.
const GLOBAL_V4_EXCEPTIONS: [u32; 2] = [0xC000_0009, 0xC000_000A];

fn is_global_v4(address: Ipv4Addr) -> bool {
    let bits = u32::from(address);
    if GLOBAL_V4_EXCEPTIONS.contains(&bits) {
        return true;
    }
    !NON_GLOBAL_V4
        .iter()
        .any(|&(network, length)| bits >> (32 - length) == network >> (32 - length))
}

/// The IPv6 networks that are not global, as (network, prefix length); 2001::/23 is
/// handled apart for its exceptions.
const NON_GLOBAL_V6: [(u128, u32); 12] = [
    (0, 128),                                        // unspecified
    (1, 128),                                        // loopback
    (0x0000_0000_0000_0000_0000_ffff_0000_0000, 96), // IPv4-mapped
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // IPv4-IPv6 translation
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // discard-only
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 6to4
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // documentation
    (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16), // segment routing
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // unique local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // link-local
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // IETF protocol assignments
];

fn is_global_v6(address: Ipv6Addr) -> bool {
    let bits = u128::from(address);
    if is_global_protocol_assignment(address) {
        return true;
    }
    !NON_GLOBAL_V6
        .iter()
        .any(|&(network, length)| bits >> (128 - length) == network >> (128 - length))
}

/// The global exceptions inside 2001::/23: PCP and TURN anycast, AMT, AS112-v6, ORCHIDv2.
fn is_global_protocol_assignment(address: Ipv6Addr) -> bool {
    let segments = address.segments();
    let bits = u128::from(address);
    segments[0] == 0x2001
        && segments[1] < 0x200
        && (bits == 0x2001_0001_0000_0000_0000_0000_0000_0001
            || bits == 0x2001_0001_0000_0000_0000_0000_0000_0002
            || segments[1] == 3
            || (segments[1] == 4 && segments[2] == 0x112)
            || (0x20..=0x3f).contains(&segments[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn the_default_refuses_non_global_addresses_and_allows_global_ones() {
        let policy = IpPolicy::global_only();
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "192.0.2.1",
            "198.18.0.1",
            "192.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "2002::1",
        ] {
            assert!(!policy.permits(address(refused)), "{refused} is refused");
        }
        for allowed in [
            "8.8.8.8",
            "1.1.1.1",
            "192.0.0.9",
            "2606:4700::1111",
            "2001:4:112::1",
        ] {
            assert!(policy.permits(address(allowed)), "{allowed} is allowed");
        }
        assert!(policy.permits(address("2001:3::1")), "AMT is global");
        assert!(policy.permits(address("::ffff:8.8.8.8")), "mapped as IPv4");
    }

    #[test]
    fn listed_networks_and_any_allow_more() {
        let policy = IpPolicy::parse(["127.0.0.0/8", " 10.0.0.5 ", ""]).expect("valid values");
        assert!(policy.permits(address("127.0.0.1")));
        assert!(policy.permits(address("10.0.0.5")));
        assert!(!policy.permits(address("10.0.0.6")));
        assert!(!policy.permits(address("::1")));
        let any = IpPolicy::parse(["ANY"]).expect("any");
        assert_eq!(any, IpPolicy::allow_all());
        assert!(any.permits(address("::1")));
        assert_eq!(IpPolicy::parse([]).expect("empty"), IpPolicy::global_only());
    }

    #[test]
    fn a_network_with_host_bits_or_garbage_is_refused() {
        assert!(IpPolicy::parse(["10.0.0.1/8"]).is_err());
        let error = IpPolicy::parse(["nope"]).expect_err("garbage");
        assert!(error.to_string().contains("`nope`"), "{error}");
    }
}
