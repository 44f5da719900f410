//! The bounds on legacy sessions: how many, how long they live, how fast a client opens
//! them, and what their bridge waits and subscriptions may hold. A leaf: the table and
//! each session read them.

use std::time::Duration;

/// The bounds on legacy sessions (from [`HttpLimits`](crate::http::HttpLimits) on HTTP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SessionLimits {
    /// Sessions open at once.
    pub(crate) max_sessions: usize,
    /// How long a session that sent nothing after `initialize` lives.
    pub(crate) fresh_timeout: Duration,
    /// How long a used session lives without a request (none in flight).
    pub(crate) idle_timeout: Duration,
    /// Requests running at once on one session.
    pub(crate) max_calls: usize,
    /// Sessions one client may open a minute, on average.
    pub(crate) opening_per_minute: u32,
    /// Sessions one client may open at once before the rate applies.
    pub(crate) opening_burst: u32,
    /// Calls whose bridge waits for their client's answers, at once.
    pub(crate) max_bridge_waits: usize,
    /// Of those, how many one client may hold.
    pub(crate) max_bridge_waits_per_client: usize,
    /// Bytes of resource subscriptions every session keeps together (`subscribed::cost`).
    pub(crate) max_subscription_bytes: usize,
    /// Of those, how many one client's sessions keep together.
    pub(crate) max_subscription_bytes_per_client: usize,
    /// Of those, how many one session keeps.
    pub(crate) max_subscription_bytes_per_session: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: 4096,
            fresh_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(3600),
            max_calls: 16,
            opening_per_minute: 60,
            opening_burst: 64,
            max_bridge_waits: 256,
            max_bridge_waits_per_client: 32,
            max_subscription_bytes: 32 << 20,
            max_subscription_bytes_per_client: 1 << 20,
            max_subscription_bytes_per_session: 128 << 10,
        }
    }
}
