//! [`HttpLimits`]: every bound the HTTP endpoint puts on a client's requests, in one place.
//! They travel with the endpoint (in [`HttpConfig`](crate::http::HttpConfig)), so a router
//! mounted in another app keeps them; the listener's own bounds are
//! [`ListenerLimits`](crate::http::ListenerLimits).

use std::time::Duration;

use crate::transport::legacy::SessionLimits;

/// The bounds that keep one client, or many, from holding a server's handlers, sessions
/// or memory indefinitely. Set them with [`HttpConfig::limits`](crate::http::HttpConfig::limits);
/// the bounds on connections (header deadline, write stall, connection cap, shutdown) are
/// the listener's: [`ListenerLimits`](crate::http::ListenerLimits).
///
/// Every bound is on by default, with a value meant for production:
///
/// | setting | default | applies to |
/// |---|---|---|
/// | [`body_timeout`](Self::body_timeout) | 30 s | reading one request body |
/// | [`max_handlers`](Self::max_handlers) | 256 | requests being handled at once; more get a busy answer |
/// | [`max_handlers_per_client`](Self::max_handlers_per_client) | a quarter of `max_handlers` | such requests of one client; when all are taken, the client running the most gives way |
/// | [`max_sessions`](Self::max_sessions) | 4,096 | open 2025-11-25 sessions; a full table makes room (below) |
/// | [`fresh_session_timeout`](Self::fresh_session_timeout) | 60 s | a session that sent no request after `initialize` |
/// | [`idle_session_timeout`](Self::idle_session_timeout) | 1 h | a used session with no request |
/// | [`max_calls_per_session`](Self::max_calls_per_session) | 16 | requests running at once on one session |
/// | [`session_opening_rate`](Self::session_opening_rate) | 60 a minute, bursts of 64 | sessions one client opens; past it `initialize` gets 429 with `Retry-After` |
/// | [`max_bridge_waits`](Self::max_bridge_waits) | 256 | 2025-11-25 calls waiting for their client's answers (they hold no handler slot); a full pool makes room (below) |
/// | [`max_bridge_waits_per_client`](Self::max_bridge_waits_per_client) | 32 | such calls of one client; past it a call that asks fails with a clear error |
/// | [`max_subscription_bytes`](Self::max_subscription_bytes) | 32 MiB | resource subscriptions every session keeps together; when full, a heavier client's session is closed (below) |
/// | [`max_subscription_bytes_per_client`](Self::max_subscription_bytes_per_client) | 1 MiB | such bytes of one client's sessions together |
/// | [`max_subscription_bytes_per_session`](Self::max_subscription_bytes_per_session) | 128 KiB | such bytes of one session |
///
/// A full session table never turns a new client away because of sessions that are
/// merely open, and never takes a session from a client holding few: room is made by the
/// client holding the most sessions (the newcomer counted with the one it opens), from
/// its oldest session that sent nothing after `initialize`, else its least recently used
/// idle one; a client holding fewer than the newcomer would never gives one up, and a
/// session with a request in flight never does. A flood of `initialize`, with or without
/// requests on each session, therefore displaces only its own sessions, and
/// [`session_opening_rate`](Self::session_opening_rate) slows it down. Who a client is:
/// the authenticated [`Caller`](crate::Caller), else its address (see
/// [`HttpConfig::trust_forwarded_for`](crate::http::HttpConfig::trust_forwarded_for)). Only
/// clients that each hold no more sessions than the newcomer would (say, a table full of
/// clients holding one each) lose their least recently used one to it.
///
/// A 2025-11-25 call whose handler asks waits for the client's answers (up to
/// [`Server::bridge_answer_timeout`](crate::Server::bridge_answer_timeout), 5 min by
/// default) without a handler slot: it gives its slot back, holds a place among the
/// [`max_bridge_waits`](Self::max_bridge_waits), and takes a slot again (waiting up to
/// 10 s for one) to run its next round. When that pool is full, the client holding the
/// most waits gives way: its oldest wait ends with a JSON-RPC error saying so, and its
/// questions are withdrawn with `notifications/cancelled`. A newcomer is refused only when
/// no client holds more than one wait beyond what the newcomer would.
///
/// A 2025-11-25 session keeps the resources it subscribed to for its life. It subscribes
/// only to what a resource or template of the server serves it (`resources/read`'s
/// decision: anything else is `-32602`), by URIs of at most 2 KiB, and each subscription
/// counts its URI's bytes plus 64 against the session, against its client's share of every
/// session's, and against the total; past the session's or the client's bound
/// `resources/subscribe` is refused with `-32602` saying which. When the total is full, the
/// client holding the most gives way, as for sessions: an expired session holding
/// subscriptions first, else that client's session holding the most, with no request
/// running, is closed (its client starts over); a newcomer is refused (`-32603`) only when
/// nobody holds more than it would.
///
/// ```
/// use mcp_mrtr::http::{HttpConfig, HttpLimits};
///
/// // The tools call a slow backend.
/// let limits = HttpLimits::default().max_handlers(64).max_handlers_per_client(8);
/// let config = HttpConfig::default().limits(limits);
/// # let _ = config;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    pub(crate) body_timeout: Duration,
    pub(crate) max_handlers: usize,
    /// `None`: a quarter of `max_handlers`.
    pub(crate) max_handlers_per_client: Option<usize>,
    pub(crate) sessions: SessionLimits,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            body_timeout: Duration::from_secs(30),
            max_handlers: 256,
            max_handlers_per_client: None,
            sessions: SessionLimits::default(),
        }
    }
}

