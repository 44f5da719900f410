//! Fairness (ARCHITECTURE.md's invariants; the pools of the serving guide): a bound
//! protects the server; it must never hand the server to whoever fills it first.
//!
//! - [`ClientId`] (in `client`): who a request's client is, for every per-client share:
//!   the authenticated [`Caller`](crate::Caller) when there is one, else the address the
//!   transport resolved (the peer, or a trusted proxy's forwarded address).
//! - [`FairPool`] (in `pool`): a bounded pool with a total and a per-client share. When it
//!   is full, the client holding the most gives way (its oldest holder is asked to end);
//!   a newcomer is refused only when nobody holds more than the newcomer would.
//! - [`RateLimit`] (in `bucket`): token buckets per client, for pools where holding is
//!   cheap but creating is the attack (sessions, tasks).
//! - [`ByteShares`] (in `bytes`): bytes per client against a total and a share, for pools
//!   whose holders differ in size (a session's resource subscriptions).
//!
//! The pools themselves live with what they bound (listen streams in `catalog`, bridge waits
//! and subscriptions in `legacy`, tasks in `tasks`); this module is only the policy they
//! share.

mod bucket;
mod bytes;
mod client;
mod pool;

pub(crate) use bucket::RateLimit;
pub(crate) use bytes::ByteShares;
pub(crate) use client::{ClientAddr, ClientId, OwnerMac};
pub(crate) use pool::{FairPool, Held, Refused, Release};
