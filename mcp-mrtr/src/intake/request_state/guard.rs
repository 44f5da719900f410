//! Once per call, where it buys something: each `once!` step of a call is claimed the
//! first time a round of the call is about to take it, and refused for any second claim,
//! whichever state of the call the second round opened.
//!
//! Sealing bounds *where* a state opens (server, method, target, arguments, caller) and
//! *until when*; within that window a client could present it again (or a sibling of it,
//! sealed by a round that took no step) and run the round it closed once more. Only
//! `once!` steps make that matter: a round without one has no side effect to repeat, so
//! it never touches the guard, and honest traffic at any speed does not fill it. The
//! runtime claims lazily, just before the step runs, so parallel presentations of the
//! call's states still run the step once.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;

/// What a [`StateGuard`] says about a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumed {
    /// First use: it is now recorded.
    First,
    /// It was used before, or may have been (its entry was given up): refuse it.
    Again,
    /// The guard cannot record another state right now (its store is down).
    /// The state is refused, since it could not be marked used.
    Unavailable,
}

/// One step of one call, claimed before a round takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    digest: [u8; 32],
    owner: u32,
    expires: SystemTime,
    issued: SystemTime,
}

impl Claim {
    /// A claim of what `digest` names (the runtime's: a SHA-256 of the call's id and the
    /// step's key), counted against the client `owner` (an opaque number the runtime
    /// derives from who started the call), kept until `expires` (when no state of the call
    /// opens any more), issued now (see [`issued_at`](Self::issued_at)).
    pub fn new(digest: [u8; 32], owner: u32, expires: SystemTime) -> Self {
        Self { digest, owner, expires, issued: SystemTime::now() }
    }

    /// The claim of a state sealed at `issued`. A guard whose memory began later (it
    /// was created, or its store was emptied, after that) cannot know whether the state
    /// was claimed before, so it refuses it.
    pub fn issued_at(mut self, issued: SystemTime) -> Self {
        self.issued = issued;
        self
    }

    /// When the state was sealed.
    pub fn issued(&self) -> SystemTime {
        self.issued
    }

    /// What is claimed, as a digest: the guard never holds the call's id, the step's key or
    /// anything the state carries.
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// Who the claim counts against: the same number for every state of the calls one
    /// client started (an authenticated caller, or an address).
    pub fn owner(&self) -> u32 {
        self.owner
    }

    /// When no state of the call opens any more: its entry must be kept at least until then.
    pub fn expires(&self) -> SystemTime {
        self.expires
    }

    /// How long from now the entry must be kept.
    pub fn keep_for(&self) -> Duration {
        self.expires.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO)
    }
}

/// Remembers which steps of which calls have been claimed.
///
/// [`consume`](StateGuard::consume) **must be an atomic insert-if-absent**: when several
/// requests claim the same step at once, exactly one may see [`Consumed::First`]. A
/// check followed by a separate write (a Redis `GET` then `SET`) lets every one of them
/// through. With Redis, one `SET id 1 NX PX <keep_for in ms>` does it.
///
/// The in-memory [`MemoryGuard`] serves one instance. Several instances behind a load
/// balancer need one backed by a store they share: `RedisGuard` (the `redis` feature).
/// A store that cannot be reached answers [`Consumed::Unavailable`]: the state is refused,
/// never let through unrecorded.
///
/// A guard remembers claims from some moment on: when it was created, or when its store
/// was last emptied. A state sealed before that moment may have been claimed in a memory
/// it no longer has, so a guard refuses it ([`Consumed::Again`], via [`Claim::issued`]):
/// after a restart, calls in progress start over rather than take a step twice.
pub trait StateGuard: Send + Sync + 'static {
    /// Records the claim until it expires, unless it is recorded already.
    fn consume<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Consumed>;
}

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

#[derive(Debug, Default)]
struct Used {
    owners: HashMap<u32, Owner>,
    total: usize,
    /// Claims since the last sweep of every owner.
    since_sweep: usize,
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

/// Claims between two sweeps of every owner's expired entries.
const SWEEP_EVERY: usize = 4_096;

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

