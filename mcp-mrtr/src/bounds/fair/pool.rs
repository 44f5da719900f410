//! [`FairPool`]: a bounded pool that a full state never hands to whoever filled it first.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use super::ClientId;

/// A pool of at most `total` holders, at most `share` of them per client.
///
/// Admission, for a client holding `c`:
///
/// 1. `c` is at the share: refused ([`Refused::Share`]); only this client is affected.
/// 2. The pool has room: admitted.
/// 3. The pool is full, and some other client holds more than `c + 1`: that client's
///    oldest holder is asked to give way ([`Held::give_way`] resolves for it), its place is
///    taken at once, and the newcomer is admitted. (`c + 1`, not `c`: swapping two
///    clients' places would only churn.)
/// 4. Otherwise everyone holds about as much as the newcomer would: refused
///    ([`Refused::Full`]).
///
/// So one client can take at most its share, and when many clients fill the pool the
/// heaviest shrinks first; a client holding little is never the one that gives way.
#[derive(Clone)]
pub(crate) struct FairPool {
    inner: Arc<Inner>,
}

struct Inner {
    total: usize,
    share: usize,
    holders: Mutex<Holders>,
}

/// Clients holding nothing whose entries are kept, at least: see [`Holders::make_room_for_one_more`].
const IDLE_KEPT: usize = 1_024;

#[derive(Default)]
struct Holders {
    by_client: HashMap<ClientId, VecDeque<Holder>>,
    count: usize,
    next_ticket: u64,
}

struct Holder {
    ticket: u64,
    give_way: Arc<Notify>,
}

/// Why a pool did not admit a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The client holds its whole share.
    Share,
    /// The pool is full and nobody holds much more than this client.
    Full,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Share => "this client holds its whole share",
            Self::Full => "the server is full",
        })
    }
}

/// One place in a [`FairPool`], held until dropped.
pub(crate) struct Held {
    pool: Arc<Inner>,
    client: ClientId,
    ticket: u64,
    give_way: Arc<Notify>,
}

/// The right to hand a [`Held`] place back before its holder ends: [`Held::release_early`].
pub(crate) struct Release {
    pool: Arc<Inner>,
    client: ClientId,
    ticket: u64,
}

impl fmt::Debug for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Release").field("client", &self.client).field("ticket", &self.ticket).finish_non_exhaustive()
    }
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Held").field("client", &self.client).field("ticket", &self.ticket).finish_non_exhaustive()
    }
}

impl FairPool {
    /// A pool of `total` places, `share` per client (at least 1, at most `total`).
    pub(crate) fn new(total: usize, share: usize) -> Self {
        let share = share.clamp(1, total.max(1));
        Self { inner: Arc::new(Inner { total, share, holders: Mutex::default() }) }
    }

    /// A place for `client`, as the admission rules of [`FairPool`] say.
    pub(crate) fn admit(&self, client: &ClientId) -> Result<Held, Refused> {
        let mut holders = self.inner.lock();
        let holds = holders.by_client.get(client).map_or(0, VecDeque::len);
        if holds >= self.inner.share {
            return Err(Refused::Share);
        }
        if holders.count >= self.inner.total {
            let heaviest = holders
                .by_client
                .iter()
                .filter(|(other, _)| *other != client)
                .max_by_key(|(_, held)| held.len())
                .filter(|(_, held)| held.len() > holds + 1)
                .map(|(other, _)| other.clone());
            let Some(heaviest) = heaviest else { return Err(Refused::Full) };
            holders.evict_oldest(&heaviest);
        }
        let ticket = holders.next_ticket;
        holders.next_ticket += 1;
        holders.count += 1;
        let give_way = Arc::new(Notify::new());
        let holder = Holder { ticket, give_way: give_way.clone() };
        if let Some(held) = holders.by_client.get_mut(client) {
            held.push_back(holder);
        } else {
            holders.make_room_for_one_more(self.inner.total);
            holders.by_client.insert(client.clone(), VecDeque::from([holder]));
        }
        Ok(Held { pool: self.inner.clone(), client: client.clone(), ticket, give_way })
    }

    /// How many places are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().count
    }

    /// How many clients have an entry, holding or not.
    #[cfg(test)]
    pub(crate) fn clients(&self) -> usize {
        self.inner.lock().by_client.len()
    }

    /// How many places `client` holds.
    #[cfg(test)]
    pub(crate) fn held_by(&self, client: &ClientId) -> usize {
        self.inner.lock().by_client.get(client).map_or(0, VecDeque::len)
    }
}

