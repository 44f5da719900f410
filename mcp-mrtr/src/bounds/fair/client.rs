//! [`ClientId`]: who holds a share of a pool.

use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, OnceLock};

use axum::http::Extensions;

use crate::Caller;

/// The address a transport resolved for a request's client: the TCP peer, or the
/// address a trusted proxy forwarded ([`HttpConfig::trust_forwarded_for`](crate::http::HttpConfig::trust_forwarded_for)).
/// Inserted into the request's extensions before anything reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClientAddr(pub(crate) IpAddr);

/// Who a request's client is, for per-client shares of the server's pools.
///
/// The authenticated caller when there is one (one person, however many addresses they
/// come from); else the client's address. IPv6 addresses count by their /64 prefix: one
/// host is usually handed a whole /64, so counting single addresses would give it 2^64
/// shares. Without either (stdio, a test), every request is the one `Unknown` client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ClientId {
    Caller(Arc<str>),
    Address(IpAddr),
    Unknown,
}

impl ClientId {
    /// The client of a request, from what its transport and authentication attached.
    pub(crate) fn of(extensions: &Extensions) -> Self {
        if let Some(caller) = extensions.get::<Caller>() {
            return Self::Caller(caller.id().into());
        }
        if let Some(ClientAddr(address)) = extensions.get::<ClientAddr>() {
            return Self::address(*address);
        }
        Self::Unknown
    }

    /// The client at `address` (an IPv6 address by its /64; an IPv4-mapped one as IPv4).
    pub(crate) fn address(address: IpAddr) -> Self {
        match address {
            IpAddr::V4(_) => Self::Address(address),
            IpAddr::V6(v6) => {
                if let Some(v4) = v6.to_ipv4_mapped() {
                    return Self::Address(IpAddr::V4(v4));
                }
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                Self::Address(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
        }
    }
}

impl ClientId {
    /// A number standing for this client in the single-use guard, sealed into the states
    /// of the calls it starts: a keyed hash (the key is this process's own), never 0.
    pub(crate) fn owner_key(&self) -> u32 {
        static KEY: OnceLock<RandomState> = OnceLock::new();
        let hashed = KEY.get_or_init(RandomState::new).hash_one(self);
        // Truncation intended: 32 bits tell thousands of clients apart; two that collide
        // only share a share.
        #[allow(clippy::cast_possible_truncation)]
        let key = hashed as u32;
        key.max(1)
    }
}

#[cfg(test)]
impl ClientId {
    /// The client at 127.0.0.`n`, for tests of the pools.
    pub(crate) fn loopback(n: u8) -> Self {
        Self::address(IpAddr::from([127, 0, 0, n]))
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Caller(id) => write!(f, "caller {id}"),
            Self::Address(IpAddr::V6(prefix)) => write!(f, "{prefix}/64"),
            Self::Address(address) => address.fmt(f),
            Self::Unknown => f.write_str("unknown client"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_comes_before_the_address_and_ipv6_counts_by_its_64() {
        let mut extensions = Extensions::new();
        assert_eq!(ClientId::of(&extensions), ClientId::Unknown);
        extensions.insert(ClientAddr("2001:db8:1:2:aaaa::1".parse().unwrap()));
        let by_prefix = ClientId::of(&extensions);
        assert_eq!(by_prefix, ClientId::address("2001:db8:1:2:ffff::9".parse().unwrap()), "one /64, one client");
        assert_ne!(by_prefix, ClientId::address("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(by_prefix.to_string(), "2001:db8:1:2::/64");
        assert_eq!(
            ClientId::address("::ffff:127.0.0.2".parse().unwrap()),
            ClientId::address("127.0.0.2".parse().unwrap())
        );
        extensions.insert(Caller::new("alice"));
        assert_eq!(ClientId::of(&extensions), ClientId::Caller("alice".into()));
    }
}
