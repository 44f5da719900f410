//! [`RedisGuard`]: single-use request states across instances.
//!
//! Claims live in Redis, so a Redis that goes back in time forgets them: one restarted
//! empty or flushed, one restarted from a snapshot older than its last claims (an RDB, an
//! AOF behind by its fsync interval), a replica promoted before the last claims reached
//! it (replication is asynchronous). Any state claimed in the lost stretch would open once
//! more, and its `once!` step run again. So the guard keeps the moment its memory began,
//! with the run id of the Redis process that holds it (`INFO server`'s `run_id`, new for
//! every start and different on every replica), in a key without expiry. Every claim
//! checks it in the same script: when the key is gone (emptied) or names another process
//! (restarted, failed over), the data may have gone back, so the memory starts again and
//! every state sealed before is refused; its call starts over. Nothing in a snapshot or a
//! replica can pass for the running process, so no loss goes unnoticed; the price is that
//! a restart or failover that lost nothing also restarts the calls in their `once!`
//! rounds. A run of the soak harness (issue 24) found the emptied case (31 steps taken
//! twice); the third audit's C4 the snapshot case.
//!
//! Eviction is one more way to forget (the fifth audit's D2: under a `volatile-*` policy
//! a full Redis evicted claims, and a claimed step ran again). So the memory also keeps
//! Redis's `evicted_keys` count (`INFO stats`) and starts again when it moved: a Redis that
//! evicts is a Redis that forgets. The guard warns at start unless the policy is
//! `noeviction`.
//!
//! Each instance also runs that check every second ([`WATCH_EVERY`]), so a restart or
//! failover is noticed within a second rather than at the next claim, which may come
//! hours later and would refuse every state sealed in between.
//!
//! The moment is Redis's (`TIME`), not an instance's, and a state's sealing time is its
//! instance's: a sealer whose clock runs ahead of Redis's by Δ makes the states it
//! sealed up to Δ before the memory began look newer. A memory started again (by a claim
//! or the watch, so while instances were sealing) therefore begins
//! [`clock_skew`](RedisGuard::clock_skew) later than Redis's now; only the first check of
//! a new guard, before its instance sealed anything, begins it at Redis's now.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use redis::Script;
use tokio::sync::OnceCell;

use super::keys::KeySpace;
use crate::{intake::request_state::Claim, intake::request_state::Consumed, intake::request_state::StateGuard};

/// `memory(key, margin)`: when the guard's memory began (Redis's ms), started again
/// (Redis's now plus `margin`) when `key` is gone, was written by another Redis process, or
/// Redis has evicted keys since it was written (an evicting Redis may have dropped claims).
/// The value is `<run id>:<evicted keys>:<ms>`.
const MEMORY: &str = r"
local function memory(key, margin)
  local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local evicted = string.match(redis.call('INFO', 'stats'), 'evicted_keys:(%d+)') or '?'
  local held = run .. ':' .. evicted
  local kept = redis.call('GET', key)
  if kept then
    local at = string.find(kept, ':%d+$')
    if at and string.sub(kept, 1, at - 1) == held then return tonumber(string.sub(kept, at + 1)) end
  end
  local now = redis.call('TIME')
  local since = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + margin
  redis.call('SET', key, held .. ':' .. since)
  return since
end
";

/// KEYS: the client's claims, its floor, the memory key. ARGV: the claim's digest, the
/// state's expiry ms, its issue ms, margin ms, the client's share.
/// 1 first use, 0 used before (or given up), 2 sealed before the guard's memory began.
///
/// A client's claims are a sorted set scored by expiry: the expired go first (with the
/// margin, for instances whose clocks run behind Redis's), and past its share its oldest
/// is given up and its expiry becomes the client's floor, below which its states are
/// refused: nothing that could still open is forgotten.
const CLAIM: &str = r"
local margin = tonumber(ARGV[4])
if tonumber(ARGV[3]) + 1 < memory(KEYS[3], margin) then return 2 end
local expiry = tonumber(ARGV[2])
local floor = tonumber(redis.call('GET', KEYS[2]) or '0')
if expiry <= floor then return 0 end
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - margin))
if redis.call('ZADD', KEYS[1], 'NX', expiry, ARGV[1]) == 0 then return 0 end
if redis.call('ZCARD', KEYS[1]) > tonumber(ARGV[5]) then
  local given = tonumber(redis.call('ZPOPMIN', KEYS[1])[2])
  if given > floor then
    redis.call('SET', KEYS[2], given)
    redis.call('PEXPIREAT', KEYS[2], given + margin)
  end
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(last[2]) + margin)
return 1
";