impl HttpLimits {
    /// How long a request body may take to arrive in full: 1 MiB in 30 s is a pace of
    /// about 35 kB/s. A body still arriving then gets HTTP 408. Default 30 s.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// The most requests handled at once. Past it a request is answered "busy": HTTP 503
    /// with `Retry-After` for 2026-07-28, a `-32603` error on HTTP 200 for legacy
    /// sessions. A legacy call waiting for its client's answers does not hold a slot (it
    /// holds a place among the [`max_bridge_waits`](Self::max_bridge_waits)), nor does
    /// a `subscriptions/listen` stream (it holds a connection). Default 256.
    pub fn max_handlers(mut self, max: usize) -> Self {
        self.max_handlers = max;
        self
    }

    /// The most 2026-07-28 requests of one client handled at once (default a quarter of
    /// [`max_handlers`](Self::max_handlers), 64): past it that client's requests get the
    /// busy answer while others' are served. When every slot is taken and another client
    /// runs more than one request beyond what the newcomer's would, that client's oldest
    /// request ends with a `-32603` "server busy … make room" error and the newcomer runs;
    /// the newcomer is refused only when nobody runs much more than its client. A client
    /// is the authenticated caller, else its address: behind a proxy, see
    /// [`HttpConfig::trust_forwarded_for`](crate::http::HttpConfig::trust_forwarded_for), or the
    /// whole proxy gets one share.
    pub fn max_handlers_per_client(mut self, max: usize) -> Self {
        self.max_handlers_per_client = Some(max);
        self
    }

    /// The per-client share of handler slots in force.
    pub(crate) fn handler_share(&self) -> usize {
        self.max_handlers_per_client.unwrap_or((self.max_handlers / 4).max(1))
    }

