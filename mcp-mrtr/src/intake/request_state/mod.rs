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
// - [`StateConfig`]: keys, lifetime (default 10 minutes), size cap (default 64 KiB) and
//   the guard. Without keys given, the environment's (or a random key of the server's
//   own) are resolved when serving starts, into a `Sealer`.
// - [`StateGuard`] and [`MemoryGuard`] (in `guard`): which states were claimed already.
// - `Presented` (in `presented`): a client's state, checked and decoded; `SingleUse`:
//   its claim, made only by a round about to take a `once!` step.
// - The crate-private entry points `Sealer::seal` and `Sealer::open`, which
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
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime};

/// The future a [`StateGuard`] returns (a re-export of `futures_util`'s), so a guard of your
/// own needs no other crate to name it.
pub use futures_util::future::BoxFuture;
pub use guard::{Claim, Consumed, MemoryGuard, StateGuard};
pub use keys::{KeyError, KeyRing, StateKey};
pub(crate) use presented::{Presented, SingleUse};

use crate::base::error::Error;
use crate::bounds::fair::ClientId;

/// The one message a client sees for any state that does not open.
const REJECTED: &str = "Invalid requestState: it is tampered, expired, or belongs to another request";

/// What a client sees for an authentic state whose step another state of the same call
/// took already (or may have: the guard's memory began after it was sealed). Only the
/// client the state was sealed for can hold it, so saying it opened tells nobody else
/// anything; an honest client that lost a reply learns what to do.
const USED: &str =
    "Invalid requestState: this step of the call was taken already, or may have been; start the call over";

/// The request state as one value: how states are sealed (keys, lifetime, size cap,
/// whether the previous release's `v2` states still open) and how a round that takes a
/// `once!` step makes its state single-use (the guard).
///
/// ```
/// use std::time::Duration;
///
/// use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
/// use mcp_mrtr::Server;
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
///
/// [`StateConfig::default()`] leaves the keys to the environment, read when serving
/// starts: `MCP_MRTR_STATE_KEYS` when it is set, or else a random key of this server's own
/// (announced once on stderr), so a server configured only for its guard or lifetime
/// still takes its keys from where the deployment puts them.
#[derive(Clone)]
pub struct StateConfig {
    /// `None`: the environment's, or a random key, resolved when serving starts.
    keys: Option<KeyRing>,
    ttl: Duration,
    call_lifetime: Duration,
    max_bytes: usize,
    accept_v2: bool,
    /// `None`: states may be presented again, `once!` steps included ([`StateConfig::reusable`]).
    guard: Option<Arc<dyn StateGuard>>,
    /// Whether the guard is a [`MemoryGuard`]: its claims are this process's alone.
    guard_in_memory: bool,
}

impl Default for StateConfig {
    /// Keys from the environment when serving starts; states live 10 minutes and a call's
    /// states at most an hour from its first, tokens are at most 64 KiB, `v2` states still open, and claims are kept in a [`MemoryGuard`].
    fn default() -> Self {
        Self {
            keys: None,
            ttl: Duration::from_secs(10 * 60),
            call_lifetime: Duration::from_secs(60 * 60),
            max_bytes: 64 * 1024,
            accept_v2: true,
            guard: Some(Arc::new(MemoryGuard::new())),
            guard_in_memory: true,
        }
    }
}

impl fmt::Debug for StateConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateConfig")
            .field("keys", &self.keys)
            .field("ttl", &self.ttl)
            .field("call_lifetime", &self.call_lifetime)
            .field("max_bytes", &self.max_bytes)
            .field("accept_v2", &self.accept_v2)
            .field("single_use", &self.guard.is_some())
            .field("guard_in_memory", &self.guard_in_memory)
            .finish()
    }
}

impl StateConfig {
    /// Seals with `keys`, with every other setting at its [default](StateConfig::default).
    pub fn new(keys: KeyRing) -> Self {
        Self { keys: Some(keys), ..Self::default() }
    }

