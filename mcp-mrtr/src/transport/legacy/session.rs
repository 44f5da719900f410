//! One legacy session: what `initialize` negotiated, the bridge's requests waiting for
//! the client's answers, the client's requests in flight, the resources it subscribed to,
//! and how recently it was used.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::oneshot;

use super::limits::SessionLimits;
use super::subscribed::Subscribed;
use crate::base::error::Error;
use crate::base::inflight::InFlight;
use crate::bounds::fair::{ClientId, Release};
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel, RequestId};

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
    /// The stream of changes open now (an HTTP `GET`'s); `None` once the session ended.
    stream: Mutex<Option<OpenStream>>,
}

/// A session's stream of changes, as the session holds it: what ends it, and what frees
/// its place among the streams (a session holds one place).
#[derive(Debug, Default)]
struct OpenStream {
    /// Ends the stream when dropped.
    _end: Option<oneshot::Sender<()>>,
    place: Option<Release>,
}

impl OpenStream {
    /// Ends the stream and frees its place now, while the stream itself still ends.
    fn close(self) {
        if let Some(place) = self.place {
            place.release();
        }
    }
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
            stream: Mutex::new(Some(OpenStream::default())),
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

    /// Ends the session's stream of changes open now, if any, and frees its place at once:
    /// called before a newer stream is admitted, which then takes that place (the sixth
    /// audit's E6: a client at its share of streams reconnecting its `GET` was refused
    /// while its old stream was still thought alive).
    pub(crate) fn end_stream(&self) {
        if let Some(open) = lock(&self.stream).as_mut() {
            std::mem::take(open).close();
        }
    }

    /// Opens the session's stream of changes, whose place `place` frees early: the one open
    /// before ends now (and frees its place), and this one ends (the future resolves) when
    /// a newer one opens or the session ends.
    pub(crate) fn open_stream(&self, place: Release) -> impl std::future::Future<Output = ()> {
        let (tx, rx) = oneshot::channel();
        let mut stream = lock(&self.stream);
        if let Some(open) = stream.as_mut() {
            // Dropping the older sender ends the older stream.
            std::mem::replace(open, OpenStream { _end: Some(tx), place: Some(place) }).close();
        }
        async move {
            let _ = rx.await;
        }
    }

    /// Ends the session's stream of changes, and any it would open later.
    pub(crate) fn end(&self) {
        if let Some(open) = lock(&self.stream).take() {
            open.close();
        }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bounds::fair::{FairPool, Refused};
    use crate::transport::legacy::LATEST;

    #[tokio::test]
    async fn a_newer_stream_takes_over_the_place_of_the_older_which_ends() {
        let (pool, client) = (FairPool::new(4, 1), ClientId::loopback(1));
        let opener = Opener { owner: None, client: client.clone() };
        let session = Session::new(LATEST.into(), ClientCapabilities::default(), None, opener, Instant::now()).unwrap();
        let older = pool.admit(&client).unwrap();
        let older_ended = session.open_stream(older.release_early());
        assert_eq!(pool.admit(&client).unwrap_err(), Refused::Share);

        session.end_stream();
        let newer = pool.admit(&client).expect("the older stream's place is free once it is told to end");
        tokio::time::timeout(Duration::from_secs(1), older_ended).await.expect("the older stream ends");
        let newer_ended = session.open_stream(newer.release_early());
        drop(older);
        assert_eq!(pool.held_by(&client), 1, "the older stream's end frees nothing more");

        session.end();
        assert_eq!(pool.len(), 0, "the session's end frees its stream's place at once");
        tokio::time::timeout(Duration::from_secs(1), newer_ended)
            .await
            .expect("the newer stream ends with the session");
    }
}
