//! The table of open legacy sessions, and who makes room when it is full.
//!
//! `initialize` needs no credential, so anyone can open sessions by the thousand. A
//! session is *fresh* until its client sends anything after `initialize`: a flood makes
//! only fresh sessions, and fresh sessions are the first to go, oldest first, and expire
//! on their own after [`SessionLimits::fresh_timeout`]. Only when none is left does the
//! least recently used idle session make room; a session with a request in flight never
//! does. So a flood of `initialize` can push out at most one session that a client has
//! used, and a new client always gets a session unless every one is busy.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::Session;
use crate::protocol::{ClientCapabilities, Implementation};
use crate::Error;

/// The bounds on legacy sessions (from [`Limits`](crate::Limits) on HTTP).
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
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: 4096,
            fresh_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(3600),
            max_calls: 16,
        }
    }
}

/// The open sessions of one endpoint.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    table: Mutex<Table>,
    limits: SessionLimits,
}

impl Sessions {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        Self { table: Mutex::default(), limits }
    }

    pub(crate) fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    /// Opens a session, making room if the table is full; `Err` only when every open
    /// session has a request in flight.
    pub(crate) fn open(
        &self,
        version: String,
        capabilities: ClientCapabilities,
        client_info: Option<Implementation>,
        owner: Option<String>,
    ) -> Result<Arc<Session>, Error> {
        let now = Instant::now();
        let session = Arc::new(Session::new(version, capabilities, client_info, owner, now)?);
        self.table().insert(session.clone(), &self.limits, now)?;
        Ok(session)
    }

    /// The session named `id`, if it is open and has not expired. Looking it up does not
    /// count as using it: a request does that with [`Session::mark_used`].
    pub(crate) fn find(&self, id: &str) -> Option<Arc<Session>> {
        self.table().find(id, &self.limits, Instant::now())
    }

    /// Ends a session; its requests still running are cancelled, as if the client had
    /// cancelled each.
    pub(crate) fn close(&self, id: &str) -> bool {
        let Some(session) = self.table().remove(id) else { return false };
        session.in_flight.cancel_all();
        true
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The open sessions by id, plus the fresh ones in the order they opened.
#[derive(Debug, Default)]
struct Table {
    open: HashMap<String, Arc<Session>>,
    /// Ids of sessions as they opened, oldest first. Entries whose session has since
    /// been used or closed are skipped (and dropped) when they reach the front.
    fresh: VecDeque<String>,
}

impl Table {
    /// Adds `session`, making room if the table is full.
    fn insert(&mut self, session: Arc<Session>, limits: &SessionLimits, now: Instant) -> Result<(), Error> {
        self.expire_fresh(limits, now);
        if self.open.len() >= limits.max_sessions {
            self.make_room(limits, now)?;
        }
        self.fresh.push_back(session.id.clone());
        self.open.insert(session.id.clone(), session);
        Ok(())
    }

    /// The session named `id`, if it is open and has not expired.
    fn find(&mut self, id: &str, limits: &SessionLimits, now: Instant) -> Option<Arc<Session>> {
        let session = self.open.get(id)?;
        if session.expired(limits, now) {
            self.open.remove(id);
            return None;
        }
        Some(session.clone())
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        self.open.remove(id)
    }

    /// Drops fresh sessions past their time from the front of the queue.
    fn expire_fresh(&mut self, limits: &SessionLimits, now: Instant) {
        while let Some(id) = self.fresh.front() {
            match self.open.get(id) {
                Some(session) if session.is_fresh() => {
                    if !session.expired(limits, now) {
                        break;
                    }
                    self.open.remove(id);
                }
                // Used since, or closed: not fresh any more.
                _ => {}
            }
            self.fresh.pop_front();
        }
    }

    /// Removes one session: the oldest fresh one, else the expired or least recently
    /// used idle one. `Err` when every session has a request in flight.
    fn make_room(&mut self, limits: &SessionLimits, now: Instant) -> Result<(), Error> {
        while let Some(id) = self.fresh.pop_front() {
            if self.open.get(&id).is_some_and(|session| session.is_fresh()) {
                self.open.remove(&id);
                return Ok(());
            }
        }
        let idle = self.open.values().filter(|session| session.is_idle()).min_by_key(|session| session.last_used());
        let Some(id) = idle.map(|session| session.id.clone()) else {
            return Err(Error::internal("too many sessions with requests running; retry shortly"));
        };
        let evicted = self.open.remove(&id).is_some_and(|session| !session.expired(limits, now));
        if evicted {
            tracing::debug!("closed the least recently used idle session to make room");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_sessions: usize) -> SessionLimits {
        SessionLimits { max_sessions, ..SessionLimits::default() }
    }

    /// A request on session `id` at `now`, if the session is still there.
    fn request(table: &mut Table, id: &str, limits: &SessionLimits, now: Instant) -> Option<Arc<Session>> {
        let session = table.find(id, limits, now)?;
        session.touch(now);
        Some(session)
    }

    fn open(table: &mut Table, limits: &SessionLimits, now: Instant) -> Result<Arc<Session>, Error> {
        let session =
            Arc::new(Session::new("2025-11-25".into(), ClientCapabilities::default(), None, None, now).unwrap());
        table.insert(session.clone(), limits, now).map(|()| session)
    }

    #[test]
    fn a_flood_of_fresh_sessions_pushes_out_fresh_ones_and_spares_used_ones() {
        let (limits, start) = (limits(4), Instant::now());
        let mut table = Table::default();
        let used = open(&mut table, &limits, start).unwrap();
        assert!(request(&mut table, &used.id, &limits, start).is_some());
        let first_fresh = open(&mut table, &limits, start).unwrap();
        for _ in 0..100 {
            open(&mut table, &limits, start).unwrap();
        }
        assert_eq!(table.open.len(), 4);
        assert!(request(&mut table, &used.id, &limits, start).is_some(), "a used session was pushed out by fresh ones");
        assert!(request(&mut table, &first_fresh.id, &limits, start).is_none(), "the oldest fresh session stayed");
    }

    #[test]
    fn fresh_sessions_expire_and_idle_ones_go_least_recently_used_first() {
        let (limits, start) = (limits(2), Instant::now());
        let mut table = Table::default();
        let fresh = open(&mut table, &limits, start).unwrap();
        assert!(
            request(&mut table, &fresh.id, &limits, start + limits.fresh_timeout).is_none(),
            "a fresh session outlived its time"
        );

        let older = open(&mut table, &limits, start).unwrap();
        let newer = open(&mut table, &limits, start).unwrap();
        let later = start + Duration::from_secs(1);
        request(&mut table, &older.id, &limits, later).unwrap();
        request(&mut table, &newer.id, &limits, later + Duration::from_secs(1)).unwrap();
        open(&mut table, &limits, later + Duration::from_secs(2)).unwrap();
        assert!(request(&mut table, &older.id, &limits, later).is_none(), "the least recently used session stayed");
        assert!(request(&mut table, &newer.id, &limits, later).is_some());
    }

    #[tokio::test]
    async fn a_session_with_a_request_in_flight_is_never_pushed_out() {
        let (limits, start) = (limits(1), Instant::now());
        let mut table = Table::default();
        let busy = open(&mut table, &limits, start).unwrap();
        request(&mut table, &busy.id, &limits, start).unwrap();
        let running = busy.in_flight.track(crate::protocol::RequestId::from(1), std::future::pending::<()>());
        let refused = open(&mut table, &limits, start + limits.idle_timeout * 2);
        assert!(refused.is_err(), "a session with a request in flight was closed");
        assert!(request(&mut table, &busy.id, &limits, start + limits.idle_timeout * 2).is_some());
        drop(running);
        assert!(open(&mut table, &limits, start).is_ok(), "an idle session did not make room");
    }
}
