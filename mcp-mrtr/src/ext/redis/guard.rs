//! [`RedisGuard`]: single-use request states across instances.
//!
//! Claims live in Redis, so a Redis emptied by a restart without persistence (or a
//! `FLUSHALL`) forgets them: every state claimed before would open once more, and its
//! `once!` step run again. So the guard also keeps the moment its memory began, in a key
//! of its own without expiry. A claim finds it gone exactly when the store was emptied;
//! it then starts the memory again, now, and every state sealed before that is refused
//! (its call starts over). A run of the soak harness (issue 24) found this: 31 steps
//! taken twice after an empty Redis restart, none with it.

use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use redis::aio::ConnectionManager;
use redis::Script;

use crate::{intake::request_state::Claim, intake::request_state::Consumed, intake::request_state::StateGuard};

/// KEYS: the state's key, the memory key. ARGV: keep ms, now ms, the state's issue ms.
/// 1 first use, 0 used before, 2 sealed before the guard's memory began.
const CLAIM: &str = r"
local since = redis.call('GET', KEYS[2])
if not since then
  redis.call('SET', KEYS[2], ARGV[2])
  since = ARGV[2]
end
if tonumber(ARGV[3]) + 1 < tonumber(since) then return 2 end
if redis.call('SET', KEYS[1], 1, 'NX', 'PX', ARGV[1]) then return 1 end
return 0
";

/// A [`StateGuard`] in Redis: one atomic script per claim (`SET key 1 NX PX <ms>`, after
/// checking the guard's memory), so exactly one of any number of instances presented
/// the same state at once sees it first, and the entry expires with the state. Made by
/// [`Redis::state_guard`](super::Redis::state_guard).
///
/// When Redis cannot be reached, states are refused ([`Consumed::Unavailable`]): the
/// client is told to try again later, and no state is ever let through unrecorded. When
/// Redis comes back empty, states sealed before are refused as possibly used (see the
/// module docs); keep Redis's eviction from taking the guard's keys (`noeviction`, or a
/// `volatile-*` policy: the memory key has no expiry).
#[derive(Clone)]
pub struct RedisGuard {
    connection: ConnectionManager,
    prefix: String,
    memory: String,
    claim: Script,
}

impl std::fmt::Debug for RedisGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisGuard").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl RedisGuard {
    pub(super) fn new(connection: ConnectionManager, prefix: String) -> Self {
        let memory = format!("{prefix}memory-since");
        let guard = Self { connection, prefix, memory, claim: Script::new(CLAIM) };
        // The memory begins now, before this instance seals anything, unless an instance
        // started it already: otherwise the first claim starts it, and the states sealed
        // before that first claim would be refused for nothing.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (mut connection, key) = (guard.connection.clone(), guard.memory.clone());
            runtime.spawn(async move {
                let set: redis::RedisResult<()> =
                    redis::cmd("SET").arg(&key).arg(now_ms()).arg("NX").query_async(&mut connection).await;
                if let Err(error) = set {
                    tracing::debug!(%error, "could not start the state guard's memory; the first claim will");
                }
            });
        }
        guard
    }
}

fn now_ms() -> u64 {
    millis(SystemTime::now())
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
            let mut connection = self.connection.clone();
            let claimed: redis::RedisResult<i64> = self
                .claim
                .key(format!("{}{id}", self.prefix))
                .key(&self.memory)
                .arg(millis)
                .arg(now_ms())
                .arg(self::millis(claim.issued()))
                .invoke_async(&mut connection)
                .await;
            match claimed {
                Ok(1) => Consumed::First,
                Ok(0) => Consumed::Again,
                Ok(_) => {
                    tracing::debug!("refused a state sealed before the guard's memory began (Redis was emptied)");
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
