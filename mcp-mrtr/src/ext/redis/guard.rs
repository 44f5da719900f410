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
//! What the guard holds is bounded twice, as the `MemoryGuard`'s is, and a full guard
//! never refuses a claim: a client past its [`share`](RedisGuard::share) gives up its own
//! oldest entries, and past the guard's [`capacity`](RedisGuard::capacity) the heaviest
//! client of the bucket does. The capacity needs books kept beside the claims (`BOOKS`):
//! each bucket's clients by size and by end, and its count. A client is the owner number
//! sealed into its calls' states, keyed from the state key ring (`ClientId::owner_key`), so
//! one client is one share however many instances it reaches (the sixth audit's N2: with a
//! key of each process's own, it held one per instance, and nothing bounded the total, so
//! many clients could fill a `noeviction` Redis until it refused every claim and task write).
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

/// The books of a bucket of claims (`ClaimKeys`): its clients by how many claims they hold
/// (`sizes`) and by when their set expires (`ends`), and what they weigh together (`held`):
/// each client its claims, and two more for what holding any costs Redis beside them (its
/// keys, its places in the books: about 270 bytes, where a claim is 120 to 150), so that
/// the capacity bounds Redis's memory however many clients share it. The heaviest of
/// `sizes` is who gives way.
///
/// - `recount`: writes down what a client's set holds now (and when it expires); the
///   bucket's weight after.
/// - `forget_ended`: strikes out clients whose set Redis has expired, a few per call.
/// - `give_up`: pops a client's oldest claim; its expiry becomes the client's floor.
/// - `shed`: gives up a client's oldest claims, at most eight (a new client's first claim
///   weighs three; the next client to give way, if one must, does in a script of its own,
///   [`GIVE_WAY`]), while the bucket is past its capacity; the weight after.
const BOOKS: &str = r"
local function weight(claims)
  if claims > 0 then return claims + 2 end
  return 0
end
local function recount(claims, sizes, ends, held, owner, margin)
  local was = tonumber(redis.call('ZSCORE', sizes, owner) or '0')
  local holds = redis.call('ZCARD', claims)
  if holds == 0 then
    redis.call('ZREM', sizes, owner)
    redis.call('ZREM', ends, owner)
  else
    local last = redis.call('ZRANGE', claims, -1, -1, 'WITHSCORES')
    local ends_at = tonumber(last[2]) + margin
    redis.call('PEXPIREAT', claims, ends_at)
    redis.call('ZADD', sizes, holds, owner)
    redis.call('ZADD', ends, ends_at, owner)
  end
  return redis.call('INCRBY', held, weight(holds) - weight(was))
end
local function forget_ended(sizes, ends, held, now)
  for _, owner in ipairs(redis.call('ZRANGEBYSCORE', ends, '-inf', now, 'LIMIT', 0, 4)) do
    local was = tonumber(redis.call('ZSCORE', sizes, owner) or '0')
    redis.call('ZREM', sizes, owner)
    redis.call('ZREM', ends, owner)
    redis.call('INCRBY', held, -weight(was))
  end
end
local function give_up(claims, floor, margin)
  local popped = redis.call('ZPOPMIN', claims)
  if popped[2] == nil then return end
  local given = tonumber(popped[2])
  if given > tonumber(redis.call('GET', floor) or '0') then
    redis.call('SET', floor, given)
    redis.call('PEXPIREAT', floor, given + margin)
  end
end
local function shed(claims, floor, sizes, ends, held, owner, margin, capacity)
  local weighs = recount(claims, sizes, ends, held, owner, margin)
  local given = 0
  while weighs > capacity and given < 8 and redis.call('ZCARD', claims) > 0 do
    give_up(claims, floor, margin)
    weighs = recount(claims, sizes, ends, held, owner, margin)
    given = given + 1
  end
  return weighs
end
local function redis_now()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
";

