//! The outgoing client of each core, built on first use from the process's IP policy
//! (`--experimental-allowed-ip-networks`, set once at start).
//!
//! Invariant: every client of the process checks addresses against the same policy; a core
//! has one client (one pool of keep-alive connections), shared by whatever it calls.

use std::cell::OnceCell;
use std::rc::Rc;
use std::sync::OnceLock;

use super::{IpPolicy, OutgoingClient};

static POLICY: OnceLock<IpPolicy> = OnceLock::new();

thread_local! {
    static CLIENT: OnceCell<Rc<OutgoingClient>> = const { OnceCell::new() };
}

/// Sets the policy of every client built from now on (the first call wins: it is set once,
/// from the configuration, before the cores start).
pub fn set_policy(policy: IpPolicy) {
    let _ = POLICY.set(policy);
}

/// The policy of `--experimental-allowed-ip-networks` values (`any` allows every address).
pub fn policy_of(networks: &[cidr::AnyIpCidr]) -> IpPolicy {
    if networks
        .iter()
        .any(|network| matches!(network, cidr::AnyIpCidr::Any))
    {
        return IpPolicy::allow_all();
    }
    IpPolicy::allowing(
        networks
            .iter()
            .filter_map(|network| match network {
                cidr::AnyIpCidr::V4(v4) => Some(cidr::IpCidr::V4(*v4)),
                cidr::AnyIpCidr::V6(v6) => Some(cidr::IpCidr::V6(*v6)),
                cidr::AnyIpCidr::Any => None,
            })
            .collect(),
    )
}

/// This core's client; `None` on a thread that is not a core.
pub fn core_client() -> Option<Rc<OutgoingClient>> {
    CLIENT.with(|cell| {
        if let Some(client) = cell.get() {
            return Some(Rc::clone(client));
        }
        let policy = POLICY.get().cloned().unwrap_or_default();
        let client = Rc::new(OutgoingClient::for_this_core(policy)?);
        Some(Rc::clone(cell.get_or_init(|| client)))
    })
}