/// KEYS: the memory key. ARGV: margin ms. Starts the memory now unless it holds for this
/// process.
const BEGIN: &str = "memory(KEYS[1], tonumber(ARGV[1])) return 1";

/// The default of [`RedisGuard::clock_skew`].
const CLOCK_SKEW: Duration = Duration::from_millis(250);

/// The default of [`RedisGuard::share`]: `MemoryGuard`'s default share.
const SHARE: u64 = 1 << 18;

/// How often each instance checks that the memory holds for the Redis process it talks
/// to, so that a restart or failover is noticed within this, not at the next claim:
/// otherwise every state sealed between the two would be refused.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// A [`StateGuard`] in Redis: one atomic script per claim (the claim's digest added to
/// its client's set unless it is there, after checking the guard's memory), so exactly
/// one of any number of instances presented the same step at once sees it first, and
/// each entry is dropped once its call has ended (no state of it opens any more). Made by
/// [`Redis::state_guard`](super::Redis::state_guard).
///
/// When Redis cannot be reached, states are refused ([`Consumed::Unavailable`]): the
/// client is told to start the call over, and no step is ever taken unrecorded. When
/// Redis may have lost claims (emptied, restarted, failed over, or evicting keys),
/// states sealed before are refused as possibly used (see the module docs). Run the
/// guard's Redis with `maxmemory-policy noeviction`: a Redis that evicts forgets claims,
/// so every eviction starts the memory again and the calls in their `once!` rounds start
/// over; the guard warns at start when the policy is another (or cannot be read). Let the
/// guard run `INFO`, `TIME` and `CONFIG GET` (the ACL user the many-instances guide
/// lists has every command the guard needs).
///
/// Like [`MemoryGuard`](crate::request_state::MemoryGuard), it keeps at most a
/// [`share`](Self::share) of entries per client (262,144 by default, about 30 MB of Redis
/// at 120 bytes an entry, measured with `MEMORY USAGE`): past it the client's oldest entry is given up and its states
/// expiring no later are refused, so one client cannot grow Redis without bound.
///
/// Cost: one `EVALSHA` round trip per `once!` step taken; inside it `INFO server` and
/// `INFO stats` (about 15 µs of Redis's CPU) and a few sorted-set commands. Beside that,
/// each instance's watch: one script a second (one per bucket, 16, on a cluster).
#[derive(Clone)]
pub struct RedisGuard {
    connection: super::Link,
    keys: KeySpace,
    /// [`clock_skew`](Self::clock_skew) in milliseconds, shared with the guard's watch.
    clock_skew: Arc<AtomicU64>,
    share: u64,
    claim: Script,
    /// Set once the memory began (or could not be begun) when the guard was made.
    begun: Arc<OnceCell<()>>,
    /// Whether the last claim found Redis away: an outage is logged when it begins and
    /// ends, not once per refused claim.
    away: Arc<AtomicBool>,
    /// Dropped with the last clone of the guard, which ends its watch.
    alive: Arc<()>,
}

impl std::fmt::Debug for RedisGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisGuard")
            .field("keys", &self.keys)
            .field("clock_skew_ms", &self.clock_skew.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl RedisGuard {
    pub(super) fn new(connection: super::Link, keys: KeySpace) -> Self {
        let claim = Script::new(&format!("{MEMORY}{CLAIM}"));
        let clock_skew = Arc::new(AtomicU64::new(millis_of(CLOCK_SKEW)));
        let guard = Self {
            connection,
            keys,
            clock_skew,
            share: SHARE,
            claim,
            begun: Arc::default(),
            away: Arc::default(),
            alive: Arc::default(),
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(guard.clone().watch());
        }
        guard
    }

    /// Begins the memory, then checks it every [`WATCH_EVERY`] while the guard lives.
    async fn watch(self) {
        self.begin().await;
        warn_unless_noeviction(&self.connection).await;
        let alive = Arc::downgrade(&self.alive);
        let (connection, keys, skew) = (self.connection.clone(), self.keys.clone(), self.clock_skew.clone());
        drop(self);
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            if alive.strong_count() == 0 {
                return;
            }
            start_memories(&connection, &keys, skew.load(Ordering::Relaxed)).await;
        }
    }

    /// Begins the memory (each bucket's, on a cluster) now, before this instance seals
    /// anything, unless it holds already; once per guard, and every claim waits for it.
    /// Otherwise a claim would start it with the margin for fast clocks, and refuse states
    /// this instance sealed a moment before. No margin here: this instance has sealed
    /// nothing yet. (Not the `memory-since` key of releases before: its plain number
    /// would break their script, so during a rolling upgrade each keeps its own.)
    async fn begin(&self) {
        self.begun.get_or_init(|| start_memories(&self.connection, &self.keys, 0)).await;
    }

    /// How far an instance's clock may run ahead of Redis's (default 250 ms, ten times
    /// what NTP keeps hosts within). When Redis has lost claims, states sealed up to this
    /// long after the memory starts again are refused too, so a fast clock cannot pass a
    /// state sealed before for one sealed after. Set it above the worst skew between your
    /// hosts and Redis; it costs the calls whose `once!` rounds were sealed that long
    /// after a Redis restart or failover (they start over, as the calls in flight at that
    /// moment do).
    pub fn clock_skew(self, skew: Duration) -> Self {
        self.clock_skew.store(millis_of(skew), Ordering::Relaxed);
        self
    }

    /// The most entries one client holds (default 262,144) before its own oldest are
    /// given up (and its states expiring no later refused): what one client can make
    /// Redis hold is this × about 120 bytes. Size it as `MemoryGuard::with_share`: an
    /// honest client's `once!` steps per second × the call lifetime, with room to spare.
    pub fn share(mut self, share: u64) -> Self {
        self.share = share.max(1);
        self
    }
}