impl fmt::Debug for FairPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FairPool").field("total", &self.inner.total).field("share", &self.inner.share).finish()
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Holders> {
        self.holders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Holders {
    /// Before a client without an entry gets one: when the entries would pass `total`
    /// (at most that many clients hold a place) plus [`IDLE_KEPT`] or `total`, whichever
    /// is more, the idle ones go.
    ///
    /// Why idle entries are kept at all: a client's request usually ends before its next
    /// begins, so dropping the entry when it empties would free its map slot and queue on
    /// almost every request, to make them again on the next: a few percent of a request's
    /// CPU. Kept up to the bound, a returning client finds its entry; past it, a pruning
    /// clears at least that many entries, so its cost spreads over as many new clients.
    /// (A full pool's search for the heaviest client walks the idle entries too.)
    fn make_room_for_one_more(&mut self, total: usize) {
        if self.by_client.len() >= total.saturating_add(total.max(IDLE_KEPT)) {
            self.by_client.retain(|_, held| !held.is_empty());
        }
    }

    /// Frees `client`'s place `ticket`, if it still holds it: a place is freed once,
    /// whether its holder dropped it, gave it way, or it was released early. The client's
    /// entry stays, empty or not (see [`Self::make_room_for_one_more`]).
    fn free(&mut self, client: &ClientId, ticket: u64) {
        let Some(held) = self.by_client.get_mut(client) else { return };
        if let Some(at) = held.iter().position(|holder| holder.ticket == ticket) {
            held.remove(at);
            self.count -= 1;
        }
    }

    /// Frees `client`'s oldest place and tells its holder to end.
    fn evict_oldest(&mut self, client: &ClientId) {
        let Some(held) = self.by_client.get_mut(client) else { return };
        if let Some(oldest) = held.pop_front() {
            self.count -= 1;
            oldest.give_way.notify_one();
        }
    }
}

impl Held {
    /// Resolves when the pool needs this place for another client: the holder should end
    /// what it holds cleanly (its place is no longer counted).
    pub(crate) async fn give_way(&self) {
        self.give_way.notified().await;
    }

    /// What frees this place before its holder ends: for a holder that is being ended
    /// (asynchronously) to make room for its own successor, which must find the place
    /// free at once (a session's newer `GET` stream takes over its older one's place).
    pub(crate) fn release_early(&self) -> Release {
        Release { pool: self.pool.clone(), client: self.client.clone(), ticket: self.ticket }
    }
}

impl Release {
    /// Frees the place now, if it is still held; its holder, when it ends, frees nothing more.
    pub(crate) fn release(self) {
        self.pool.lock().free(&self.client, self.ticket);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Nothing when it was freed already (evicted, or released early).
        self.pool.lock().free(&self.client, self.ticket);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_client_takes_at_most_its_share_and_frees_it_on_drop() {
        let pool = FairPool::new(10, 2);
        let (a1, _a2) = (pool.admit(&ClientId::loopback(1)).unwrap(), pool.admit(&ClientId::loopback(1)).unwrap());
        assert_eq!(pool.admit(&ClientId::loopback(1)).unwrap_err(), Refused::Share);
        let _b = pool.admit(&ClientId::loopback(2)).expect("another client has its own share");
        drop(a1);
        assert_eq!(pool.len(), 2);
        pool.admit(&ClientId::loopback(1)).expect("a dropped place is free again");
    }

    #[tokio::test]
    async fn a_full_pool_makes_the_heaviest_client_give_way() {
        let pool = FairPool::new(4, 4);
        let heavy: Vec<Held> = (0..3).map(|_| pool.admit(&ClientId::loopback(1)).unwrap()).collect();
        let light = pool.admit(&ClientId::loopback(2)).unwrap();
        let newcomer = pool.admit(&ClientId::loopback(3)).expect("the heaviest gives way");
        tokio::time::timeout(Duration::from_secs(1), heavy[0].give_way()).await.expect("the oldest is told");
        assert_eq!((pool.len(), pool.held_by(&ClientId::loopback(1))), (4, 2));
        drop(heavy);
        assert_eq!(pool.len(), 2, "an evicted place is not freed twice");
        drop((light, newcomer));
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn a_place_released_early_is_free_at_once_and_freed_once() {
        let pool = FairPool::new(4, 2);
        let client = ClientId::loopback(1);
        let (older, _other) = (pool.admit(&client).unwrap(), pool.admit(&client).unwrap());
        assert_eq!(pool.admit(&client).unwrap_err(), Refused::Share);
        older.release_early().release();
        let newer = pool.admit(&client).expect("the released place is free while its holder still ends");
        older.release_early().release();
        drop(older);
        assert_eq!((pool.len(), pool.held_by(&client)), (2, 2), "the older place is not freed twice");
        drop(newer);
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn an_idle_client_keeps_its_entry_until_the_idle_ones_pass_the_bound() {
        let client = |n: usize| ClientId::address(u32::try_from(n).unwrap().to_be_bytes().into());
        let pool = FairPool::new(2, 1);
        drop(pool.admit(&client(1)).unwrap());
        assert_eq!((pool.len(), pool.clients(), pool.held_by(&client(1))), (0, 1, 0));
        let holding = pool.admit(&client(2)).unwrap();
        let bound = 2 + IDLE_KEPT;
        for n in 3..=bound {
            drop(pool.admit(&client(n)).unwrap());
        }
        assert_eq!(pool.clients(), bound, "up to the bound, every idle entry is kept");
        drop(pool.admit(&client(1)).unwrap());
        assert_eq!(pool.clients(), bound, "a known client makes no room");
        let newcomer = pool.admit(&client(bound + 1)).unwrap();
        assert_eq!(pool.clients(), 2, "past it, only the clients that hold a place stay");
        assert_eq!((pool.held_by(&client(2)), pool.held_by(&client(bound + 1))), (1, 1));
        assert_eq!(pool.admit(&client(2)).unwrap_err(), Refused::Share, "the share still counts");
        drop((holding, newcomer));
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn a_newcomer_is_refused_only_when_nobody_holds_much_more() {
        let pool = FairPool::new(4, 4);
        let _held: Vec<Held> = (1..=4).map(|n| pool.admit(&ClientId::loopback(n)).unwrap()).collect();
        assert_eq!(pool.admit(&ClientId::loopback(5)).unwrap_err(), Refused::Full, "one each: nobody gives way");
        let two = FairPool::new(4, 4);
        let _a: Vec<Held> = (0..2).map(|_| two.admit(&ClientId::loopback(1)).unwrap()).collect();
        let _b: Vec<Held> = (0..2).map(|_| two.admit(&ClientId::loopback(2)).unwrap()).collect();
        let third = two.admit(&ClientId::loopback(3));
        assert!(third.is_ok(), "2 > 0 + 1: the heaviest gives one up");
        assert_eq!(two.admit(&ClientId::loopback(3)).unwrap_err(), Refused::Full, "2, 1 and 1 against 1: no churn");
    }
}