    /// How many entries are held (expired ones until they are swept).
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
        let expiry = unix_millis(claim.expires);
        // `now + keep_for` overflows only for lifetimes past what the clock holds: kept.
        let deadline = now.checked_add(claim.keep_for()).map_or(u32::MAX, |at| self.deadline(at));
        // Sealed before this guard existed: a guard of an earlier process may have seen
        // it claimed. (States carry whole milliseconds: one of slack.)
        if unix_millis(claim.issued).saturating_add(1) < self.born {
            return Consumed::Again;
        }
        let key = short_digest(&claim.digest);
        let mut used = self.lock();
        used.since_sweep += 1;
        if used.since_sweep >= SWEEP_EVERY {
            used.sweep(today);
        }
        let owner = used.owners.entry(claim.owner).or_default();
        let pruned = owner.prune(today);
        if expiry <= owner.floor || owner.ids.contains(&key) {
            used.total -= pruned;
            return Consumed::Again;
        }
        owner.ids.insert(key);
        owner.by_deadline.push(Reverse((deadline, expiry, key)));
        let holds = owner.ids.len();
        used.total = used.total + 1 - pruned;
        if holds > self.share {
            used.give_up_oldest(claim.owner, today);
        } else if used.total > self.capacity {
            let heaviest = used.owners.iter().max_by_key(|(_, owner)| owner.ids.len()).map(|(id, _)| *id);
            if let Some(heaviest) = heaviest {
                used.give_up_oldest(heaviest, today);
            }
        }
        Consumed::First
    }
}

impl Used {
    /// Frees one entry of `owner`: an expired one if it has any, else its oldest live
    /// one, whose state (and every older one of this owner) is refused from now on.
    fn give_up_oldest(&mut self, owner_id: u32, today: u32) {
        let Some(owner) = self.owners.get_mut(&owner_id) else { return };
        let pruned = owner.prune(today);
        if pruned == 0 {
            if let Some(Reverse((_, expiry, key))) = owner.by_deadline.pop() {
                owner.ids.remove(&key);
                owner.floor = owner.floor.max(expiry);
                self.total -= 1;
            }
        }
        self.total -= pruned;
    }

    /// Drops every owner's expired entries, and owners with nothing left to remember.
    fn sweep(&mut self, today: u32) {
        self.since_sweep = 0;
        let mut pruned = 0;
        let now = unix_millis(SystemTime::now());
        self.owners.retain(|_, owner| {
            pruned += owner.prune(today);
            // A floor still in the future still refuses states that could open.
            !owner.ids.is_empty() || owner.floor > now
        });
        self.total -= pruned;
    }
}

impl Owner {
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
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    fn claim(id: &str, owner: u32, keep_for: Duration) -> Claim {
        let expires =
            SystemTime::now().checked_add(keep_for).unwrap_or(UNIX_EPOCH + Duration::from_secs(u64::from(u32::MAX)));
        Claim::new(Sha256::digest(id.as_bytes()).into(), owner, expires)
    }

    #[test]
    fn a_state_sealed_before_the_guard_was_made_is_refused() {
        let sealed = SystemTime::now() - Duration::from_secs(5);
        let guard = MemoryGuard::new();
        // A restarted process: the state may have been claimed by the one before.
        assert_eq!(guard.consume_now(&claim("old", 1, MINUTE).issued_at(sealed)), Consumed::Again);
        let fresh = claim("new", 1, MINUTE).issued_at(SystemTime::now());
        assert_eq!(guard.consume_now(&fresh), Consumed::First);
        assert_eq!(guard.consume_now(&fresh), Consumed::Again);
    }

    #[test]
    fn a_state_is_consumed_once_and_forgotten_after_it_expires() {
        let guard = MemoryGuard::new();
        assert_eq!(guard.consume_now(&claim("a", 1, MINUTE)), Consumed::First);
        assert_eq!(guard.consume_now(&claim("a", 1, MINUTE)), Consumed::Again);
        assert_eq!(guard.consume_now(&claim("b", 1, MINUTE)), Consumed::First);
        assert_eq!(guard.consume_now(&claim("gone", 1, Duration::ZERO)), Consumed::First);
        assert_eq!(guard.consume_now(&claim("c", 1, MINUTE)), Consumed::First);
        assert_eq!(guard.len(), 4, "an expired entry is kept until its deadline's second has passed");
        let later = Instant::now() + Duration::from_secs(2);
        assert_eq!(guard.consume_at(&claim("d", 1, MINUTE), later), Consumed::First, "pruning keeps the live ones");
        assert_eq!(guard.len(), 4, "the expired entry was pruned");
        assert_eq!(guard.consume_now(&claim("b", 1, MINUTE)), Consumed::Again);
    }

