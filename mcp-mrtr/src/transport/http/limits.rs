//! [`Limits`]: every bound the HTTP transport puts on a client, in one place.
//!
//! The connection bounds (header deadline, write stall, connection cap, shutdown) are enforced by
//! the accept loop in `serve.rs`; the request bounds (body deadline, handler time and
//! count) by the endpoint itself, so a router mounted in another app keeps them.

use std::time::Duration;

use crate::legacy::SessionLimits;

/// The bounds that keep one client, or many, from holding a server's memory, sockets
/// or handlers indefinitely. Set them with [`HttpConfig::limits`](crate::HttpConfig::limits).
///
/// Every bound is on by default, with a value meant for production:
///
/// | setting | default | applies to |
/// |---|---|---|
/// | [`header_timeout`](Self::header_timeout) | 15 s | a connection waiting for request headers, idle keep-alive included |
/// | [`write_timeout`](Self::write_timeout) | 30 s | a response (an SSE stream, say) whose client stopped reading |
/// | [`max_connections`](Self::max_connections) | 512 | open connections; more are answered 503 and closed |
/// | [`body_timeout`](Self::body_timeout) | 30 s | reading one request body |
/// | [`handler_timeout`](Self::handler_timeout) | 60 s | one run of a handler; per tool with [`ToolRoute::timeout`](crate::ToolRoute::timeout) |
/// | [`max_handlers`](Self::max_handlers) | 256 | requests being handled at once; more get a busy answer |
/// | [`max_sessions`](Self::max_sessions) | 4,096 | open 2025-11-25 sessions; a full table makes room (below) |
/// | [`fresh_session_timeout`](Self::fresh_session_timeout) | 60 s | a session that sent no request after `initialize` |
/// | [`idle_session_timeout`](Self::idle_session_timeout) | 1 h | a used session with no request |
/// | [`max_calls_per_session`](Self::max_calls_per_session) | 16 | requests running at once on one session |
/// | [`shutdown_timeout`](Self::shutdown_timeout) | 10 s | requests in flight when a graceful shutdown starts |
///
/// A full session table never turns a new client away because of sessions that are
/// merely open: the oldest session that sent nothing after `initialize` makes room, else
/// the least recently used idle one; a session with a request in flight never does. A
/// flood of `initialize` therefore displaces only its own sessions (and at most one
/// session a client had used). The bridge's wait for answers is
/// [`Server::bridge_answer_timeout`](crate::Server::bridge_answer_timeout).
///
/// The first three, and the shutdown bound, belong to the listener: [`Server::serve_http`](crate::Server::serve_http)
/// applies them, and an app that mounts [`Server::into_router_with`](crate::Server::into_router_with)
/// gets them by serving through [`serve_router`](crate::serve_router). The others travel
/// with the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub(crate) header_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) body_timeout: Duration,
    pub(crate) handler_timeout: Option<Duration>,
    pub(crate) max_handlers: usize,
    pub(crate) sessions: SessionLimits,
    pub(crate) shutdown_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(15),
            write_timeout: Duration::from_secs(30),
            max_connections: 512,
            body_timeout: Duration::from_secs(30),
            handler_timeout: Some(Duration::from_secs(60)),
            max_handlers: 256,
            sessions: SessionLimits::default(),
            shutdown_timeout: crate::shutdown::DEFAULT_TIMEOUT,
        }
    }
}

impl Limits {
    /// How long a connection may take to send a request's headers, counted from when it
    /// opens or its previous response ends: it closes slow-header (slowloris) and idle
    /// keep-alive connections alike. Default 15 s.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// How long a response may wait for its client to read. Past it the connection is
    /// closed, which drops the stream and cancels its handler. Default 30 s.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// The most connections served at once. Past it a new connection gets a short HTTP
    /// 503 with `Retry-After` and is closed, rather than waiting unserved. Default 512,
    /// which stays under the common soft limit of 1,024 file descriptors.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// How long a request body may take to arrive in full: 1 MiB in 30 s is a pace of
    /// about 35 kB/s. A body still arriving then gets HTTP 408. Default 30 s.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long one run of a tool, prompt, resource or completion handler may take
    /// (time a legacy client spends answering questions between runs is not counted).
    /// Past it the request fails with `-32603` "timed out after …". `None` lets handlers
    /// run as long as they like. Default 60 s, the request timeout common clients use.
    pub fn handler_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.handler_timeout = timeout;
        self
    }

    /// The most requests handled at once. Past it a request is answered "busy": HTTP 503
    /// with `Retry-After` for 2026-07-28, a `-32603` error on HTTP 200 for legacy
    /// sessions. A legacy call waiting for its client's answers holds its slot; a
    /// `subscriptions/listen` stream does not (it holds a connection). Default 256.
    pub fn max_handlers(mut self, max: usize) -> Self {
        self.max_handlers = max;
        self
    }

    /// The most 2025-11-25 sessions open at once (default 4,096). Each holds about 1 kB
    /// plus what its client declared in `initialize` (at most 8 KiB).
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

    /// How long requests in flight get to finish once a graceful shutdown starts (see
    /// [`serve_router_with_shutdown`](crate::serve_router_with_shutdown)); past it they are
    /// cut: their connections close and their handlers are dropped. Default 10 s: most
    /// calls end well within it, and it leaves room under Kubernetes' default 30 s grace
    /// period (after which the process is killed) for a `preStop` pause while the load
    /// balancer stops sending, and for handing tasks back. A 2026-07-28 client whose round
    /// was cut sends it again, to any instance.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }
}