/// How many clients one claim makes give way, at most, one script each: room for a new
/// client's three even when the heaviest clients hold one claim each.
const GIVE_WAY_ROUNDS: usize = 4;

/// KEYS: the client's claims, its floor, the memory key, the bucket's books (sizes, ends,
/// held). ARGV: the claim's digest, the state's expiry ms, its issue ms, margin ms, the
/// client's share, the bucket's capacity, the client's name in the books.
/// `{1, ''}` first use, `{0, ''}` used before (or given up), `{2, ''}` sealed before the
/// guard's memory began; `{1, heaviest}` first use, with the bucket past its capacity and
/// another client, `heaviest`, to give way.
///
/// A client's claims are a sorted set scored by expiry: the expired go first (with the
/// margin, for instances whose clocks run behind Redis's), and past its share its oldest
/// is given up and its expiry becomes the client's floor, below which its states are
/// refused: nothing that could still open is forgotten. Past the bucket's capacity, the
/// heaviest client of the bucket gives up its oldest the same way: this one at once, another
/// by [`GIVE_WAY`] (a script names every key it touches, and the other's are not these).
/// The books first forget clients whose claims Redis dropped (a few per claim), so they
/// weigh what Redis holds.
const CLAIM: &str = r"
local margin, capacity = tonumber(ARGV[4]), tonumber(ARGV[6])
if tonumber(ARGV[3]) + 1 < memory(KEYS[3], margin) then return {2, ''} end
local expiry = tonumber(ARGV[2])
if expiry <= tonumber(redis.call('GET', KEYS[2]) or '0') then return {0, ''} end
local now = redis_now()
forget_ended(KEYS[4], KEYS[5], KEYS[6], now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - margin))
local added = redis.call('ZADD', KEYS[1], 'NX', expiry, ARGV[1])
if added == 1 and redis.call('ZCARD', KEYS[1]) > tonumber(ARGV[5]) then give_up(KEYS[1], KEYS[2], margin) end
local weighs = recount(KEYS[1], KEYS[4], KEYS[5], KEYS[6], ARGV[7], margin)
if added == 0 then return {0, ''} end
if weighs > capacity and redis.call('ZRANGE', KEYS[4], -1, -1)[1] == ARGV[7] then
  weighs = shed(KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], ARGV[7], margin, capacity)
end
if weighs > capacity then return {1, redis.call('ZRANGE', KEYS[4], -1, -1)[1] or ''} end
return {1, ''}
";

/// KEYS: the heaviest client's claims and floor, the bucket's books (sizes, ends, held).
/// ARGV: margin ms, the bucket's capacity, the client's name in the books. Its expired
/// claims go, then its oldest while the bucket is past its capacity; `''`, or the next
/// client to give way if the bucket is still past it.
const GIVE_WAY: &str = r"
local margin, capacity = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (redis_now() - margin))
if shed(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[3], margin, capacity) > capacity then
  return redis.call('ZRANGE', KEYS[3], -1, -1)[1] or ''
end
return ''
";

/// KEYS: the memory key. ARGV: margin ms. Starts the memory now unless it holds for this
/// process.
const BEGIN: &str = "memory(KEYS[1], tonumber(ARGV[1])) return 1";

/// The default of [`RedisGuard::clock_skew`].
const CLOCK_SKEW: Duration = Duration::from_millis(250);

/// The default of [`RedisGuard::share`]: `MemoryGuard`'s default share.
const SHARE: u64 = 1 << 18;

