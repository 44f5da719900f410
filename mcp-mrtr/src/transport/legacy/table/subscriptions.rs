//! The bytes of the sessions' resource subscriptions (the sixth audit's E2): each session
//! keeps at most [`SessionLimits::max_subscription_bytes_per_session`], one client's
//! sessions together at most its share ([`SessionLimits::max_subscription_bytes_per_client`]),
//! and every session together at most the total ([`SessionLimits::max_subscription_bytes`]).
//!
//! The count of a client's bytes lives in the table, beside its sessions, and changes under
//! the table's lock with what it counts: a subscription is kept, forgotten, or dropped with
//! its session (`Table::remove`) in the same critical section. So however many sessions a
//! client opens, together they hold its share at most.
//!
//! When the total is full, a client holding more than the newcomer would gives way, as in
//! every pool (`fair`): an expired session holding subscriptions goes first, else the
//! heaviest client's session holding the most, unless a request of it is running. It is
//! closed, as a full table closes one: its client is told so at its next request (404 over
//! HTTP) and starts over, rather than missing updates of subscriptions silently dropped.
//! A newcomer is refused only when nobody holds more than it would.

use std::sync::Arc;
use std::time::Instant;

use super::{Sessions, Table};
use crate::base::error::Error;
use crate::bounds::fair::{ClientId, Refused};
use crate::transport::legacy::subscribed::cost;
use crate::transport::legacy::{Session, SessionLimits};

impl Sessions {
    /// Keeps `uri` (one the server serves this session, of at most `MAX_URI_BYTES`: the
    /// caller checked) among `session`'s subscriptions, within `most` of them and the
    /// bounds on their bytes. `Err` (`-32602`, or `-32603` when the server holds its most)
    /// says which bound and what to do.
    pub(crate) fn subscribe(&self, session: &Arc<Session>, uri: &str, most: usize) -> Result<(), Error> {
        self.table().subscribe(session, uri, most, &self.limits, Instant::now())
    }

    /// Forgets `uri` among `session`'s subscriptions.
    pub(crate) fn unsubscribe(&self, session: &Session, uri: &str) {
        let mut table = self.table();
        let freed = session.subscriptions().remove(uri);
        table.subscribed.give_back(&session.client, freed);
    }
}

impl Table {
    fn subscribe(
        &mut self,
        session: &Arc<Session>,
        uri: &str,
        most: usize,
        limits: &SessionLimits,
        now: Instant,
    ) -> Result<(), Error> {
        // Only a session in the table holds bytes: removing one gives its bytes back.
        if !self.open.get(&session.id).is_some_and(|open| Arc::ptr_eq(open, session)) {
            return Err(Error::invalid_request("session not found: it ended; send initialize again"));
        }
        let bytes = cost(uri);
        let kept = session.subscriptions().bytes();
        {
            let subscribed = session.subscriptions();
            if subscribed.contains(uri) {
                return Ok(());
            }
            if subscribed.len() >= most {
                return Err(Error::invalid_params(format!(
                    "resources/subscribe: this session holds its most subscriptions ({most}); unsubscribe from one first"
                )));
            }
        }
        let per_session = limits.max_subscription_bytes_per_session;
        if kept + bytes > per_session {
            return Err(Error::invalid_params(format!(
                "resources/subscribe: this session's subscriptions would take {} bytes, past the {per_session} a \
                 session keeps; unsubscribe from some first",
                kept + bytes
            )));
        }
        loop {
            match self.subscribed.room_for(&session.client, bytes) {
                Ok(()) => break,
                Err(Refused::Share) => {
                    return Err(Error::invalid_params(format!(
                        "resources/subscribe: this client's sessions hold {} bytes of subscriptions, and {} more would \
                         pass its share of {}; unsubscribe, or end a session, first",
                        self.subscribed.held_by(&session.client),
                        bytes,
                        limits.max_subscription_bytes_per_client
                    )));
                }
                Err(Refused::Full) => {
                    if !self.make_subscription_room(&session.client, bytes, limits, now) {
                        return Err(Error::internal(format!(
                            "resources/subscribe: the server holds its most subscriptions ({} bytes); retry later",
                            limits.max_subscription_bytes
                        )));
                    }
                }
            }
        }
        let added = session.subscriptions().insert(uri);
        self.subscribed.take(&session.client, added);
        Ok(())
    }

