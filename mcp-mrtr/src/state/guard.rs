//! Single-use request states: a state that has opened once is refused the second time.
//!
//! Sealing bounds *where* a state opens (server, method, target, arguments, caller) and
//! *until when*; within that window a client could present it again and run the round
//! it closed once more, `once!` steps included. So every server refuses a state it has
//! seen, by default with a [`MemoryGuard`]. The price: a client that retries a round
//! after a network failure is refused and starts the call over.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use sha2::{Digest, Sha256};

/// What a [`StateGuard`] says about a state presented to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumed {
    /// First use: it is now recorded.
    First,
    /// It was used before: refuse it.
    Again,
    /// The guard cannot record another state right now (full, or its store is down).
    /// The state is refused, since it could not be marked used.
    Unavailable,
}

/// Remembers which request states have been used.
///
/// [`consume`](StateGuard::consume) **must be an atomic insert-if-absent**: when several
/// requests present the same state at once, exactly one may see [`Consumed::First`]. A
/// check followed by a separate write (a Redis `GET` then `SET`) lets every one of them
/// through. With Redis, one `SET id 1 NX PX <keep_for in ms>` does it.
///
/// The in-memory [`MemoryGuard`] serves one instance. Several instances behind a load
/// balancer need one backed by a store they share: `RedisGuard` (the `redis` feature).
/// A store that cannot be reached answers [`Consumed::Unavailable`]: the state is refused,
/// never let through unrecorded.
pub trait StateGuard: Send + Sync + 'static {
    /// Records the state `id` as used, for at least `keep_for` (how long the state stays
    /// valid), unless it is recorded already.
    fn consume<'a>(&'a self, id: &'a str, keep_for: Duration) -> BoxFuture<'a, Consumed>;
}

/// A [`StateGuard`] in this process's memory, for a single instance.
///
/// Each entry takes about 100 bytes and is kept until its state expires. Expired entries
/// are dropped in expiry order, so a call costs O(log n). At the capacity (default
/// [`MemoryGuard::DEFAULT_CAPACITY`]) new states are refused with
/// [`Consumed::Unavailable`] until old ones expire: forgetting a used state instead would
/// let it be replayed.
#[derive(Debug)]
pub struct MemoryGuard {
    capacity: usize,
    used: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    /// The ids recorded, as the first 128 bits of their SHA-256 (collisions need 2^64 states).
    ids: HashSet<u128, BuildHasherDefault<DigestHasher>>,
    /// The same ids, soonest forgotten first.
    by_expiry: BinaryHeap<Reverse<(Deadline, u128)>>,
}

/// When an entry may be forgotten: monotonic, so a wall-clock jump neither drops live
/// entries nor revives expired states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Deadline {
    At(Instant),
    /// Past what `Instant` can represent: kept for the life of the process.
    Never,
}

impl MemoryGuard {
    /// Entries kept at most by [`MemoryGuard::new`]: about 100 MB when full.
    pub const DEFAULT_CAPACITY: usize = 1 << 20;

    /// An empty guard holding at most [`MemoryGuard::DEFAULT_CAPACITY`] entries.
    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// An empty guard holding at most `capacity` live entries.
    pub fn with_capacity(capacity: usize) -> Self {
        Self { capacity, used: Mutex::default() }
    }