/// The default of [`RedisGuard::capacity`]: `MemoryGuard`'s default capacity.
const CAPACITY: u64 = 1 << 20;

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
/// at 120 bytes an entry, measured with `MEMORY USAGE`) and a [`capacity`](Self::capacity)
/// in all (1,048,576, about 150 MB): past either the client's, or the heaviest client's,
/// oldest entry is given up and its states expiring no later are refused, so neither one
/// client nor many can grow Redis without bound. A client is the same number on every
/// instance that shares the key ring ([`KeyRing`](crate::request_state::KeyRing)): one
/// share, however many instances it reaches.
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
    capacity: u64,
    claim: Script,
    give_way: Script,
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
        let claim = Script::new(&format!("{MEMORY}{BOOKS}{CLAIM}"));
        let give_way = Script::new(&format!("{BOOKS}{GIVE_WAY}"));
        let clock_skew = Arc::new(AtomicU64::new(millis_of(CLOCK_SKEW)));
        let guard = Self {
            connection,
            keys,
            clock_skew,
            share: SHARE,
            capacity: CAPACITY,
            claim,
            give_way,
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

    /// The most entries the guard keeps in all, every client's together (default
    /// 1,048,576: about 150 MB of Redis). A client holding any counts two entries more, for
    /// what that costs Redis beside its entries (its keys, its place in the guard's books:
    /// measured, an entry takes about 147 bytes of `used_memory`, a client 270 more), so the
    /// bound holds in memory however many clients fill it. Past it the heaviest client's
    /// oldest entries are given up (and its states expiring no later refused), as when a
    /// client passes its share: a full guard never refuses a claim. Size it under Redis's
    /// `maxmemory` with room for the tasks: under `noeviction` a full Redis refuses every
    /// claim and every task write.
    ///
    /// On a Redis Cluster the claims are spread over 16 buckets by client, each holding a
    /// sixteenth of this; a client's share is then at most a sixteenth too.
    pub fn capacity(mut self, entries: u64) -> Self {
        self.capacity = entries.max(1);
        self
    }

    /// The capacity of one bucket of claims.
    fn bucket_capacity(&self) -> u64 {
        self.capacity.div_ceil(u64::from(self.keys.claim_buckets())).max(1)
    }

    /// Makes the client `heaviest` (as the books name it) give up its expired entries,
    /// then its oldest, for a bucket past its capacity; and the next heaviest, while the
    /// bucket is still past it, up to [`GIVE_WAY_ROUNDS`] clients. A failure is only
    /// logged: the claim that found the bucket full stands, and the next one asks again.
    async fn give_way(&self, mut heaviest: String, margin: u64) {
        for _ in 0..GIVE_WAY_ROUNDS {
            let Ok(owner) = u32::from_str_radix(&heaviest, 16) else {
                return tracing::warn!(heaviest, "a client in the state guard's books is not one the guard wrote");
            };
            let keys = self.keys.claims(owner);
            let mut connection = self.connection.clone();
            let next: redis::RedisResult<String> = self
                .give_way
                .key(keys.claims)
                .key(keys.floor)
                .key(keys.sizes)
                .key(keys.ends)
                .key(keys.held)
                .arg(margin)
                .arg(self.bucket_capacity())
                .arg(keys.owner)
                .invoke_async(&mut connection)
                .await;
            match next {
                Ok(next) if next.is_empty() => return,
                Ok(next) => heaviest = next,
                Err(error) => {
                    return tracing::debug!(%error, "the state guard could not make room; the next claim will")
                }
            }
        }
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
            let claimed: redis::RedisResult<(i64, String)> = self
                .claim
                .key(keys.claims)
                .key(keys.floor)
                .key(keys.memory)
                .key(keys.sizes)
                .key(keys.ends)
                .key(keys.held)
                .arg(&claim.digest()[..16])
                .arg(self::millis(claim.expires()))
                .arg(self::millis(claim.issued()))
                .arg(margin)
                .arg(self.share)
                .arg(self.bucket_capacity())
                .arg(keys.owner)
                .invoke_async(&mut connection)
                .await;
            if claimed.is_ok() && self.away.swap(false, Ordering::Relaxed) {
                tracing::info!("the Redis state guard answers again");
            }
            match claimed {
                Ok((1, heaviest)) => {
                    if !heaviest.is_empty() {
                        self.give_way(heaviest, margin).await;
                    }
                    Consumed::First
                }
                Ok((0, _)) => Consumed::Again,
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
