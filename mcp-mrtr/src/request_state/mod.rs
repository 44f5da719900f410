//! The sealed `requestState`: its keys, lifetime and size cap ([`StateConfig`], [`KeyRing`],
//! [`StateKey`]), and the guard that makes a state single-use for `once!` steps
//! ([`StateGuard`], [`MemoryGuard`], the `redis` feature's `RedisGuard`).
//!
//! A state is what a server keeps between rounds, carried by the client: it is sealed
//! with authenticated encryption, so the client can neither read nor alter it, nor
//! replay it against another request, nor keep using it past its expiry. See the
//! [request-state chapter](crate::guide::request_state).

// For maintainers:
//
// Sealed request states: the opaque `requestState` string a server hands out with an
// `input_required` result, and the client echoes verbatim on its retry.
//
// The server keeps nothing between rounds, so the state carries the handler's
// accumulated answers to the client and back. It is attacker-controlled input, so it is
// sealed with authenticated encryption: the client can neither read nor alter it, nor
// replay it against another request, nor keep using it past its expiry.
//
// # What this module owns
//
// - [`StateKey`] and [`KeyRing`] (in `keys`): the secrets, with ids for rotation. The
//   ring's first key seals; every key in it opens. [`KeyRing::from_env`] reads
//   `MCP_MRTR_STATE_KEYS` (`id:base64,id:base64,…`, first seals).
// - [`StateConfig`]: keys, lifetime (default 10 minutes) and size cap (default 64 KiB).
//   [`StateConfig::from_env_or_random`] is the default: the environment's keys, or a
//   random key of the server's own.
// - [`StateGuard`] and [`MemoryGuard`] (in `guard`): which states were claimed already.
// - `Presented` (in `presented`): a client's state, checked and decoded; `SingleUse`:
//   its claim, made only by a round about to take a `once!` step.
// - The crate-private entry points [`StateConfig::seal`] and [`StateConfig::open`], which
//   take a [`Binding`]: the method, target, arguments and caller the state belongs to.
// - Errors: [`SealError`] (the server produced too large a state: an internal error) and
//   [`OpenError`] (the client's state was rejected). An `OpenError` keeps its [`Reason`]
//   for server logs but always becomes the same client-facing error, so a client learns
//   nothing from which check failed.
//
// # Token format (`v3`)
//
// ```text
// v3.<key id>.<base64url without padding of: nonce (12 bytes) || ciphertext || tag (16 bytes)>
// ```
//
// - Cipher: AES-256-GCM-SIV (RFC 8452) under a key derived with HKDF-SHA256 from the
//   secret named by `<key id>` (`[A-Za-z0-9_-]{1,32}`, in clear so the right key of the
//   ring is picked), with a fresh random 12-byte nonce. GCM-SIV resists nonce misuse: were
//   a random nonce ever repeated, it would reveal only whether the two states are equal.
// - Plaintext: the expiry as unix milliseconds, u64 big-endian (8 bytes), then the payload.
// - Associated data (authenticated, never sent): `"v3." + key id + "." + SHA-256(binding)`.
//   The binding digest covers a domain tag, then the server's name, the method, the
//   target, the arguments as canonical JSON (compact, object keys sorted) and the
//   principal, each prefixed with its length as a u64 so no field can be shifted into the
//   next; the principal also carries a presence byte.
// - `v2` tokens (the same layout with XChaCha20-Poly1305 and a 24-byte nonce, sealed by
//   the previous release) still open, so a rolling upgrade keeps calls that are mid-way.
//
// Opening checks, in order: the token's length against the cap (before decoding
// anything), the version, the key id, the base64 and minimum length, the authentication
// tag (which fails for tampering and for another binding alike), and then the expiry.

mod guard;
mod keys;
mod presented;
mod seal;
mod v2;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Once;
use std::time::{Duration, SystemTime};

pub use guard::{Claim, Consumed, MemoryGuard, StateGuard};
pub use keys::{KeyError, KeyRing, StateKey};
pub(crate) use presented::{Presented, SingleUse};

use crate::Error;

/// The one message a client sees for any state that does not open.
const REJECTED: &str = "Invalid requestState: it is tampered, expired, or belongs to another request";

