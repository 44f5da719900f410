//! [`RedisTaskStore`]: task records in Redis, with the index of running tasks' leases.
//!
//! A record is a hash `<prefix>task:<id>` with its version (`v`) and its JSON (`r`),
//! expiring with the task (on a cluster, each key carries its bucket's tag: see
//! [`KeySpace`]). The sorted set `<prefix>task-leases` scores each live task by
//! when an instance must act on it ([`TaskRecord::lease_expires_at`]: its lease lapses,
//! or its lifetime ends), so [`TaskStore::lapsed`] is one range query. Writes
//! are scripts, so the version check and both keys change atomically.

use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use redis::Script;

use super::keys::KeySpace;
use super::unreachable;
use crate::ext::tasks::{StoreError, TaskRecord, TaskStore};

/// Stores the record unless its id exists. ARGV: json, version, expire-at ms or '',
/// lease score or '', id.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'r', ARGV[1])
if ARGV[3] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[3]) end
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5]) else redis.call('ZREM', KEYS[2], ARGV[5]) end
return 1
";

/// Replaces the record if it is still at the expected version, and moves its expiry
/// when it has one (a finished task's is shortened). ARGV: json, expected version, new
/// version, lease score or '', id, expire-at ms or ''.
const REPLACE: &str = r"
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[3], 'r', ARGV[1])
if ARGV[6] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[6]) end
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5]) else redis.call('ZREM', KEYS[2], ARGV[5]) end
return 1
";

/// The ids whose lease lapsed before now, forgetting those whose record expired.
/// ARGV: now ms, limit, record key prefix.
const LAPSED: &str = r"
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, ARGV[2])
local lapsed = {}
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[3] .. id) == 1 then
    table.insert(lapsed, id)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return lapsed
";

/// A [`TaskStore`] in Redis, shared by every instance. Made by
/// [`Redis::task_store`](super::Redis::task_store).
#[derive(Clone)]
pub struct RedisTaskStore {
    connection: super::Link,
    keys: KeySpace,
    create: Script,
    replace: Script,
    lapsed: Script,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore").field("keys", &self.keys).finish_non_exhaustive()
    }
}

impl RedisTaskStore {
    pub(super) fn new(connection: super::Link, keys: KeySpace) -> Self {
        Self {
            connection,
            keys,
            create: Script::new(CREATE),
            replace: Script::new(REPLACE),
            lapsed: Script::new(LAPSED),
        }
    }
}

/// A moment as Redis takes it: milliseconds since the epoch.
fn epoch_ms(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(u64::MAX)
}

/// The record's score in the lease index, or '' when no instance need act on it.
fn lease_score(record: &TaskRecord) -> String {
    record.lease_expires_at().map(|at| epoch_ms(at).to_string()).unwrap_or_default()
}

/// When the record expires, as `PEXPIREAT` takes it, or '' when it does not.
fn expire_at(record: &TaskRecord) -> String {
    record.expires_at().map(|at| epoch_ms(at).to_string()).unwrap_or_default()
}

fn encode(record: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(record).map_err(|e| StoreError::caused_by(format!("cannot encode a task record: {e}"), e))
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let json = encode(&record)?;
            let expire_at = expire_at(&record);
            let (key, leases) = self.keys.task(record.id());
            let created: i64 = self
                .create
                .key(key)
                .key(leases)
                .arg(json)
                .arg(record.version())
                .arg(expire_at)
                .arg(lease_score(&record))
                .arg(record.id())
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(unreachable)?;
            if created == 1 {
                Ok(())
            } else {
                Err(StoreError::new("a task with this id exists"))
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let json: Option<String> = redis::cmd("HGET")
                .arg(self.keys.task(id).0)
                .arg("r")
                .query_async(&mut self.connection.clone())
                .await
                .map_err(unreachable)?;
            json.map(|json| {
                serde_json::from_str(&json)
                    .map_err(|e| StoreError::caused_by(format!("a stored task does not decode: {e}"), e))
            })
            .transpose()
        })
    }

    fn replace(&self, expected: u64, mut record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            record.set_version(expected + 1);
            let json = encode(&record)?;
            let (key, leases) = self.keys.task(record.id());
            let replaced: i64 = self
                .replace
                .key(key)
                .key(leases)
                .arg(json)
                .arg(expected)
                .arg(expected + 1)
                .arg(lease_score(&record))
                .arg(record.id())
                .arg(expire_at(&record))
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(unreachable)?;
            Ok(replaced == 1)
        })
    }

    fn lapsed(&self, now: SystemTime, limit: usize) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            // One script per bucket (one on a single Redis), each on its own shard.
            let buckets = self.keys.leases().into_iter().map(|(leases, records)| {
                let mut connection = self.connection.clone();
                async move {
                    let mut script = self.lapsed.key(leases);
                    script.arg(epoch_ms(now)).arg(limit).arg(records).invoke_async::<Vec<String>>(&mut connection).await
                }
            });
            let mut lapsed = Vec::new();
            for ids in futures_util::future::join_all(buckets).await {
                lapsed.extend(ids.map_err(unreachable)?);
            }
            lapsed.truncate(limit);
            Ok(lapsed)
        })
    }

    fn worker_alive(&self, worker: &str, until: SystemTime) -> BoxFuture<'_, Result<(), StoreError>> {
        let worker = worker.to_owned();
        Box::pin(async move {
            let key = self.keys.workers();
            let now = epoch_ms(SystemTime::now());
            let until = epoch_ms(until);
            // Workers that stopped saying so are dropped here, and the set goes with the last.
            redis::pipe()
                .zadd(&key, worker, until)
                .ignore()
                .zrembyscore(&key, "-inf", now)
                .ignore()
                .pexpire_at(&key, i64::try_from(until).unwrap_or(i64::MAX))
                .ignore()
                .query_async::<()>(&mut self.connection.clone())
                .await
                .map_err(unreachable)
        })
    }

    fn server_alive(
        &self,
        server: &str,
        now: SystemTime,
        until: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let server = server.to_owned();
        Box::pin(async move {
            let key = self.keys.servers();
            let (now, until) = (epoch_ms(now), epoch_ms(until));
            // Servers that stopped saying so are dropped here, and the set goes with the last.
            let (names,): (Vec<String>,) = redis::pipe()
                .zadd(&key, &server, until)
                .ignore()
                .zrembyscore(&key, "-inf", now)
                .ignore()
                .pexpire_at(&key, i64::try_from(until).unwrap_or(i64::MAX))
                .ignore()
                .zrange(&key, 0, -1)
                .query_async(&mut self.connection.clone())
                .await
                .map_err(unreachable)?;
            Ok(names.into_iter().filter(|name| *name != server).collect())
        })
    }

    fn workers(&self, now: SystemTime) -> BoxFuture<'_, Result<Option<usize>, StoreError>> {
        Box::pin(async move {
            // ZRANGEBYSCORE, not ZCOUNT: the commands the guide's ACL user is allowed.
            let alive: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(self.keys.workers())
                .arg(format!("({}", epoch_ms(now)))
                .arg("+inf")
                .query_async(&mut self.connection.clone())
                .await
                .map_err(unreachable)?;
            Ok(Some(alive.len()))
        })
    }
}