    /// The most 2025-11-25 sessions open at once (default 4,096). Each holds about 1 kB
    /// plus what its client declared in `initialize` (at most 8 KiB): about 4 MB at the
    /// cap, 37 MB if every client declared the most. A full table makes room from the
    /// client holding the most sessions (see above).
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.sessions.max_sessions = max;
        self
    }

    /// How long a session lives that sent no request after `initialize` (default 60 s),
    /// so a flood of `initialize` clears itself.
    pub fn fresh_session_timeout(mut self, timeout: Duration) -> Self {
        self.sessions.fresh_timeout = timeout;
        self
    }

    /// How long a used session lives without a request (default 1 h); its client then
    /// gets 404 and initializes again.
    pub fn idle_session_timeout(mut self, timeout: Duration) -> Self {
        self.sessions.idle_timeout = timeout;
        self
    }

    /// The most requests running at once on one session (default 16); past it a request
    /// gets a `-32603` error on HTTP 200, so one session cannot take every handler slot.
    pub fn max_calls_per_session(mut self, max: usize) -> Self {
        self.sessions.max_calls = max;
        self
    }

    /// How fast one client may open 2025-11-25 sessions: `burst` at once, then
    /// `per_minute` on average. Past it `initialize` gets HTTP 429 with `Retry-After` and
    /// a JSON-RPC error naming the wait (`data.retryAfterSeconds`); its other sessions are
    /// untouched.
    ///
    /// Default 60 a minute, bursts of 64. A client needs one session, and a new one only
    /// when its old one ends; 64 at once lets an office behind one address start up
    /// together, and one a second sustains reconnects, while a flood that opened 4,100
    /// sessions in 2 s now gets 66 of them. Each client that opened a session in the last minute
    /// or so takes about 100 bytes to track: 400 kB at 4,096 clients, past which full
    /// buckets are swept out.
    pub fn session_opening_rate(mut self, per_minute: u32, burst: u32) -> Self {
        self.sessions.opening_per_minute = per_minute;
        self.sessions.opening_burst = burst;
        self
    }

    /// The most 2025-11-25 calls waiting at once for their client's answers, across every
    /// session (default 256). Such a call holds no handler slot while it waits, so this
    /// pool, not [`max_handlers`](Self::max_handlers), bounds them; when it is full, the
    /// client holding the most waits gives one up (see above).
    ///
    /// 256 answers as many waiting people as the default handler slots serve at once. A
    /// wait holds its call's arguments, the answers gathered so far, and its open stream
    /// and connection: typically 10 to 20 kB, so about 5 MB at the cap. Arguments and
    /// answers are each at most one request body ([`HttpConfig::max_body_bytes`](crate::http::HttpConfig::max_body_bytes)):
    /// callers sending the largest arguments allowed add 1 MiB per wait, 256 MiB at the cap.
    pub fn max_bridge_waits(mut self, max: usize) -> Self {
        self.sessions.max_bridge_waits = max;
        self
    }

    /// The most calls waiting for answers that one client may hold (default 32, at most
    /// [`max_bridge_waits`](Self::max_bridge_waits)). Past it a call whose handler asks
    /// fails with a JSON-RPC error before anything is asked, and the client's other calls
    /// go on. 32 is more forms than a person fills in at once, even for an office behind
    /// one address, and leaves the pool to at least 8 clients.
    pub fn max_bridge_waits_per_client(mut self, max: usize) -> Self {
        self.sessions.max_bridge_waits_per_client = max;
        self
    }

    /// The most bytes of resource subscriptions every 2025-11-25 session keeps together
    /// (default 32 MiB: what they cost in memory, about). A subscription counts its URI's
    /// bytes plus 64 for keeping it. When the total is full, a client holding more than the
    /// newcomer would gives way (see above).
    pub fn max_subscription_bytes(mut self, max: usize) -> Self {
        self.sessions.max_subscription_bytes = max;
        self
    }

    /// The most bytes of resource subscriptions one client's sessions keep together
    /// (default 1 MiB, at most [`max_subscription_bytes`](Self::max_subscription_bytes)),
    /// however many sessions it opens: past it that client's `resources/subscribe` is
    /// refused with `-32602`. A host subscribes to a handful of resources, a few kB; 1 MiB
    /// is hundreds of such sessions behind one address, and 32 clients at their share fill
    /// the total.
    pub fn max_subscription_bytes_per_client(mut self, max: usize) -> Self {
        self.sessions.max_subscription_bytes_per_client = max;
        self
    }

    /// The most bytes of resource subscriptions one session keeps (default 128 KiB):
    /// past it `resources/subscribe` is refused with `-32602`. 128 KiB holds the 1,024
    /// subscriptions [`Subscriptions::max_resource_subscriptions`](crate::catalog::Subscriptions::max_resource_subscriptions)
    /// allows a session, of URIs up to 64 bytes, or 62 of the longest (2 KiB).
    pub fn max_subscription_bytes_per_session(mut self, max: usize) -> Self {
        self.sessions.max_subscription_bytes_per_session = max;
        self
    }
}
