//! [`MemoryGuard`]: the single-use guard in this process's memory, for one instance.
//!
//! Entries are kept per client (an owner number), each owner's in a heap by deadline, so
//! its expired entries go first and its oldest live ones are the first given up. Three
//! indexes over the owners keep every claim O(log owners), however full the guard and
//! however many clients fill it (the sixth audit's N3: a full guard scanned every owner,
//! under its lock, on every claim, to find the heaviest):
//!
//! - `by_size`: the owners holding entries, by how many; the last is the heaviest, who
//!   gives way when the guard is full.
//! - `by_soonest`: the same owners, by their soonest deadline. Each claim prunes the
//!   owners whose soonest entry has expired, a few at a time, so the entries of owners that
//!   claim no more are dropped without a sweep of every owner (there was one every 4,096
//!   claims, under the lock too).
//! - `by_floor`: the owners holding no entry but a floor that still refuses states, by
//!   that floor; each claim forgets those whose floor has passed.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;

use super::{Claim, Consumed, StateGuard};

/// A [`StateGuard`] in this process's memory, for a single instance.
///
/// Each entry takes about 34 bytes (a 64-bit digest prefix, its deadline, and the state's
/// expiry in milliseconds) and is kept until its call ends (no state of the call opens
/// any more: `StateConfig::call_lifetime`, an hour by default). Size it as *`once!` steps
/// per second × call lifetime × 34 bytes*: 290 steps a second with hour-long calls need
/// the default million entries, 36 MB; 2,000 a second, 7.2 million, 245 MB.
///
/// It never refuses a state for want of room, and never forgets a state it could still
/// be replayed with. When a client holds its [`share`](Self::with_share), or the guard its
/// capacity, the *heaviest* client's oldest entries are given up, and every state of that
/// client expiring no later than them is refused from then on (a floor per client). An
/// honest client finishes its calls in seconds, so what it gives up are states it will
/// never present again; a client that floods the guard only pushes up its own floor.
/// A claim costs the same however many clients hold entries: the heaviest is kept at
/// hand, not searched for.
#[derive(Debug)]
pub struct MemoryGuard {
    capacity: usize,
    share: usize,
    epoch: Instant,
    /// When this guard's memory began (unix milliseconds): states sealed before it are
    /// refused, since a guard of an earlier process may have seen them claimed.
    born: u64,
    used: Mutex<Used>,
}

/// Every owner's entries, and the indexes that find the owner to act on (module docs).
#[derive(Debug, Default)]
struct Used {
    owners: HashMap<u32, Owner>,
    total: usize,
    /// Owners holding entries, by how many, then by number: the last is the heaviest.
    by_size: BTreeSet<(usize, u32)>,
    /// Owners holding entries, by their soonest deadline.
    by_soonest: BTreeSet<(u32, u32)>,
    /// Owners holding no entry, by their floor (unix milliseconds).
    by_floor: BTreeSet<(u64, u32)>,
}

/// One client's entries.
#[derive(Debug, Default)]
struct Owner {
    ids: HashSet<u64, BuildHasherDefault<DigestHasher>>,
    /// The same ids, soonest forgotten first: (deadline, state expiry, id).
    by_deadline: BinaryHeap<Reverse<(u32, u64, u64)>>,
    /// States of this owner expiring at or before this (unix milliseconds, the precision
    /// states carry) are refused: some of their entries were given up.
    floor: u64,
}

/// Where an owner stands in the indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Standing {
    held: usize,
    soonest: Option<u32>,
    floor: u64,
}

/// Owners pruned, and owners forgotten, per claim at most: more than the one entry a
/// claim adds, so expired entries never pile up, and few enough that no claim waits long.
const TIDY_PER_CLAIM: usize = 2;

impl MemoryGuard {
    /// Entries kept at most by [`MemoryGuard::new`]: about 36 MB when full.
    pub const DEFAULT_CAPACITY: usize = 1 << 20;