/// How states are sealed: keys, lifetime, size cap, and whether the previous release's
/// `v2` states still open.
///
/// ```
/// use std::time::Duration;
///
/// use mcp_mrtr::{request_state::KeyRing, Server, request_state::StateConfig, request_state::StateKey};
///
/// // Every instance behind the load balancer gets the same ring (`KeyRing::from_env`);
/// // a random key suits one instance, whose states then die with it.
/// let config = StateConfig::new(KeyRing::new(StateKey::random()))
///     // A person gets five minutes to answer a question.
///     .ttl(Duration::from_secs(5 * 60))
///     .max_bytes(16 * 1024);
/// let server = Server::new("app", "1.0.0").request_state(config);
/// # let _ = server;
/// ```
#[derive(Clone, Debug)]
pub struct StateConfig {
    keys: KeyRing,
    ttl: Duration,
    max_bytes: usize,
    accept_v2: bool,
}

impl StateConfig {
    /// Seals with `keys`; states live 10 minutes, tokens are at most 64 KiB, and `v2`
    /// states still open.
    pub fn new(keys: KeyRing) -> Self {
        Self { keys, ttl: Duration::from_secs(10 * 60), max_bytes: 64 * 1024, accept_v2: true }
    }

    /// How long a sealed state stays valid, to the millisecond. Lifetimes past the year
    /// 9999 are cut there.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The keys: what every instance of the server shares, so other shared secrets (the
    /// change fanout's) derive from them too.
    pub(crate) fn ring(&self) -> &KeyRing {
        &self.keys
    }

    /// How long a state opens after it is sealed.
    pub(crate) fn lifetime(&self) -> Duration {
        self.ttl
    }

    /// The longest token, in bytes, that is sealed or opened. This caps the payload too:
    /// a state of `n` payload bytes takes about `4n/3 + 60` bytes.
    pub fn max_bytes(mut self, max: usize) -> Self {
        self.max_bytes = max;
        self
    }

    /// Whether states in the previous release's `v2` format still open (default: yes).
    /// They do so that a rolling upgrade from that release keeps calls that are mid-way.
    /// Once every instance runs this release and one state TTL has passed, no `v2` state
    /// can be live, and `false` refuses them as any unknown format is refused.
    pub fn accept_v2_states(mut self, accept: bool) -> Self {
        self.accept_v2 = accept;
        self
    }

    /// Keys from `MCP_MRTR_STATE_KEYS` when it is set; otherwise a fresh random key, with a
    /// warning (once per process: in the log, or on stderr without a tracing subscriber)
    /// that states then open only on this server, until it restarts.
    ///
    /// A malformed `MCP_MRTR_STATE_KEYS` is an error: serving with the wrong keys would
    /// silently reject every state.
    pub fn from_env_or_random() -> Result<Self, KeyError> {
        if let Some(keys) = KeyRing::from_env()? {
            return Ok(Self::new(keys));
        }
        announce_random_key();
        Ok(Self::new(KeyRing::new(StateKey::random())))
    }

    /// Seals `payload` for `binding`, valid until `now` plus the TTL.
    pub(crate) fn seal(&self, binding: &BindingDigest, payload: &[u8], now: SystemTime) -> Result<String, SealError> {
        seal::seal(&self.keys, binding, payload, seal::expiry(now, self.ttl), self.max_bytes)
    }

    /// Opens a token sealed for this same `binding` that has not expired at `now`: its
    /// payload, and when it expires.
    pub(crate) fn open(
        &self,
        token: &str,
        binding: &BindingDigest,
        now: SystemTime,
    ) -> Result<(Vec<u8>, SystemTime), OpenError> {
        let versions = if self.accept_v2 { seal::Versions::CurrentAndV2 } else { seal::Versions::Current };
        seal::open(&self.keys, token, binding, now, self.max_bytes, versions)
    }

    /// Not part of the API: lets `benches/state.rs` time a seal and open round trip
    /// (both are crate-private). Returns the opened payload's length.
    ///
    /// # Panics
    ///
    /// If the payload does not fit the cap.
    #[doc(hidden)]
    pub fn bench_seal_open(&self, payload: &[u8]) -> usize {
        let arguments = serde_json::json!({ "city": "Lyon", "days": 3 });
        let binding = Binding {
            server: "bench",
            method: "tools/call",
            target: "bench",
            arguments: arguments.as_object(),
            principal: None,
        }
        .digest();
        let now = SystemTime::now();
        let token = self.seal(&binding, payload, now).expect("the bench payload fits the cap");
        self.open(&token, &binding, now).map_or(0, |(opened, _)| opened.len())
    }

    /// Not part of the API: lets `benches/state.rs` time the binding digest alone, the
    /// part of every seal and open that grows with the call's arguments.
    #[doc(hidden)]
    pub fn bench_binding_digest(arguments: &serde_json::Value) -> [u8; 32] {
        let arguments = arguments.as_object();
        Binding { server: "bench", method: "tools/call", target: "bench", arguments, principal: None }.digest().0
    }
}

