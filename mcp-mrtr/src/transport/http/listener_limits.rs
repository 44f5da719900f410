//! [`ListenerLimits`]: the bounds the accept loop in `serve.rs` puts on connections, for
//! [`Http`](crate::http::Http) and [`serve_router`](crate::http::serve_router) alike.

use std::time::Duration;

/// The bounds on connections, applied by whatever accepts them: [`Http`](crate::http::Http)
/// (set with [`Http::limits`](crate::http::Http::limits)) or, for an app of your own,
/// [`serve_router`](crate::http::serve_router) (with
/// [`ServeRouter::limits`](crate::http::ServeRouter::limits)). The bounds on requests
/// travel with the endpoint: [`HttpLimits`](crate::http::HttpLimits).
///
/// | setting | default | applies to |
/// |---|---|---|
/// | [`header_timeout`](Self::header_timeout) | 15 s | a connection waiting for request headers, idle keep-alive included |
/// | [`write_timeout`](Self::write_timeout) | 30 s | a response (an SSE stream, say) whose client stopped reading |
/// | [`max_connections`](Self::max_connections) | ¾ of the open-files limit, at most 8,192 | open connections; past it the least valuable one is closed (below) |
/// | [`shutdown_timeout`](Self::shutdown_timeout) | 10 s | requests in flight when a graceful shutdown starts |
///
/// A connection past `max_connections` is not refused while another can give way: the
/// one that has sent no complete request for the longest goes first (a slow-header
/// client), then the longest-idle keep-alive one, then the oldest listen stream of the
/// client holding the most connections. A connection running a request that works is
/// never closed for room; the newcomer gets 503 only when every connection works and no
/// client holds much more than its own. When serving starts, the process's soft
/// open-files limit is raised to its hard limit (as Go's runtime and most servers do), and the
/// default cap is derived from it.
///
/// ```no_run
/// use std::time::Duration;
///
/// use mcp_mrtr::http::{Http, ListenerLimits};
/// use mcp_mrtr::Server;
///
/// # async fn run() -> Result<(), mcp_mrtr::serve::ServeError> {
/// // Well inside Kubernetes' 30 s grace period.
/// let limits = ListenerLimits::default().max_connections(2000).shutdown_timeout(Duration::from_secs(20));
/// Server::new("app", "1.0.0").serve(Http::bind("0.0.0.0:3000").limits(limits)).await
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenerLimits {
    pub(crate) header_timeout: Duration,
    pub(crate) write_timeout: Duration,
    /// `None`: derived from the open-files limit when serving starts.
    pub(crate) max_connections: Option<usize>,
    pub(crate) shutdown_timeout: Duration,
}

impl Default for ListenerLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(15),
            write_timeout: Duration::from_secs(30),
            max_connections: None,
            shutdown_timeout: crate::bounds::shutdown::DEFAULT_TIMEOUT,
        }
    }
}

impl ListenerLimits {
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

    /// The most connections served at once. Past it a new connection is served by
    /// closing the least valuable open one (see above); only when none may give way does
    /// it get a short HTTP 503 with `Retry-After` and close, rather than wait unserved.
    ///
    /// Default: three quarters of the process's open-files limit (raised to its hard
    /// limit when serving starts), leaving the rest for files, Redis and outgoing calls,
    /// and at most 8,192: a connection holds about 21 KiB (measured, idle or mid-header), so
    /// 170 MB at the cap.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = Some(max);
        self
    }

    /// The connection cap in force: the one set, or the default derived from the
    /// open-files limit (raised first).
    pub(crate) fn connection_cap(&self) -> usize {
        self.max_connections.unwrap_or_else(|| {
            let open_files = super::open_files::raise_limit();
            usize::try_from(open_files.saturating_sub(64) / 4 * 3).unwrap_or(usize::MAX).clamp(64, 8_192)
        })
    }

    /// How long requests in flight get to finish once a graceful shutdown starts (see
    /// [`ServeRouter::with_graceful_shutdown`](crate::http::ServeRouter::with_graceful_shutdown)); past it they are
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