    /// How many entries are live (not yet pruned).
    pub fn len(&self) -> usize {
        self.lock().ids.len()
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for MemoryGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl StateGuard for MemoryGuard {
    fn consume<'a>(&'a self, id: &'a str, keep_for: Duration) -> BoxFuture<'a, Consumed> {
        Box::pin(std::future::ready(self.consume_now(id, keep_for)))
    }
}

impl MemoryGuard {
    /// [`StateGuard::consume`], which never waits here.
    pub fn consume_now(&self, id: &str, keep_for: Duration) -> Consumed {
        let now = Instant::now();
        let key = short_digest(id);
        let mut used = self.lock();
        used.prune(now);
        if used.ids.contains(&key) {
            return Consumed::Again;
        }
        if used.ids.len() >= self.capacity {
            return Consumed::Unavailable;
        }
        let deadline = now.checked_add(keep_for).map_or(Deadline::Never, Deadline::At);
        used.ids.insert(key);
        used.by_expiry.push(Reverse((deadline, key)));
        Consumed::First
    }
}

impl Used {
    /// Drops the entries whose state has expired by `now`: each is popped once, so the
    /// cost is amortized over the calls that inserted them.
    fn prune(&mut self, now: Instant) {
        while let Some(Reverse((Deadline::At(at), key))) = self.by_expiry.peek().copied() {
            if at > now {
                break;
            }
            self.by_expiry.pop();
            self.ids.remove(&key);
        }
    }
}

/// Hashes a key that is a digest already by taking its low bits: hashing it again (the
/// default SipHash) would add nothing but time. A client cannot aim at buckets, since the
/// digest is of a token only the server can seal.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u128` keys are hashed; any other input still hashes, just less well.
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u128(&mut self, key: u128) {
        // Truncation intended: the low 64 bits of a digest are as random as any.
        #[allow(clippy::cast_possible_truncation)]
        let low = key as u64;
        self.0 = low;
    }
}

fn short_digest(id: &str) -> u128 {
    let hash = Sha256::digest(id.as_bytes());
    let mut half = [0u8; 16];
    half.copy_from_slice(&hash[..16]);
    u128::from_be_bytes(half)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_state_is_consumed_once_and_forgotten_after_it_expires() {
        let guard = MemoryGuard::new();
        assert_eq!(guard.consume_now("a", MINUTE), Consumed::First);
        assert_eq!(guard.consume_now("a", MINUTE), Consumed::Again);
        assert_eq!(guard.consume_now("b", MINUTE), Consumed::First);
        assert_eq!(guard.consume_now("gone", Duration::ZERO), Consumed::First);
        assert_eq!(guard.consume_now("c", MINUTE), Consumed::First, "pruning expired entries keeps the live ones");
        assert_eq!(guard.len(), 3, "the expired entry was pruned");
        assert_eq!(guard.consume_now("gone", MINUTE), Consumed::First, "an expired entry is forgotten");
        assert_eq!(guard.consume_now("b", MINUTE), Consumed::Again);
    }

    #[test]
    fn a_full_guard_refuses_new_states_and_never_forgets_live_ones() {
        let guard = MemoryGuard::with_capacity(2);
        assert_eq!(guard.consume_now("a", MINUTE), Consumed::First);
        assert_eq!(guard.consume_now("b", MINUTE), Consumed::First);
        assert_eq!(guard.consume_now("c", MINUTE), Consumed::Unavailable);
        assert_eq!(guard.consume_now("a", MINUTE), Consumed::Again, "a used state stays used at the bound");
        let expiring = MemoryGuard::with_capacity(1);
        assert_eq!(expiring.consume_now("old", Duration::ZERO), Consumed::First);
        assert_eq!(expiring.consume_now("new", MINUTE), Consumed::First, "room comes back as entries expire");
    }

    #[test]
    fn a_lifetime_past_what_the_clock_holds_is_kept_not_a_panic() {
        let guard = MemoryGuard::new();
        assert_eq!(guard.consume_now("forever", Duration::MAX), Consumed::First);
        assert_eq!(guard.consume_now("soon", Duration::ZERO), Consumed::First);
        assert_eq!(guard.consume_now("next", MINUTE), Consumed::First);
        assert_eq!(guard.consume_now("forever", Duration::MAX), Consumed::Again);
    }

    #[test]
    fn many_entries_are_pruned_in_expiry_order() {
        let guard = MemoryGuard::with_capacity(10_000);
        for i in 0..5_000 {
            let keep = if i % 2 == 0 { Duration::ZERO } else { MINUTE };
            assert_eq!(guard.consume_now(&format!("id-{i}"), keep), Consumed::First);
        }
        // The next call drops every expired (even) entry; the odd ones stay used.
        assert_eq!(guard.consume_now("one-more", MINUTE), Consumed::First);
        assert_eq!(guard.len(), 2_501);
        assert_eq!(guard.consume_now("id-1", MINUTE), Consumed::Again);
        assert_eq!(guard.consume_now("id-0", MINUTE), Consumed::First);
    }

    #[test]
    fn concurrent_presentations_of_one_state_open_once() {
        let guard = std::sync::Arc::new(MemoryGuard::new());
        let firsts: usize = std::thread::scope(|scope| {
            let handles: Vec<_> =
                (0..16).map(|_| scope.spawn(|| guard.consume_now("same", MINUTE) == Consumed::First)).collect();
            handles.into_iter().map(|h| usize::from(h.join().unwrap())).sum()
        });
        assert_eq!(firsts, 1);
    }
}
