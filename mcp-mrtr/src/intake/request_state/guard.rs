//! Once per call, where it buys something: each `once!` step of a call is claimed the
//! first time a round of the call is about to take it, and refused for any second claim,
//! whichever state of the call the second round opened.
//!
//! Sealing bounds *where* a state opens (server, method, target, arguments, caller) and
//! *until when*; within that window a client could present it again (or a sibling of it,
//! sealed by a round that took no step) and run the round it closed once more. Only
//! `once!` steps make that matter: a round without one has no side effect to repeat, so
//! it never touches the guard, and honest traffic at any speed does not fill it. The
//! runtime claims lazily, just before the step runs, so parallel presentations of the
//! call's states still run the step once.
//!
//! This file holds the trait and what a claim is; the in-memory guard of one instance,
//! [`MemoryGuard`], is in `memory`, and the one several instances share in `ext/redis`.

mod memory;

use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;

pub use self::memory::MemoryGuard;

/// What a [`StateGuard`] says about a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumed {
    /// First use: it is now recorded.
    First,
    /// It was used before, or may have been (its entry was given up): refuse it.
    Again,
    /// The guard cannot record another state right now (its store is down).
    /// The state is refused, since it could not be marked used.
    Unavailable,
}

/// One step of one call, claimed before a round takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    digest: [u8; 32],
    owner: u32,
    expires: SystemTime,
    issued: SystemTime,
}

impl Claim {
    /// A claim of what `digest` names (the runtime's: a SHA-256 of the call's id and the
    /// step's key), counted against the client `owner` (an opaque number the runtime
    /// derives from who started the call), kept until `expires` (when no state of the call
    /// opens any more), issued now (see [`issued_at`](Self::issued_at)).
    pub fn new(digest: [u8; 32], owner: u32, expires: SystemTime) -> Self {
        Self { digest, owner, expires, issued: SystemTime::now() }
    }

    /// The claim of a state sealed at `issued`. A guard whose memory began later (it
    /// was created, or its store was emptied, after that) cannot know whether the state
    /// was claimed before, so it refuses it.
    pub fn issued_at(mut self, issued: SystemTime) -> Self {
        self.issued = issued;
        self
    }

    /// When the state was sealed.
    pub fn issued(&self) -> SystemTime {
        self.issued
    }

    /// What is claimed, as a digest: the guard never holds the call's id, the step's key or
    /// anything the state carries.
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// Who the claim counts against: the same number for every state of the calls one
    /// client started (an authenticated caller, or an address).
    pub fn owner(&self) -> u32 {
        self.owner
    }

    /// When no state of the call opens any more: its entry must be kept at least until then.
    pub fn expires(&self) -> SystemTime {
        self.expires
    }

    /// How long from now the entry must be kept.
    pub fn keep_for(&self) -> Duration {
        self.expires.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO)
    }
}

/// Remembers which steps of which calls have been claimed.
///
/// [`consume`](StateGuard::consume) **must be an atomic insert-if-absent**: when several
/// requests claim the same step at once, exactly one may see [`Consumed::First`]. A
/// check followed by a separate write (a Redis `GET` then `SET`) lets every one of them
/// through. With Redis, one `SET id 1 NX PX <keep_for in ms>` does it.
///
/// The in-memory [`MemoryGuard`] serves one instance. Several instances behind a load
/// balancer need one backed by a store they share: `RedisGuard` (the `redis` feature).
/// A store that cannot be reached answers [`Consumed::Unavailable`]: the state is refused,
/// never let through unrecorded.
///
/// A guard remembers claims from some moment on: when it was created, or when its store
/// was last emptied. A state sealed before that moment may have been claimed in a memory
/// it no longer has, so a guard refuses it ([`Consumed::Again`], via [`Claim::issued`]):
/// after a restart, calls in progress start over rather than take a step twice.
pub trait StateGuard: Send + Sync + 'static {
    /// Records the claim until it expires, unless it is recorded already.
    fn consume<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Consumed>;
}