    /// How long a sealed state stays valid, to the millisecond. Lifetimes past the year
    /// 9999 are cut there.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long after its first state was sealed any state of a call still opens (default
    /// an hour). Each state lives [`ttl`](Self::ttl), and a round answered in time seals
    /// a fresh one, so without this bound a call could be kept going for good; the
    /// single-use guard keeps each step's claim until the call's end, so that no state of
    /// the call, however late it was sealed, can take the step again. A longer lifetime
    /// lets people take longer over a call with many questions, and keeps each claim
    /// longer (work that takes hours belongs in a task).
    pub fn call_lifetime(mut self, lifetime: Duration) -> Self {
        self.call_lifetime = lifetime;
        self
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

    /// Remembers claimed states with `guard` instead of the default [`MemoryGuard`]: a
    /// round claims its request state before its first `once!` step runs, and a second
    /// claim of the same state is refused like a tampered state (rounds that take no step
    /// claim nothing). `MemoryGuard` serves one instance; several instances behind a load
    /// balancer need a [`StateGuard`] backed by a store they share (the `redis` feature's
    /// `RedisGuard`), or a state could be replayed once on each.
    pub fn single_use<G: StateGuard>(mut self, guard: G) -> Self {
        self.guard_in_memory = std::any::TypeId::of::<G>() == std::any::TypeId::of::<MemoryGuard>();
        self.guard = Some(Arc::new(guard));
        self
    }

    /// `true` lets a round take its `once!` steps however often its request state is
    /// presented within its lifetime: a client replaying an older state runs that round's
    /// steps again. Only for servers whose steps are harmless to re-run. (Rounds without a
    /// `once!` step may be presented again either way.) `false` (the default) makes
    /// states single-use, with the guard given to [`single_use`](Self::single_use) or
    /// else a [`MemoryGuard`].
    pub fn reusable(mut self, reusable: bool) -> Self {
        if reusable {
            self.guard = None;
            self.guard_in_memory = false;
        } else if self.guard.is_none() {
            self.guard = Some(Arc::new(MemoryGuard::new()));
            self.guard_in_memory = true;
        }
        self
    }

    /// Keys from `MCP_MRTR_STATE_KEYS` when it is set; otherwise a fresh random key, with a
    /// warning (once per process: in the log, or on stderr without a tracing subscriber)
    /// that states then open only on this server, until it restarts. This reads the
    /// environment now; [`StateConfig::default()`] reads it when serving starts.
    ///
    /// A malformed `MCP_MRTR_STATE_KEYS` is an error: serving with the wrong keys would
    /// silently reject every state.
    pub fn from_env_or_random() -> Result<Self, KeyError> {
        Ok(Self::new(keys_from_env_or_random(Reach::Instances)?))
    }

    /// These settings, sealing with `keys`.
    pub(crate) fn keys(mut self, keys: KeyRing) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Whether the keys were given (rather than left to the environment).
    pub(crate) fn has_keys(&self) -> bool {
        self.keys.is_some()
    }

    /// Whether states open on other processes (keys given, or from the environment) while
    /// the guard keeps its claims in this one's memory: then a `once!` step can be taken
    /// once per process.
    pub(crate) fn guard_narrower_than_keys(&self) -> bool {
        self.guard_in_memory && (self.keys.is_some() || std::env::var_os(keys::KEYS_ENV).is_some())
    }

    /// The guard that makes states single-use, unless they are [reusable](Self::reusable).
    pub(crate) fn guard(&self) -> Option<Arc<dyn StateGuard>> {
        self.guard.clone()
    }

    /// What seals and opens: these settings with their keys resolved (the environment's,
    /// or a random key, when none were given).
    pub(crate) fn sealer(&self) -> Result<Sealer, KeyError> {
        self.sealer_for(Reach::Instances)
    }

    /// [`sealer`](Self::sealer), saying that a random key was drawn only where it matters:
    /// where a state may travel to another instance (`reach`).
    pub(crate) fn sealer_for(&self, reach: Reach) -> Result<Sealer, KeyError> {
        let keys = match &self.keys {
            Some(keys) => keys.clone(),
            None => keys_from_env_or_random(reach)?,
        };
        Ok(Sealer {
            keys,
            ttl: self.ttl,
            call_lifetime: self.call_lifetime,
            max_bytes: self.max_bytes,
            accept_v2: self.accept_v2,
        })
    }
}

/// For `benches/state.rs` (through `__private`): a seal and open round trip under
/// `config` (both are crate-private). Returns the opened payload's length.
///
/// # Panics
///
/// If the keys do not resolve or the payload does not fit the cap.
pub(crate) fn bench_seal_open(config: &StateConfig, payload: &[u8]) -> usize {
    let sealer = config.sealer().expect("the bench's keys resolve");
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
    let token = sealer.seal(&binding, payload, now).expect("the bench payload fits the cap");
    sealer.open(&token, &binding, now).map_or(0, |(opened, _)| opened.len())
}

/// For `benches/state.rs` (through `__private`): the binding digest alone, the part
/// of every seal and open that grows with the call's arguments.
pub(crate) fn bench_binding_digest(arguments: &serde_json::Value) -> [u8; 32] {
    let arguments = arguments.as_object();
    Binding { server: "bench", method: "tools/call", target: "bench", arguments, principal: None }.digest().0
}

/// Where the states a server seals may be presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// To whichever instance a load balancer picks, or to this one after a restart (HTTP):
    /// a random key breaks calls, and is worth a warning.
    Instances,
    /// Only back to this process, by the one client it serves (stdio: a host starts a
    /// process per session, and a new process is a new session): a random key costs
    /// nothing, and a warning at every start would be noise in the host's log.
    ThisProcess,
}

