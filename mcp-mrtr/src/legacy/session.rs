//! Legacy sessions: what `initialize` negotiated, and the bridge's requests waiting for
//! the client's answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::inflight::InFlight;
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel, RequestId};
use crate::Error;

/// Open sessions beyond which `initialize` is refused: each holds a little memory until
/// its client deletes it or it idles out.
const MAX_SESSIONS: usize = 4096;
/// A session unused for this long is forgotten (its client must initialize again).
const IDLE_TIMEOUT: Duration = Duration::from_secs(3600);

type Answer = Result<Value, Value>;

/// One legacy client session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) version: String,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
    /// The caller who opened the session; only that caller may use it.
    pub(crate) owner: Option<String>,
    log_level: Mutex<Option<LoggingLevel>>,
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    /// The client's requests still running, for `notifications/cancelled`.
    pub(crate) in_flight: InFlight,
    next_id: AtomicU64,
    last_used: Mutex<Instant>,
}

impl Session {
    /// The level `logging/setLevel` chose; `None` until then.
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *lock(&self.log_level)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
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

/// The open sessions of one endpoint.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    open: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    pub(crate) fn open(
        &self,
        version: String,
        capabilities: ClientCapabilities,
        client_info: Option<Implementation>,
        owner: Option<String>,
    ) -> Result<Arc<Session>, Error> {
        let mut open = lock(&self.open);
        open.retain(|_, session| lock(&session.last_used).elapsed() < IDLE_TIMEOUT);
        if open.len() >= MAX_SESSIONS {
            return Err(Error::internal("too many open sessions; close one with DELETE and retry"));
        }
        let session = Arc::new(Session {
            id: random_id()?,
            version,
            capabilities,
            client_info,
            owner,
            log_level: Mutex::new(None),
            waiting: Mutex::new(HashMap::new()),
            in_flight: InFlight::default(),
            next_id: AtomicU64::new(1),
            last_used: Mutex::new(Instant::now()),
        });
        open.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let session = lock(&self.open).get(id).cloned()?;
        *lock(&session.last_used) = Instant::now();
        Some(session)
    }

    /// Ends a session; its requests still running are cancelled, as if the client had
    /// cancelled each.
    pub(crate) fn close(&self, id: &str) -> bool {
        let Some(session) = lock(&self.open).remove(id) else { return false };
        session.in_flight.cancel_all();
        true
    }
}

/// 128 random bits as hex: unguessable, and visible ASCII as the session header requires.
pub(super) fn random_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for an id: {e}")))?;
    Ok(format!("{:032x}", u128::from_be_bytes(bytes)))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
