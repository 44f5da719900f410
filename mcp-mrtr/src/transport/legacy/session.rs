//! One legacy session: what `initialize` negotiated, the bridge's requests waiting for
//! the client's answers, the client's requests in flight, the resources it subscribed to,
//! and how recently it was used.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::oneshot;

use super::subscribed::Subscribed;
use super::table::SessionLimits;
use crate::base::inflight::InFlight;
use crate::bounds::fair::ClientId;
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel, RequestId};
use crate::Error;

type Answer = Result<Value, Value>;

/// Who opens a session: the caller it is bound to (when one is known), and the client
/// whose share of the table and rate of opening it counts against.
#[derive(Clone, Debug)]
pub(crate) struct Opener {
    pub(crate) owner: Option<String>,
    pub(crate) client: ClientId,
}

/// One legacy client session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) version: String,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
    /// The caller who opened the session; only that caller may use it.
    pub(crate) owner: Option<String>,
    /// The client that opened it, whose share of the session table it counts against.
    pub(crate) client: ClientId,
    log_level: Mutex<Option<LoggingLevel>>,
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    /// The client's requests still running, for `notifications/cancelled`.
    pub(crate) in_flight: InFlight,
    next_id: AtomicU64,
    opened: Instant,
    /// Whether the client sent a request after `initialize` (a fresh session has not).
    used: AtomicBool,
    last_used: Mutex<Instant>,
    /// The resources the client subscribed to (`updates`), bounded in bytes (`subscribed`).
    subscriptions: Mutex<Subscribed>,
    /// Ends the stream of changes open now (an HTTP `GET`'s), when it is dropped; `None`
    /// once the session ended.
    stream: Mutex<Option<oneshot::Sender<()>>>,
}

impl Session {
    pub(crate) fn new(
        version: String,
        capabilities: ClientCapabilities,
        client_info: Option<Implementation>,
        opener: Opener,
        now: Instant,
    ) -> Result<Self, Error> {
        Ok(Self {
            id: random_id()?,
            version,
            capabilities,
            client_info,
            owner: opener.owner,
            client: opener.client,
            log_level: Mutex::new(None),
            waiting: Mutex::new(HashMap::new()),
            in_flight: InFlight::default(),
            next_id: AtomicU64::new(1),
            opened: now,
            used: AtomicBool::new(false),
            last_used: Mutex::new(now),
            subscriptions: Mutex::default(),
            stream: Mutex::new(Some(oneshot::channel().0)),
        })
    }

    /// Records a request (or an answer to the bridge) on the session: it is no longer
    /// fresh, and not idle since now.
    pub(crate) fn mark_used(&self) {
        self.touch(Instant::now());
    }

    pub(super) fn touch(&self, now: Instant) {
        self.used.store(true, Ordering::Relaxed);
        *lock(&self.last_used) = now;
    }

    /// No request since `initialize`.
    pub(super) fn is_fresh(&self) -> bool {
        !self.used.load(Ordering::Relaxed)
    }

    /// Used, and no request of it running now.
    pub(super) fn is_idle(&self) -> bool {
        !self.is_fresh() && self.in_flight.is_empty()
    }

    pub(super) fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    pub(super) fn opened(&self) -> Instant {
        self.opened
    }

    /// A fresh session past `fresh_timeout`, or an idle one past `idle_timeout`; a
    /// session with a request in flight never expires.
    pub(super) fn expired(&self, limits: &SessionLimits, now: Instant) -> bool {
        if self.is_fresh() {
            now.saturating_duration_since(self.opened) >= limits.fresh_timeout
        } else {
            self.is_idle() && now.saturating_duration_since(self.last_used()) >= limits.idle_timeout
        }
    }

    /// The level `logging/setLevel` chose; `None` until then.
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *lock(&self.log_level)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
    }

    /// The resources the client subscribed to. Change them through the table
    /// ([`Sessions::subscribe`](super::Sessions::subscribe)), which counts their bytes.
    pub(crate) fn subscriptions(&self) -> MutexGuard<'_, Subscribed> {
        lock(&self.subscriptions)
    }

    /// Opens the session's stream of changes: the one open before ends now, and this one
    /// ends (the future resolves) when a newer one opens or the session ends.
    pub(crate) fn open_stream(&self) -> impl std::future::Future<Output = ()> {
        let (tx, rx) = oneshot::channel();
        let mut stream = lock(&self.stream);
        if stream.is_some() {
            // Dropping the older sender ends the older stream.
            *stream = Some(tx);
        }
        async move {
            let _ = rx.await;
        }
    }

    /// Ends the session's stream of changes, and any it would open later.
    pub(crate) fn end(&self) {
        lock(&self.stream).take();
    }

    /// A fresh id for a server-to-client request, and where its answer will arrive.
    pub(crate) fn expect_answer(&self) -> (RequestId, oneshot::Receiver<Answer>) {
        let id = RequestId::from(i64::try_from(self.next_id.fetch_add(1, Ordering::Relaxed)).unwrap_or(i64::MAX));
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id.clone(), tx);
        (id, rx)
    }

    /// Hands the client's answer to whoever waits for it; `false` when nobody does.
    pub(crate) fn deliver(&self, id: &RequestId, answer: Answer) -> bool {
        match lock(&self.waiting).remove(id) {
            Some(waiter) => waiter.send(answer).is_ok(),
            None => false,
        }
    }

    /// Stops waiting for `id` (its request was abandoned); `false` if nobody waited.
    pub(crate) fn forget(&self, id: &RequestId) -> bool {
        lock(&self.waiting).remove(id).is_some()
    }
}

/// 128 random bits as hex: unguessable, and visible ASCII as the session header requires.
pub(super) fn random_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for an id: {e}")))?;
    Ok(crate::base::hex::encode(&bytes))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