    /// An empty guard holding at most [`MemoryGuard::DEFAULT_CAPACITY`] entries, a
    /// quarter of them per client.
    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// An empty guard holding at most `capacity` live entries, a quarter per client.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            share: (capacity / 4).max(1),
            epoch: Instant::now(),
            born: unix_millis(SystemTime::now()),
            used: Mutex::default(),
        }
    }

    /// The most entries one client holds before its own oldest are given up (default a
    /// quarter of the capacity): room the others keep however hard one client claims.
    pub fn with_share(mut self, share: usize) -> Self {
        self.share = share.clamp(1, self.capacity);
        self
    }

    /// How many entries are held (expired ones until they are pruned).
    pub fn len(&self) -> usize {
        self.lock().total
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A deadline: seconds since this guard was made, rounded up, on the monotonic clock,
    /// so a wall-clock jump neither drops live entries nor keeps them forever.
    fn deadline(&self, at: Instant) -> u32 {
        let since = at.saturating_duration_since(self.epoch);
        u32::try_from(since.as_secs() + u64::from(since.subsec_nanos() > 0)).unwrap_or(u32::MAX)
    }

    /// Now, in the same seconds, rounded down: an entry goes only once its deadline (rounded
    /// up) has passed, never before its state expires.
    fn today(&self, now: Instant) -> u32 {
        u32::try_from(now.saturating_duration_since(self.epoch).as_secs()).unwrap_or(u32::MAX)
    }
}

impl Default for MemoryGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl StateGuard for MemoryGuard {
    fn consume<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Consumed> {
        Box::pin(std::future::ready(self.consume_now(claim)))
    }
}

impl MemoryGuard {
    /// [`StateGuard::consume`], which never waits here.
    pub fn consume_now(&self, claim: &Claim) -> Consumed {
        self.consume_at(claim, Instant::now())
    }

    fn consume_at(&self, claim: &Claim, now: Instant) -> Consumed {
        let today = self.today(now);
        let expiry = unix_millis(claim.expires());
        // `now + keep_for` overflows only for lifetimes past what the clock holds: kept.
        let deadline = now.checked_add(claim.keep_for()).map_or(u32::MAX, |at| self.deadline(at));
        // Sealed before this guard existed: a guard of an earlier process may have seen
        // it claimed. (States carry whole milliseconds: one of slack.)
        if unix_millis(claim.issued()).saturating_add(1) < self.born {
            return Consumed::Again;
        }
        let key = short_digest(claim.digest());
        let now_ms = unix_millis(SystemTime::now());
        let mut used = self.lock();
        used.tidy(today, now_ms);
        let holds = used.change(claim.owner(), now_ms, |owner| {
            owner.prune(today);
            if expiry <= owner.floor || owner.ids.contains(&key) {
                return None;
            }
            owner.ids.insert(key);
            owner.by_deadline.push(Reverse((deadline, expiry, key)));
            Some(owner.ids.len())
        });
        let Some(holds) = holds else { return Consumed::Again };
        if holds > self.share {
            used.give_up_oldest(claim.owner(), today, now_ms);
        } else if used.total > self.capacity {
            used.make_room(today, now_ms);
        }
        Consumed::First
    }
}

impl Used {
    /// Runs `change` on the owner `id` (made if new), then puts it back in the indexes;
    /// an owner left with nothing to remember (no entry, and its floor passed) is dropped.
    fn change<T>(&mut self, id: u32, now_ms: u64, change: impl FnOnce(&mut Owner) -> T) -> T {
        let owner = self.owners.entry(id).or_default();
        let before = owner.standing();
        let changed = change(owner);
        let after = owner.standing();
        let forgotten = after.held == 0 && after.floor <= now_ms;
        if forgotten {
            self.owners.remove(&id);
        }
        self.restand(id, before, after, forgotten);
        changed
    }

