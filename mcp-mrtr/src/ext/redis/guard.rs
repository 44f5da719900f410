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
//! The moment is Redis's (`TIME`), not an instance's, and a state's sealing time is its
//! instance's: a sealer whose clock runs ahead of Redis's by Δ makes the states it
//! sealed up to Δ before the memory began look newer. A memory started by a claim (so
//! while instances were sealing) therefore begins [`clock_skew`](RedisGuard::clock_skew)
//! later than Redis's now.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use redis::Script;

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

/// KEYS: the memory key. Starts the memory now unless it holds for this process.
const BEGIN: &str = "memory(KEYS[1], 0) return 1";

/// The default of [`RedisGuard::clock_skew`].
const CLOCK_SKEW: Duration = Duration::from_millis(250);

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
#[derive(Clone)]
pub struct RedisGuard {
    connection: super::Link,
    prefix: String,
    memory: String,
    clock_skew: Duration,
    claim: Script,
}

impl std::fmt::Debug for RedisGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisGuard")
            .field("prefix", &self.prefix)
            .field("clock_skew", &self.clock_skew)
            .finish_non_exhaustive()
    }
}

impl RedisGuard {
    pub(super) fn new(connection: super::Link, prefix: String) -> Self {
        // Not the `memory-since` of releases before: its plain number would break their
        // script, so during a rolling upgrade each release keeps a memory of its own.
        let memory = format!("{prefix}memory");
        let claim = Script::new(&format!("{MEMORY}{CLAIM}"));
        let guard = Self { connection, prefix, memory, clock_skew: CLOCK_SKEW, claim };
        // The memory begins now, before this instance seals anything, unless it holds
        // already: otherwise the first claim starts it, and the states sealed before that
        // first claim would be refused for nothing. No margin: this instance has sealed
        // nothing yet.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (mut connection, key) = (guard.connection.clone(), guard.memory.clone());
            runtime.spawn(async move {
                let begun: redis::RedisResult<i64> =
                    Script::new(&format!("{MEMORY}{BEGIN}")).key(key).invoke_async(&mut connection).await;
                if let Err(error) = begun {
                    tracing::debug!(%error, "could not start the state guard's memory; the first claim will");
                }
            });
        }
        guard
    }

    /// How far an instance's clock may run ahead of Redis's (default 250 ms, ten times
    /// what NTP keeps hosts within). When Redis has lost claims, states sealed up to this
    /// long after the memory starts again are refused too, so a fast clock cannot pass a
    /// state sealed before for one sealed after. Set it above the worst skew between your
    /// hosts and Redis; it costs the calls whose `once!` rounds were sealed that long
    /// after a Redis restart or failover (they start over, as the calls in flight at that
    /// moment do).
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.clock_skew = skew;
        self
    }
}

fn millis(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(u64::MAX)
}

impl StateGuard for RedisGuard {
    fn consume<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Consumed> {
        Box::pin(async move {
            // Redis wants a positive expiry; a state about to expire is kept a moment.
            let millis = u64::try_from(claim.keep_for().as_millis()).unwrap_or(u64::MAX).clamp(1, i64::MAX as u64);
            // The hex of the whole digest: the key the previous release wrote, so a
            // rolling upgrade keeps every state it recorded.
            let id = crate::base::hex::encode(claim.digest());
            let margin = u64::try_from(self.clock_skew.as_millis()).unwrap_or(u64::MAX);
            let mut connection = self.connection.clone();
            let claimed: redis::RedisResult<i64> = self
                .claim
                .key(format!("{}{id}", self.prefix))
                .key(&self.memory)
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