/// Warns when `config`'s states open on other processes ([`StateConfig::guard_narrower_than_keys`])
/// and serving reaches them: a function's containers, or a non-loopback address (`reached`
/// says which). A `once!` step would then run once per process, silently.
pub(crate) fn warn_if_guard_per_process(config: &StateConfig, reached: &str) {
    if config.guard_narrower_than_keys() {
        tracing::warn!(
            "request states open on every process that has these keys ({reached}), but the single-use guard is \
             this process's memory (MemoryGuard): a once! step may be taken once per process; give every instance \
             one guard they share (the redis feature: StateConfig::default().single_use(redis.state_guard()))"
        );
    }
}

/// The environment's keys, or a random key (announced once, where it matters).
fn keys_from_env_or_random(reach: Reach) -> Result<KeyRing, KeyError> {
    if let Some(keys) = KeyRing::from_env()? {
        return Ok(keys);
    }
    match reach {
        Reach::Instances => announce_random_key(),
        Reach::ThisProcess => tracing::debug!("request states are sealed with a random key: one process, one client"),
    }
    Ok(KeyRing::new(StateKey::random()))
}

/// A [`StateConfig`]'s sealing settings with the keys resolved: what seals and opens.
#[derive(Clone, Debug)]
pub(crate) struct Sealer {
    keys: KeyRing,
    ttl: Duration,
    call_lifetime: Duration,
    max_bytes: usize,
    accept_v2: bool,
}

impl Sealer {
    /// The keys: what every instance of the server shares, so other shared secrets (the
    /// change fanout's) derive from them too.
    pub(crate) fn ring(&self) -> &KeyRing {
        &self.keys
    }

    /// The number `client` is counted under in the single-use guard, sealed into the
    /// states of the calls it starts: keyed from the sealing key, so every instance
    /// sharing the ring (and so, the guard) counts one client as one. A rotation gives the
    /// calls started after it new numbers; calls started before keep theirs.
    pub(crate) fn owner_of(&self, client: &ClientId) -> u32 {
        client.owner_key(self.keys.current().guard_owner_key())
    }

    /// How long a state opens after it is sealed.
    pub(crate) fn lifetime(&self) -> Duration {
        self.ttl
    }

    /// How long a call's states open after its first was sealed.
    pub(crate) fn call_lifetime(&self) -> Duration {
        self.call_lifetime
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
            // What a state carries, so the handler's author sees what to shrink (a once!
            // step that keeps records rather than their ids fails again on a new call).
            Self::TooLarge { .. } => {
                "the request state grew too large to seal (it carries the call's arguments, answers and \
                 once! results: keep those small); start the call over"
            }
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