    /// Moves the owner `id` from where it stood (`before`) to where it stands now.
    fn restand(&mut self, id: u32, before: Standing, after: Standing, forgotten: bool) {
        self.total = self.total - before.held + after.held;
        if before.held != after.held {
            if before.held > 0 {
                self.by_size.remove(&(before.held, id));
            }
            if after.held > 0 {
                self.by_size.insert((after.held, id));
            }
        }
        if before.soonest != after.soonest {
            if let Some(soonest) = before.soonest {
                self.by_soonest.remove(&(soonest, id));
            }
            if let Some(soonest) = after.soonest {
                self.by_soonest.insert((soonest, id));
            }
        }
        if before.held == 0 {
            self.by_floor.remove(&(before.floor, id));
        }
        if after.held == 0 && !forgotten {
            self.by_floor.insert((after.floor, id));
        }
    }

    /// Prunes the owners whose soonest entry has expired, and forgets the owners whose
    /// floor has passed: a few of each, the most overdue first.
    fn tidy(&mut self, today: u32, now_ms: u64) {
        for _ in 0..TIDY_PER_CLAIM {
            match self.by_soonest.first() {
                Some(&(soonest, id)) if soonest <= today => self.change(id, now_ms, |owner| owner.prune(today)),
                _ => break,
            };
        }
        for _ in 0..TIDY_PER_CLAIM {
            match self.by_floor.first() {
                Some(&(floor, id)) if floor <= now_ms => self.change(id, now_ms, |_| ()),
                _ => break,
            }
        }
    }

    /// Frees one entry of a guard past its capacity: an expired one, anyone's, if one is
    /// due, else the heaviest owner's oldest.
    fn make_room(&mut self, today: u32, now_ms: u64) {
        if let Some(&(soonest, id)) = self.by_soonest.first() {
            if soonest <= today {
                self.change(id, now_ms, |owner| owner.prune(today));
                return;
            }
        }
        if let Some(&(_, heaviest)) = self.by_size.last() {
            self.give_up_oldest(heaviest, today, now_ms);
        }
    }

    /// Frees one entry of `id`: an expired one if it has any, else its oldest live one,
    /// whose state (and every older one of this owner) is refused from now on.
    fn give_up_oldest(&mut self, id: u32, today: u32, now_ms: u64) {
        if !self.owners.contains_key(&id) {
            return;
        }
        self.change(id, now_ms, |owner| {
            if owner.prune(today) > 0 {
                return;
            }
            if let Some(Reverse((_, expiry, key))) = owner.by_deadline.pop() {
                owner.ids.remove(&key);
                owner.floor = owner.floor.max(expiry);
            }
        });
    }
}

impl Owner {
    fn standing(&self) -> Standing {
        let soonest = self.by_deadline.peek().map(|Reverse((deadline, _, _))| *deadline);
        Standing { held: self.ids.len(), soonest, floor: self.floor }
    }

    /// Drops the entries whose state has expired by `today`: each is popped once, so the
    /// cost is amortized over the claims that inserted them. How many went.
    fn prune(&mut self, today: u32) -> usize {
        let mut pruned = 0;
        while let Some(Reverse((deadline, _, key))) = self.by_deadline.peek().copied() {
            if deadline == u32::MAX || deadline > today {
                break;
            }
            self.by_deadline.pop();
            self.ids.remove(&key);
            pruned += 1;
        }
        pruned
    }
}

/// `at` in unix milliseconds: a state's expiry, as its token carries it.
fn unix_millis(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_millis()).unwrap_or(u64::MAX)
}

/// Hashes a key that is a digest already by taking it as it is: hashing it again (the
/// default SipHash) would add nothing but time. A client cannot aim at buckets, since the
/// digest is of a token only the server can seal.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed; any other input still hashes, just less well.
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// The first 64 bits of a state's digest: a false "used" needs two of the states live at
/// once among 2^32, and even then only refuses an honest retry.
fn short_digest(digest: &[u8; 32]) -> u64 {
    let mut half = [0u8; 8];
    half.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(half)
}

#[cfg(test)]
mod tests;