    #[test]
    fn a_full_guard_gives_up_the_heaviest_clients_oldest_and_refuses_what_it_gave_up() {
        let guard = MemoryGuard::with_capacity(4).with_share(4);
        let heavy: Vec<Claim> = (1..=3u32).map(|n| claim(&format!("h{n}"), 1, MINUTE * n)).collect();
        for c in &heavy {
            assert_eq!(guard.consume_now(c), Consumed::First);
        }
        assert_eq!(guard.consume_now(&claim("light", 2, MINUTE)), Consumed::First);
        assert_eq!(guard.consume_now(&claim("newcomer", 3, MINUTE)), Consumed::First, "never refused for room");
        assert_eq!(guard.len(), 4);
        assert_eq!(guard.consume_now(&heavy[0]), Consumed::Again, "the given-up state stays refused");
        assert_eq!(guard.consume_now(&claim("older-h", 1, MINUTE / 2)), Consumed::Again, "below the floor");
        assert_eq!(guard.consume_now(&claim("light", 2, MINUTE)), Consumed::Again, "the light client kept its entry");
        assert_eq!(guard.consume_now(&claim("newer-h", 1, MINUTE * 5)), Consumed::First, "above the floor");
    }

    #[test]
    fn one_client_past_its_share_gives_up_only_its_own_entries() {
        let guard = MemoryGuard::with_capacity(100).with_share(2);
        assert_eq!(guard.consume_now(&claim("other", 9, MINUTE)), Consumed::First);
        for n in 0..10u32 {
            assert_eq!(
                guard.consume_now(&claim(&format!("f{n}"), 1, MINUTE + Duration::from_secs(n.into()))),
                Consumed::First
            );
        }
        assert_eq!(guard.len(), 3, "the flooder holds its share, the other client its entry");
        assert_eq!(guard.consume_now(&claim("other", 9, MINUTE)), Consumed::Again);
    }

    #[test]
    fn a_lifetime_past_what_the_clock_holds_is_kept_not_a_panic() {
        let guard = MemoryGuard::new();
        assert_eq!(guard.consume_now(&claim("forever", 1, Duration::MAX)), Consumed::First);
        assert_eq!(guard.consume_now(&claim("soon", 1, Duration::ZERO)), Consumed::First);
        assert_eq!(guard.consume_now(&claim("next", 1, MINUTE)), Consumed::First);
        assert_eq!(guard.consume_now(&claim("forever", 1, Duration::MAX)), Consumed::Again);
    }

    #[test]
    fn many_entries_are_pruned_in_expiry_order() {
        let guard = MemoryGuard::with_capacity(10_000).with_share(10_000);
        for i in 0..5_000 {
            let keep = if i % 2 == 0 { Duration::ZERO } else { MINUTE };
            assert_eq!(guard.consume_now(&claim(&format!("id-{i}"), 1, keep)), Consumed::First);
        }
        let later = Instant::now() + Duration::from_secs(2);
        assert_eq!(guard.consume_at(&claim("one-more", 1, MINUTE), later), Consumed::First);
        assert_eq!(guard.len(), 2_501);
        assert_eq!(guard.consume_now(&claim("id-1", 1, MINUTE)), Consumed::Again);
    }

    #[test]
    fn an_entry_is_never_pruned_before_its_state_expires() {
        let guard = MemoryGuard::new();
        let soon = claim("soon", 1, Duration::from_millis(900));
        assert_eq!(guard.consume_now(&soon), Consumed::First);
        // Whatever the fraction of the second now is, 0.8 s later the state is still valid.
        let later = Instant::now() + Duration::from_millis(800);
        assert_eq!(guard.consume_at(&claim("other", 1, MINUTE), later), Consumed::First);
        assert_eq!(guard.consume_at(&soon, later), Consumed::Again);
    }

    #[test]
    fn concurrent_claims_of_one_state_succeed_once() {
        let guard = std::sync::Arc::new(MemoryGuard::new());
        let same = claim("same", 1, MINUTE);
        let firsts: usize = std::thread::scope(|scope| {
            let handles: Vec<_> =
                (0..16).map(|_| scope.spawn(|| guard.consume_now(&same) == Consumed::First)).collect();
            handles.into_iter().map(|h| usize::from(h.join().unwrap())).sum()
        });
        assert_eq!(firsts, 1);
    }
}