/// Says, once at start, when the guard's Redis may evict its keys (or will not say):
/// a Redis that evicts forgets claims, and every eviction makes calls start over.
async fn warn_unless_noeviction(connection: &super::Link) {
    let mut connection = connection.clone();
    let policy: redis::RedisResult<Vec<String>> =
        redis::cmd("CONFIG").arg("GET").arg("maxmemory-policy").query_async(&mut connection).await;
    match policy.as_deref() {
        Ok([_, policy]) if policy == "noeviction" => {}
        Ok([_, policy]) => tracing::warn!(
            policy,
            "the Redis of the state guard may evict keys (maxmemory-policy is not noeviction): each eviction \
             makes the calls in their once! rounds start over; set maxmemory-policy noeviction"
        ),
        _ => tracing::warn!(
            "cannot read the maxmemory-policy of the state guard's Redis (CONFIG GET refused?): make sure it \
             is noeviction, or evictions will make calls in their once! rounds start over"
        ),
    }
}

/// Starts each memory of `keys` that does not hold for the Redis process it is on: now,
/// plus `margin` ms.
async fn start_memories(connection: &super::Link, keys: &KeySpace, margin: u64) {
    let begin = Script::new(&format!("{MEMORY}{BEGIN}"));
    let buckets = keys.memories().into_iter().map(|key| {
        let (begin, mut connection) = (&begin, connection.clone());
        async move { begin.key(key).arg(margin).invoke_async::<i64>(&mut connection).await }
    });
    for begun in futures_util::future::join_all(buckets).await {
        if let Err(error) = begun {
            tracing::debug!(%error, "could not check the state guard's memory; the next claim will");
        }
    }
}

fn millis_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn millis(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(u64::MAX)
}

impl StateGuard for RedisGuard {
    fn consume<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Consumed> {
        Box::pin(async move {
            self.begin().await;
            let keys = self.keys.claims(claim.owner());
            let margin = self.clock_skew.load(Ordering::Relaxed);
            let mut connection = self.connection.clone();
            let claimed: redis::RedisResult<i64> = self
                .claim
                .key(keys.claims)
                .key(keys.floor)
                .key(keys.memory)
                .arg(&claim.digest()[..16])
                .arg(self::millis(claim.expires()))
                .arg(self::millis(claim.issued()))
                .arg(margin)
                .arg(self.share)
                .invoke_async(&mut connection)
                .await;
            if claimed.is_ok() && self.away.swap(false, Ordering::Relaxed) {
                tracing::info!("the Redis state guard answers again");
            }
            match claimed {
                Ok(1) => Consumed::First,
                Ok(0) => Consumed::Again,
                Ok(_) => {
                    tracing::debug!(
                        "refused a state sealed before the guard's memory began (Redis may have lost claims)"
                    );
                    Consumed::Again
                }
                Err(error) => {
                    if self.away.swap(true, Ordering::Relaxed) {
                        tracing::debug!(%error, "the Redis state guard is still unavailable; refusing the step");
                    } else {
                        tracing::warn!(%error, "the Redis state guard is unavailable: steps are refused until it answers");
                    }
                    Consumed::Unavailable
                }
            }
        })
    }
}
