//! The table of open legacy sessions, how fast a client may open them, and who makes
//! room when the table is full.
//!
//! `initialize` needs no credential, so anyone can open sessions by the thousand, and use
//! them (a `ping` is enough). Two things keep that from costing anyone else theirs:
//!
//! - each client opens sessions at a bounded rate ([`SessionLimits::opening_per_minute`],
//!   [`SessionLimits::opening_burst`]); past it `initialize` is refused with a
//!   "retry after" (HTTP 429);
//! - a full table makes room from the client holding the most sessions, never from a
//!   client holding fewer than the newcomer would (see `room`): a flood, used or not,
//!   displaces its own sessions. A session with a request in flight never makes room.
//!
//! A session is *fresh* until its client sends anything after `initialize`; fresh
//! sessions expire on their own after [`SessionLimits::fresh_timeout`], used ones after
//! [`SessionLimits::idle_timeout`] without a request.
//!
//! [`Sessions`] also holds the endpoint's pool of bridge waits (see `wait`): they are
//! bounded per endpoint, as sessions are; and counts the bytes of every session's
//! resource subscriptions, by client (see `subscriptions`).

mod subscriptions;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use super::limits::SessionLimits;
use super::session::Opener;
use super::{room, Session};
use crate::base::error::Error;
use crate::bounds::fair::{ByteShares, ClientId, FairPool, RateLimit};
use crate::protocol::{ClientCapabilities, Implementation};

/// The open sessions of one endpoint, and the bounds that come with them.
#[derive(Debug)]
pub(crate) struct Sessions {
    table: Mutex<Table>,
    limits: SessionLimits,
    /// How fast each client opens sessions.
    opening: RateLimit,
    /// The calls whose bridge is waiting for their client's answers.
    bridge_waits: FairPool,
}

impl Default for Sessions {
    fn default() -> Self {
        Self::new(SessionLimits::default())
    }
}