/// Says, once per process, that states are sealed with a random key: in the log, or on
/// stderr when no tracing subscriber is installed (nobody would see the log).
fn announce_random_key() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let message = format!(
            "{env} is not set: request states are sealed with a random key and will not open on other \
             instances or after a restart; set {env} to id:base64 keys shared by all instances",
            env = keys::KEYS_ENV,
        );
        if tracing::dispatcher::has_been_set() {
            tracing::warn!("{message}");
        } else {
            eprintln!("mcp-mrtr: warning: {message}");
        }
    });
}

/// What a state is bound to. A state sealed for one binding never opens for another.
pub(crate) struct Binding<'a> {
    /// The name of the server that sealed it: a state from one server never opens on
    /// another, even in the same process or with the same keys.
    pub(crate) server: &'a str,
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub(crate) method: &'a str,
    /// The tool name, prompt name or resource URI.
    pub(crate) target: &'a str,
    /// The request's arguments, digested as canonical JSON; `None` (digested as `null`)
    /// for methods without arguments.
    pub(crate) arguments: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// The caller's identity, when the application knows it.
    pub(crate) principal: Option<&'a str>,
}

impl Binding<'_> {
    /// The digest sealing and opening use: computed once per request, then used for both
    /// the state it opens and the one it seals.
    pub(crate) fn digest(&self) -> BindingDigest {
        BindingDigest(seal::binding_digest(self))
    }
}

/// A [`Binding`], digested: what a state's associated data carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BindingDigest([u8; 32]);

/// Why a state did not open. For server logs only: clients always get the same error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Longer than the cap; rejected before decoding.
    Oversized,
    /// Not `version.key.body`, body not base64url, or too short.
    Malformed,
    /// A version other than `v1`.
    UnknownVersion,
    /// No key in the ring has the token's key id.
    UnknownKey,
    /// The tag did not verify: tampered, forged, or sealed for another binding (the
    /// AEAD cannot tell these apart).
    Unauthentic,
    /// Authentic, but past its expiry.
    Expired,
    /// Authentic and fresh, but already used once.
    Replayed,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Oversized => "token longer than the size cap",
            Self::Malformed => "malformed token",
            Self::UnknownVersion => "unknown token version",
            Self::UnknownKey => "unknown key id",
            Self::Unauthentic => "authentication failed (tampered, or sealed for another request)",
            Self::Expired => "expired",
            Self::Replayed => "already used",
        })
    }
}

/// A request state that did not open. Every reason becomes the same client-facing error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OpenError {
    reason: Reason,
}

impl OpenError {
    /// Why, for server logs (which `Display` shows).
    #[cfg(test)]
    pub(crate) fn reason(&self) -> Reason {
        self.reason
    }

    /// The client-facing error, identical for every reason.
    #[allow(clippy::unused_self, reason = "the reason is deliberately not shown to the client")]
    pub(crate) fn to_error(&self) -> Error {
        Error::invalid_params(REJECTED)
    }
}

impl From<Reason> for OpenError {
    fn from(reason: Reason) -> Self {
        Self { reason }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request state rejected: {}", self.reason)
    }
}

impl std::error::Error for OpenError {}

/// A state could not be sealed: a server-side problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SealError {
    /// The token would exceed [`StateConfig::max_bytes`].
    TooLarge { token_len: usize, max_bytes: usize },
    /// The operating system's random number generator failed.
    Random,
}

impl SealError {
    /// The internal error sent to the client: what happened, never the sizes or the
    /// setting (those are for the server's log, see `Display`).
    pub(crate) fn to_error(&self) -> Error {
        Error::internal(match self {
            Self::TooLarge { .. } => "the request state grew too large to seal; start the call over",
            Self::Random => "cannot seal the request state",
        })
    }

    /// Logs the failure for the server's operator. A state too large comes from what the
    /// client sent (answers, arguments), so any client could write a WARN line per request:
    /// it is logged at DEBUG. A random source that fails is the server's problem: WARN.
    pub(crate) fn log(&self, target: &str) {
        match self {
            Self::TooLarge { .. } => tracing::debug!(target = target, error = %self, "cannot seal a request state"),
            Self::Random => tracing::warn!(target = target, error = %self, "cannot seal a request state"),
        }
    }
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { token_len, max_bytes } => write!(
                f,
                "request state too large: the sealed requestState would be {token_len} bytes, over the \
                 {max_bytes}-byte cap (StateConfig::max_bytes)"
            ),
            Self::Random => f.write_str("cannot seal the request state: the random number generator failed"),
        }
    }
}

impl std::error::Error for SealError {}
