//! [`ClientId`]: who holds a share of a pool.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

use axum::http::Extensions;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::base::caller::Caller;

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

/// The keyed HMAC that owner numbers are made with, its key taken in once, and the
/// numbers of the clients seen lately: every call that seals a state asks for its client's,
/// and the HMAC (two SHA-256 blocks) was the dearest part of such a round.
#[derive(Clone)]
pub(crate) struct OwnerMac {
    mac: Hmac<Sha256>,
    known: Arc<Mutex<HashMap<ClientId, u32>>>,
}

/// Owner numbers remembered at most; all are forgotten when it is reached (a flood of new
/// clients only costs their own hashing).
const KNOWN_OWNERS: usize = 4_096;

/// The longest caller id whose number is remembered: what the memory above can hold stays
/// under 2 MiB, whatever the callers' names.
const MAX_KNOWN_CALLER: usize = 256;

impl OwnerMac {
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        let mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
        Self { mac, known: Arc::default() }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<ClientId, u32>> {
        self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ClientId {
    /// A number standing for this client in the single-use guard, sealed into the states
    /// of the calls it starts: a keyed hash (HMAC-SHA256) of who the client is, never 0.
    ///
    /// Keyed, so that no client can pick an address or a name whose number is another
    /// client's and push that client's entries out. With `key`, which every instance of
    /// a server derives alike from the state key ring they share: one client is the same
    /// number on every instance, so a guard they share (Redis) gives it one share, not
    /// one per instance it reaches (the sixth audit's N2: the key was each process's own).
    /// `keyed` is the HMAC with its key already taken in ([`OwnerMac::new`]), which halves
    /// the hashing of each number.
    pub(crate) fn owner_key(&self, keyed: &OwnerMac) -> u32 {
        if let Some(owner) = keyed.known().get(self) {
            return *owner;
        }
        let owner = self.owner_hmac(keyed);
        if matches!(self, Self::Caller(id) if id.len() > MAX_KNOWN_CALLER) {
            return owner;
        }
        let mut known = keyed.known();
        if known.len() >= KNOWN_OWNERS {
            known.clear();
        }
        known.insert(self.clone(), owner);
        owner
    }

    fn owner_hmac(&self, keyed: &OwnerMac) -> u32 {
        let mut mac = keyed.mac.clone();
        // Each kind tagged, so that no caller's name reads as an address.
        match self {
            Self::Caller(id) => {
                mac.update(b"c");
                mac.update(id.as_bytes());
            }
            Self::Address(IpAddr::V4(v4)) => {
                mac.update(b"4");
                mac.update(&v4.octets());
            }
            Self::Address(IpAddr::V6(v6)) => {
                mac.update(b"6");
                mac.update(&v6.octets());
            }
            Self::Unknown => mac.update(b"u"),
        }
        let tag = mac.finalize().into_bytes();
        // 32 bits tell thousands of clients apart; two that collide only share a share.
        u32::from_be_bytes([tag[0], tag[1], tag[2], tag[3]]).max(1)
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

    /// One client is one owner number wherever the key is the same (every instance of a
    /// server derives it from the ring they share), and another under another key.
    #[test]
    fn an_owner_number_follows_the_key_not_the_process() {
        let (key, other) = ([7u8; 32], [8u8; 32]);
        let alice = ClientId::Caller("alice".into());
        let (key, other) = (OwnerMac::new(&key), OwnerMac::new(&other));
        assert_eq!(alice.owner_key(&key), ClientId::Caller("alice".into()).owner_key(&key));
        assert_ne!(alice.owner_key(&key), alice.owner_key(&other));
        assert_ne!(alice.owner_key(&key), ClientId::Caller("bob".into()).owner_key(&key));
        assert_ne!(ClientId::loopback(1).owner_key(&key), ClientId::loopback(2).owner_key(&key));
        assert_ne!(ClientId::Unknown.owner_key(&key), 0);
        // Remembered, the same; and never more than the bound remembered.
        assert_eq!(alice.owner_key(&key), alice.owner_hmac(&key));
        for n in 0..=KNOWN_OWNERS {
            let client = ClientId::Caller(format!("client-{n}").into());
            assert_eq!(client.owner_key(&key), client.owner_hmac(&key));
        }
        assert!(key.known().len() <= KNOWN_OWNERS);
        let long = ClientId::Caller("x".repeat(MAX_KNOWN_CALLER + 1).into());
        assert_eq!(long.owner_key(&key), long.owner_hmac(&key));
        assert!(!key.known().contains_key(&long), "a long name is not kept");
    }
}