impl Sessions {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        Self {
            table: Mutex::new(Table::new(&limits)),
            limits,
            opening: RateLimit::new(f64::from(limits.opening_per_minute) / 60.0, limits.opening_burst),
            bridge_waits: FairPool::new(limits.max_bridge_waits, limits.max_bridge_waits_per_client),
        }
    }

    pub(crate) fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    /// The endpoint's pool of bridge waits, shared by every call of every session.
    pub(crate) fn bridge_waits(&self) -> &FairPool {
        &self.bridge_waits
    }

    /// Opens a session for `opener`, making room if the table is full. `Err` when the
    /// client opens sessions faster than its rate (HTTP status 429, with
    /// `data.retryAfterSeconds`), or when no session may make room.
    pub(crate) fn open(
        &self,
        version: String,
        capabilities: ClientCapabilities,
        client_info: Option<Implementation>,
        opener: Opener,
    ) -> Result<Arc<Session>, Error> {
        if let Err(wait) = self.opening.take(&opener.client) {
            return Err(opening_too_fast(wait));
        }
        let now = Instant::now();
        let session = Arc::new(Session::new(version, capabilities, client_info, opener, now)?);
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

/// The refusal of a session opened too soon after the client's others: it names when
/// the next one may open, in whole seconds (HTTP's `Retry-After` has no finer unit).
fn opening_too_fast(wait: Duration) -> Error {
    let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    Error::internal(format!(
        "this client opens sessions too fast: the next one can open in {seconds} s; keep using the session you have"
    ))
    .with_status(429)
    .with_data(json!({ "retryAfterSeconds": seconds }))
}

/// The open sessions by id and by client, plus the fresh ones in the order they opened,
/// and the bytes of their subscriptions by client.
#[derive(Debug)]
struct Table {
    open: HashMap<String, Arc<Session>>,
    /// Ids of each client's open sessions, for who makes room (see `room`).
    by_client: HashMap<ClientId, HashSet<String>>,
    /// Ids of sessions as they opened, oldest first, for fresh ones to expire. Entries
    /// whose session has since been used or closed are skipped (and dropped) when they
    /// reach the front.
    fresh: VecDeque<String>,
    /// The bytes of the open sessions' subscriptions, by the client that opened each
    /// (`subscriptions`).
    subscribed: ByteShares,
}

impl Default for Table {
    fn default() -> Self {
        Self::new(&SessionLimits::default())
    }
}

impl Table {
    fn new(limits: &SessionLimits) -> Self {
        Self {
            open: HashMap::new(),
            by_client: HashMap::new(),
            fresh: VecDeque::new(),
            subscribed: ByteShares::new(limits.max_subscription_bytes, limits.max_subscription_bytes_per_client),
        }
    }

    /// Adds `session`, making room if the table is full.
    fn insert(&mut self, session: Arc<Session>, limits: &SessionLimits, now: Instant) -> Result<(), Error> {
        self.expire_fresh(limits, now);
        if self.open.len() >= limits.max_sessions {
            self.make_room(&session.client, limits, now)?;
        }
        self.fresh.push_back(session.id.clone());
        self.by_client.entry(session.client.clone()).or_default().insert(session.id.clone());
        self.open.insert(session.id.clone(), session);
        Ok(())
    }

    /// The session named `id`, if it is open and has not expired.
    fn find(&mut self, id: &str, limits: &SessionLimits, now: Instant) -> Option<Arc<Session>> {
        let session = self.open.get(id)?;
        if session.expired(limits, now) {
            self.remove(id);
            return None;
        }
        Some(session.clone())
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        let session = self.open.remove(id)?;
        // Its stream of changes ends with it, and its subscriptions: nobody hears them.
        session.end();
        let freed = session.subscriptions().clear();
        self.subscribed.give_back(&session.client, freed);
        if let Some(ids) = self.by_client.get_mut(&session.client) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_client.remove(&session.client);
            }
        }
        Some(session)
    }

    /// Drops fresh sessions past their time from the front of the queue.
    fn expire_fresh(&mut self, limits: &SessionLimits, now: Instant) {
        while let Some(id) = self.fresh.front() {
            match self.open.get(id) {
                Some(session) if session.is_fresh() => {
                    if !session.expired(limits, now) {
                        break;
                    }
                    let id = id.clone();
                    self.remove(&id);
                }
                // Used since, or closed: not fresh any more.
                _ => {}
            }
            self.fresh.pop_front();
        }
    }

    /// Removes one session for `newcomer`: an expired one if there is one (it is gone
    /// already), else the one `room::victim` picks. `Err` when no client holding at least
    /// as many as the newcomer would has a session without a request in flight.
    fn make_room(&mut self, newcomer: &ClientId, limits: &SessionLimits, now: Instant) -> Result<(), Error> {
        let expired = self.open.values().find(|session| session.expired(limits, now)).map(|session| session.id.clone());
        if let Some(id) = expired {
            self.remove(&id);
            return Ok(());
        }
        let Some(id) = room::victim(&self.open, &self.by_client, newcomer) else {
            return Err(Error::internal("too many sessions with requests running; retry shortly"));
        };
        if let Some(session) = self.remove(&id) {
            let whose = if &session.client == newcomer { "its own" } else { "a heavier client's" };
            tracing::debug!(client = %newcomer, "a full session table: closed {whose} session to make room");
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
        open_by(table, &ClientId::Unknown, limits, now)
    }

    fn open_by(table: &mut Table, by: &ClientId, limits: &SessionLimits, now: Instant) -> Result<Arc<Session>, Error> {
        let opener = Opener { owner: None, client: by.clone() };
        let session = Arc::new(Session::new("2025-11-25".into(), ClientCapabilities::default(), None, opener, now)?);
        table.insert(session.clone(), limits, now).map(|()| session)
    }

    #[test]
    fn a_flood_of_fresh_sessions_pushes_out_fresh_ones_and_spares_used_ones() {
        let (limits, start) = (limits(4), Instant::now());
        let mut table = Table::default();
        let used = open(&mut table, &limits, start).unwrap();
        assert!(request(&mut table, &used.id, &limits, start).is_some());
        let first_fresh = open(&mut table, &limits, start).unwrap();
        // Each a moment later: "oldest" must mean something.
        for n in 1..=100 {
            open(&mut table, &limits, start + Duration::from_millis(n)).unwrap();
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

    #[test]
    fn a_flood_of_used_sessions_makes_room_from_its_own_client() {
        let (limits, start) = (limits(4), Instant::now());
        let mut table = Table::default();
        let honest = open_by(&mut table, &ClientId::loopback(3), &limits, start).unwrap();
        request(&mut table, &honest.id, &limits, start).unwrap();
        let mut at = start;
        for _ in 0..100 {
            at += Duration::from_millis(1);
            let flood = open_by(&mut table, &ClientId::loopback(2), &limits, at).unwrap();
            request(&mut table, &flood.id, &limits, at).expect("the flood's session was just opened");
        }
        assert_eq!((table.open.len(), table.by_client[&ClientId::loopback(2)].len()), (4, 3));
        assert!(
            request(&mut table, &honest.id, &limits, at).is_some(),
            "the flood pushed out another client's session"
        );
        let newcomer =
            open_by(&mut table, &ClientId::loopback(4), &limits, at).expect("the heaviest client makes room");
        assert!(request(&mut table, &newcomer.id, &limits, at).is_some());
        assert!(request(&mut table, &honest.id, &limits, at).is_some());
        assert_eq!(table.by_client[&ClientId::loopback(2)].len(), 2);
    }

    #[tokio::test]
    async fn a_client_holding_few_never_makes_room_for_a_heavier_one() {
        let (limits, start) = (limits(3), Instant::now());
        let mut table = Table::default();
        let light = open_by(&mut table, &ClientId::loopback(3), &limits, start).unwrap();
        let heavy: Vec<_> =
            (0..2).map(|_| open_by(&mut table, &ClientId::loopback(2), &limits, start).unwrap()).collect();
        let running: Vec<_> = heavy
            .iter()
            .map(|session| {
                request(&mut table, &session.id, &limits, start).unwrap();
                session.in_flight.track(crate::protocol::RequestId::from(1), std::future::pending::<()>())
            })
            .collect();
        assert!(
            open_by(&mut table, &ClientId::loopback(2), &limits, start).is_err(),
            "the light client's session made room"
        );
        assert!(request(&mut table, &light.id, &limits, start).is_some());
        drop(running);
    }

    #[test]
    fn clients_holding_one_each_give_the_least_recently_used_to_a_newcomer() {
        let (limits, start) = (limits(2), Instant::now());
        let mut table = Table::default();
        let older = open_by(&mut table, &ClientId::loopback(2), &limits, start).unwrap();
        let newer = open_by(&mut table, &ClientId::loopback(3), &limits, start).unwrap();
        request(&mut table, &older.id, &limits, start + Duration::from_secs(1)).unwrap();
        request(&mut table, &newer.id, &limits, start + Duration::from_secs(2)).unwrap();
        open_by(&mut table, &ClientId::loopback(4), &limits, start + Duration::from_secs(3)).unwrap();
        assert!(request(&mut table, &older.id, &limits, start).is_none());
        assert!(request(&mut table, &newer.id, &limits, start).is_some());
    }

    #[test]
    fn opening_too_fast_is_refused_with_when_to_retry() {
        let limits = SessionLimits { opening_per_minute: 60, opening_burst: 2, ..SessionLimits::default() };
        let sessions = Sessions::new(limits);
        let opener = |n| Opener { owner: None, client: ClientId::loopback(n) };
        let open = |n| sessions.open("2025-11-25".into(), ClientCapabilities::default(), None, opener(n));
        open(2).unwrap();
        open(2).unwrap();
        let refused = open(2).unwrap_err();
        assert_eq!((refused.http_status(), refused.data()), (429, Some(&json!({ "retryAfterSeconds": 1 }))));
        open(3).expect("another client has its own rate");
    }
}