    /// Closes one session to free subscription bytes for `newcomer`, which would hold
    /// `bytes` more (see the module docs); `false` when no session may go.
    fn make_subscription_room(
        &mut self,
        newcomer: &ClientId,
        bytes: usize,
        limits: &SessionLimits,
        now: Instant,
    ) -> bool {
        let holds = |session: &Session| session.subscriptions().bytes() > 0;
        let expired = self.open.values().find(|s| s.expired(limits, now) && holds(s)).map(|s| s.id.clone());
        if let Some(id) = expired {
            self.remove(&id);
            return true;
        }
        for heavier in self.subscribed.heavier_than(newcomer, bytes) {
            let Some(ids) = self.by_client.get(&heavier) else { continue };
            let victim = ids
                .iter()
                .filter_map(|id| self.open.get(id))
                .filter(|session| session.in_flight.is_empty())
                .max_by_key(|session| session.subscriptions().bytes())
                .filter(|session| holds(session))
                .map(|session| session.id.clone());
            if let Some(id) = victim {
                tracing::debug!(client = %newcomer, heavier = %heavier, "subscriptions at their total: closed a session of a heavier client");
                self.remove(&id);
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::protocol::ClientCapabilities;
    use crate::transport::legacy::Opener;

    /// Bounds a few subscriptions fill: each of `uri(n)` costs 100 bytes.
    fn limits() -> SessionLimits {
        SessionLimits {
            max_subscription_bytes: 1_000,
            max_subscription_bytes_per_client: 600,
            max_subscription_bytes_per_session: 300,
            ..SessionLimits::default()
        }
    }

    fn uri(n: usize) -> String {
        format!("r://{n:032}")
    }

    fn open(table: &mut Table, client: u8, limits: &SessionLimits, now: Instant) -> Arc<Session> {
        let opener = Opener { owner: None, client: ClientId::loopback(client) };
        let session =
            Arc::new(Session::new("2025-11-25".into(), ClientCapabilities::default(), None, opener, now).unwrap());
        table.insert(session.clone(), limits, now).unwrap();
        session.touch(now);
        session
    }

    #[test]
    fn a_session_and_a_client_keep_at_most_their_bytes_and_give_them_back_when_the_session_ends() {
        let (limits, now) = (limits(), Instant::now());
        assert_eq!(cost(&uri(0)), 100);
        let mut table = Table::new(&limits);
        let first = open(&mut table, 1, &limits, now);
        for n in 0..3 {
            table.subscribe(&first, &uri(n), 1_024, &limits, now).unwrap();
        }
        table.subscribe(&first, &uri(0), 1_024, &limits, now).expect("kept already: nothing more");
        let refused = table.subscribe(&first, &uri(3), 1_024, &limits, now).unwrap_err();
        assert!(refused.message().contains("past the 300 a session keeps"), "{}", refused.message());

        let second = open(&mut table, 1, &limits, now);
        for n in 3..6 {
            table.subscribe(&second, &uri(n), 1_024, &limits, now).unwrap();
        }
        let third = open(&mut table, 1, &limits, now);
        let refused = table.subscribe(&third, &uri(6), 1_024, &limits, now).unwrap_err();
        assert!(refused.message().contains("pass its share of 600"), "{}", refused.message());
        assert_eq!(refused.code(), crate::base::error::ErrorCode::INVALID_PARAMS);

        table.remove(&first.id);
        assert_eq!(table.subscribed.held_by(&ClientId::loopback(1)), 300, "the ended session's bytes came back");
        table.subscribe(&third, &uri(6), 1_024, &limits, now).expect("room again in the share");
        let ended = table.subscribe(&first, &uri(7), 1_024, &limits, now);
        assert!(ended.is_err(), "a session out of the table keeps nothing");
    }

    #[test]
    fn a_full_total_closes_a_session_of_the_heaviest_client_never_of_a_lighter_one() {
        let (limits, now) = (limits(), Instant::now());
        let mut table = Table::new(&limits);
        // Clients 1 and 2 hold 600 and 300 bytes; client 3 takes the last 100.
        let heavy: Vec<_> = (0..2).map(|_| open(&mut table, 1, &limits, now)).collect();
        for n in 0..6 {
            table.subscribe(&heavy[n / 3], &uri(n), 1_024, &limits, now).unwrap();
        }
        let middle = open(&mut table, 2, &limits, now);
        for n in 10..13 {
            table.subscribe(&middle, &uri(n), 1_024, &limits, now).unwrap();
        }
        let light = open(&mut table, 3, &limits, now);
        table.subscribe(&light, &uri(20), 1_024, &limits, now).unwrap();
        assert_eq!(table.subscribed.held(), 1_000);

        // The full total: client 3 would hold 200, so client 1 (600) gives way.
        let running = heavy[0].in_flight.track(crate::protocol::RequestId::from(1), std::future::pending::<()>());
        table.subscribe(&light, &uri(21), 1_024, &limits, now).expect("a heavier client gives way");
        assert!(table.open.contains_key(&heavy[0].id), "a session with a request running is never closed");
        assert!(!table.open.contains_key(&heavy[1].id), "the heaviest client's other session was closed");
        assert_eq!(table.subscribed.held(), 800);
        drop(running);

        // Client 2 fills the total again and wants 100 more: nobody holds more than the
        // 600 it would, so nobody gives way.
        let middle2 = open(&mut table, 2, &limits, now);
        for n in 13..15 {
            table.subscribe(&middle2, &uri(n), 1_024, &limits, now).unwrap();
        }
        assert_eq!(table.subscribed.held(), 1_000);
        let refused = table.subscribe(&middle2, &uri(15), 1_024, &limits, now).unwrap_err();
        assert_eq!(refused.code(), crate::base::error::ErrorCode::INTERNAL_ERROR, "{}", refused.message());
        assert_eq!(table.open.len(), 4, "no session was closed for it");

        // An expired session holding subscriptions goes before anyone's live one.
        let later = now + limits.idle_timeout + Duration::from_secs(1);
        for session in [&middle, &middle2, &light] {
            session.touch(later);
        }
        table.subscribe(&middle2, &uri(15), 1_024, &limits, later).expect("the idle session of client 1 went");
        assert!(!table.open.contains_key(&heavy[0].id));
    }
}
