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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use redis::Script;
use tokio::sync::OnceCell;

use super::keys::KeySpace;
use crate::{intake::request_state::Claim, intake::request_state::Consumed, intake::request_state::StateGuard};

/// `memory(key, margin)`: when the guard's memory began (Redis's ms), started again
/// (Redis's now plus `margin`) when `key` is gone or was written by another Redis process.
/// The value is `<run id>:<ms>`.
const MEMORY: &str = r"
local function memory(key, margin)
  local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local kept = redis.call('GET', key)
  if kept then
    local at = string.find(kept, ':', 1, true)
    if at and string.sub(kept, 1, at - 1) == run then return tonumber(string.sub(kept, at + 1)) end
  end
  local now = redis.call('TIME')
  local since = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + margin
  redis.call('SET', key, run .. ':' .. since)
  return since
end
";

/// KEYS: the state's key, the memory key. ARGV: keep ms, the state's issue ms, margin ms.
/// 1 first use, 0 used before, 2 sealed before the guard's memory began.
const CLAIM: &str = r"
if tonumber(ARGV[2]) + 1 < memory(KEYS[2], tonumber(ARGV[3])) then return 2 end
if redis.call('SET', KEYS[1], 1, 'NX', 'PX', ARGV[1]) then return 1 end
return 0
";

/// KEYS: the memory key. ARGV: margin ms. Starts the memory now unless it holds for this
/// process.
const BEGIN: &str = "memory(KEYS[1], tonumber(ARGV[1])) return 1";

/// The default of [`RedisGuard::clock_skew`].
const CLOCK_SKEW: Duration = Duration::from_millis(250);

/// How often each instance checks that the memory holds for the Redis process it talks
/// to, so that a restart or failover is noticed within this, not at the next claim:
/// otherwise every state sealed between the two would be refused.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// A [`StateGuard`] in Redis: one atomic script per claim (`SET key 1 NX PX <ms>`, after
/// checking the guard's memory), so exactly one of any number of instances presented
/// the same state at once sees it first, and the entry expires with the state. Made by
/// [`Redis::state_guard`](super::Redis::state_guard).
///
/// When Redis cannot be reached, states are refused ([`Consumed::Unavailable`]): the
/// client is told to try again later, and no state is ever let through unrecorded. When
/// Redis may have lost claims (emptied, restarted, failed over), states sealed before
/// are refused as possibly used (see the module docs). Keep Redis's eviction from taking
/// the guard's keys (`noeviction`, or a `volatile-*` policy: the memory key has no
/// expiry), and let the guard run `INFO` and `TIME` (an ACL user needs `+info +time`
/// beside `+get +set +evalsha +eval`).
///
/// Cost: one `EVALSHA` round trip per round that takes a `once!` step; inside it an
/// `INFO server` (about 7 µs of Redis's CPU) and, once per memory, a `TIME` and a `SET`.
/// Beside that, each instance's watch: one script a second (one per bucket, 16, on a
/// cluster).
#[derive(Clone)]
pub struct RedisGuard {
    connection: super::Link,
    keys: KeySpace,
    /// [`clock_skew`](Self::clock_skew) in milliseconds, shared with the guard's watch.
    clock_skew: Arc<AtomicU64>,
    claim: Script,
    /// Set once the memory began (or could not be begun) when the guard was made.
    begun: Arc<OnceCell<()>>,
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
        let guard = Self { connection, keys, clock_skew, claim, begun: Arc::default(), alive: Arc::default() };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(guard.clone().watch());
        }
        guard
    }

    /// Begins the memory, then checks it every [`WATCH_EVERY`] while the guard lives.
    async fn watch(self) {
        self.begin().await;
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
            // Redis wants a positive expiry; a state about to expire is kept a moment.
            let millis = u64::try_from(claim.keep_for().as_millis()).unwrap_or(u64::MAX).clamp(1, i64::MAX as u64);
            // On one Redis, the key the previous release wrote (the hex of the whole
            // digest), so a rolling upgrade keeps every state it recorded.
            let (key, memory) = self.keys.state(claim.digest());
            let margin = self.clock_skew.load(Ordering::Relaxed);
            let mut connection = self.connection.clone();
            let claimed: redis::RedisResult<i64> = self
                .claim
                .key(key)
                .key(memory)
                .arg(millis)
                .arg(self::millis(claim.issued()))
                .arg(margin)
                .invoke_async(&mut connection)
                .await;
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
                    tracing::warn!(%error, "the Redis state guard is unavailable; refusing the state");
                    Consumed::Unavailable
                }
            }
        })
    }
}
