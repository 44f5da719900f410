//! The open connections of one listener, and which one gives way when they are at
//! [`ListenerLimits::max_connections`](super::ListenerLimits::max_connections): shed, don't refuse.
//!
//! A connection at the cap is accepted by closing the least valuable open one:
//!
//! 1. one that has sent no complete request yet, open the longest (a slow-header client,
//!    or one that connected and said nothing);
//! 2. else an idle keep-alive one, idle the longest;
//! 3. else the oldest listen stream of the client holding the most connections, if it
//!    holds more than the newcomer's client would.
//!
//! A connection running a request that does work is never closed for room, and the
//! newcomer is refused (503) only when every connection is busy and nobody holds much
//! more than its client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use tokio::sync::Notify;

use crate::bounds::fair::ClientId;

/// The connections open on one listener.
pub(super) struct Connections {
    max: usize,
    open: Mutex<HashMap<u64, Open>>,
    next_id: AtomicU64,
}

struct Open {
    client: ClientId,
    opened: Instant,
    activity: Arc<Activity>,
    close: Arc<Notify>,
}

/// What one connection is doing, kept up to date by its requests. Travels in each
/// request's extensions, so the endpoint can mark a listen stream.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Requests whose response is not sent in full yet.
    busy: AtomicU32,
    /// Whether a request has been answered on it.
    served: AtomicBool,
    /// When its last response ended, as [`millis_since_epoch`] counts (milliseconds).
    idle_since: AtomicU64,
    /// Listen streams it carries.
    listening: AtomicU32,
}

/// A connection's place among the open ones, freed when dropped.
pub(super) struct Place {
    connections: Arc<Connections>,
    id: u64,
    pub(super) activity: Arc<Activity>,
    close: Arc<Notify>,
}

impl Connections {
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self { max, open: Mutex::default(), next_id: AtomicU64::new(0) })
    }

    /// A place for a new connection from `client`, closing the least valuable open one
    /// when they are at the cap; `None` when none may give way.
    pub(super) fn admit(self: &Arc<Self>, client: ClientId) -> Option<Place> {
        let mut open = self.lock();
        if open.len() >= self.max {
            let victim = least_valuable(&open, &client)?;
            if let Some(shed) = open.remove(&victim) {
                tracing::debug!(client = %shed.client, "closing a connection to make room for a new one");
                shed.close.notify_one();
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (activity, close) = (Arc::new(Activity::default()), Arc::new(Notify::new()));
        open.insert(id, Open { client, opened: Instant::now(), activity: activity.clone(), close: close.clone() });
        Some(Place { connections: self.clone(), id, activity, close })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Open>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The connection to close for `newcomer`, in the order the module docs give.
fn least_valuable(open: &HashMap<u64, Open>, newcomer: &ClientId) -> Option<u64> {
    let waiting = open.iter().filter(|(_, o)| o.activity.is_waiting_first()).min_by_key(|(_, o)| o.opened);
    if let Some((id, _)) = waiting {
        return Some(*id);
    }
    let idle = open.iter().filter(|(_, o)| o.activity.is_idle()).min_by_key(|(_, o)| o.activity.idle_since());
    if let Some((id, _)) = idle {
        return Some(*id);
    }
    let mut held: HashMap<&ClientId, usize> = HashMap::new();
    for o in open.values() {
        *held.entry(&o.client).or_default() += 1;
    }
    let newcomer_holds = held.get(newcomer).copied().unwrap_or(0);
    let heaviest = open
        .values()
        .filter(|o| o.activity.is_listening())
        .map(|o| (&o.client, held[&o.client]))
        .max_by_key(|(_, count)| *count)
        .filter(|(client, count)| *client != newcomer && *count > newcomer_holds + 1)?
        .0;
    open.iter()
        .filter(|(_, o)| &o.client == heaviest && o.activity.is_listening())
        .min_by_key(|(_, o)| o.opened)
        .map(|(id, _)| *id)
}

impl Place {
    /// Resolves when this connection must close to make room for another.
    pub(super) async fn closed_for_room(&self) {
        self.close.notified().await;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

impl Activity {
    /// A request starts on the connection; it counts as busy until the guard drops (its
    /// response sent in full, or dropped).
    pub(super) fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }

    /// The connection carries a listen stream until the guard drops.
    pub(crate) fn listening(self: &Arc<Self>) -> Listening {
        self.listening.fetch_add(1, Ordering::Relaxed);
        Listening(self.clone())
    }

    fn is_waiting_first(&self) -> bool {
        self.busy.load(Ordering::Relaxed) == 0 && !self.served.load(Ordering::Relaxed)
    }

    fn is_idle(&self) -> bool {
        self.busy.load(Ordering::Relaxed) == 0 && self.served.load(Ordering::Relaxed)
    }

    fn is_listening(&self) -> bool {
        self.listening.load(Ordering::Relaxed) > 0
    }

    fn idle_since(&self) -> u64 {
        self.idle_since.load(Ordering::Relaxed)
    }
}

/// One request running on a connection.
pub(super) struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.served.store(true, Ordering::Relaxed);
        activity.idle_since.store(millis_since_epoch(), Ordering::Relaxed);
        activity.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One listen stream on a connection.
pub(crate) struct Listening(Arc<Activity>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.listening.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Milliseconds since the first call: idle times compared on the monotonic clock.
fn millis_since_epoch() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    u64::try_from(EPOCH.get_or_init(Instant::now).elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_connection_goes_before_an_idle_one_and_busy_ones_never_do() {
        let connections = Connections::new(3);
        let busy = connections.admit(ClientId::loopback(1)).unwrap();
        let _working = busy.activity.begin();
        let idle = connections.admit(ClientId::loopback(1)).unwrap();
        drop(idle.activity.begin());
        let _silent = connections.admit(ClientId::loopback(2)).unwrap();
        let newcomer = connections.admit(ClientId::loopback(3)).expect("the silent one gives way");
        assert_eq!(connections.lock().len(), 3);
        let _newcomer_working = newcomer.activity.begin();
        let next = connections.admit(ClientId::loopback(3)).expect("then the idle one");
        let _next_working = next.activity.begin();
        assert!(connections.admit(ClientId::loopback(4)).is_none(), "every connection is busy: refused");
    }

    #[test]
    fn listen_streams_of_the_heaviest_client_give_way_to_a_lighter_one() {
        let connections = Connections::new(3);
        let streams: Vec<(Place, Busy, Listening)> = (0..3)
            .map(|_| {
                let place = connections.admit(ClientId::loopback(2)).unwrap();
                let (busy, listening) = (place.activity.begin(), place.activity.listening());
                (place, busy, listening)
            })
            .collect();
        assert!(connections.admit(ClientId::loopback(2)).is_none(), "the heaviest client is not made room for");
        let newcomer = connections.admit(ClientId::loopback(3));
        assert!(newcomer.is_some(), "3 > 0 + 1: its oldest stream closes");
        drop(streams);
        assert_eq!(connections.lock().len(), 1);
    }
}
