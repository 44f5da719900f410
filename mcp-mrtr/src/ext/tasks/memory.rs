//! [`MemoryTaskStore`]: task records in this process's memory, for one instance.
//!
//! Besides the records by id, two ordered indexes: every record that expires by when it
//! expires, and every `working` record by when its lease lapses. Removing expired records
//! and listing lapsed leases then read the front of an index, so they cost what expired
//! or lapsed, not what the store holds. Everything sits under one mutex, and no operation
//! walks every record while holding it.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;

use super::store::{StoreError, TaskRecord, TaskStore};

/// Expired records removed per create, at most. Each record expires once, so this
/// outpaces creation; the bound keeps a create from paying for a whole backlog (a burst
/// of tasks created together, expiring together) while it holds the lock.
const SWEEP_PER_CREATE: usize = 16;

/// Expired records removed per look for lapsed leases (every half lease), at most: the
/// store shrinks back even when no task is created.
const SWEEP_PER_LOOK: usize = 1024;

/// Task records in this process's memory: for one instance. An expired record reads as
/// absent at once; it is removed when read, or soon after by the creates and the looks
/// for lapsed leases, each of which removes a few expired records, oldest first.
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    indexed: Mutex<Indexed>,
}

#[derive(Debug, Default)]
struct Indexed {
    records: HashMap<String, TaskRecord>,
    /// `(expires at, id)` of every record that expires (unix milliseconds).
    by_expiry: BTreeSet<(u64, String)>,
    /// `(an instance must act by, id)` of every live record ([`TaskRecord::lease_expires_at`]).
    by_lease: BTreeSet<(u64, String)>,
    /// Each task worker sharing this store (in this process), and until when it said it lives.
    workers: HashMap<String, SystemTime>,
    /// Each server keeping tasks here (in this process), and until when it said so.
    servers: HashMap<String, SystemTime>,
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Indexed> {
        self.indexed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Indexed {
    fn insert(&mut self, record: TaskRecord) {
        let id = record.id().to_owned();
        if let Some(at) = expires_ms(&record) {
            self.by_expiry.insert((at, id.clone()));
        }
        if let Some(at) = lease_ms(&record) {
            self.by_lease.insert((at, id.clone()));
        }
        self.records.insert(id, record);
    }

    fn remove(&mut self, id: &str) -> Option<TaskRecord> {
        let record = self.records.remove(id)?;
        if let Some(at) = expires_ms(&record) {
            self.by_expiry.remove(&(at, record.id().to_owned()));
        }
        if let Some(at) = lease_ms(&record) {
            self.by_lease.remove(&(at, record.id().to_owned()));
        }
        Some(record)
    }

    /// Removes up to `most` records expired by `now`, the earliest first.
    fn sweep(&mut self, now: SystemTime, most: usize) {
        // Whole milliseconds at or before `now`: nothing is removed early.
        let now = unix_ms(now);
        for _ in 0..most {
            let Some((at, id)) = self.by_expiry.first() else { return };
            if *at > now {
                return;
            }
            let id = id.clone();
            self.remove(&id);
        }
    }

    /// Ids of up to `limit` live records to act on before `now` (see the trait), the
    /// longest lapsed first. An expired one met on the way is removed, not listed.
    fn lapsed(&mut self, now: SystemTime, limit: usize) -> Vec<String> {
        let mut lapsed = Vec::new();
        let mut expired = Vec::new();
        for (_, id) in self.by_lease.iter().take_while(|(at, _)| UNIX_EPOCH + ms(*at) < now) {
            if lapsed.len() == limit {
                break;
            }
            match self.records.get(id) {
                Some(record) if !record.is_expired(now) => lapsed.push(id.clone()),
                _ => expired.push(id.clone()),
            }
        }
        for id in expired {
            self.remove(&id);
        }
        lapsed
    }
}

fn ms(millis: u64) -> std::time::Duration {
    std::time::Duration::from_millis(millis)
}

fn unix_ms(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(u64::MAX)
}

fn expires_ms(record: &TaskRecord) -> Option<u64> {
    record.expires_at().map(unix_ms)
}

fn lease_ms(record: &TaskRecord) -> Option<u64> {
    record.lease_expires_at().map(unix_ms)
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut indexed = self.lock();
        indexed.sweep(SystemTime::now(), SWEEP_PER_CREATE);
        let stored = if indexed.records.contains_key(record.id()) {
            Err(StoreError::new("a task with this id exists"))
        } else {
            indexed.insert(record);
            Ok(())
        };
        Box::pin(std::future::ready(stored))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let mut indexed = self.lock();
        let found = match indexed.records.get(id) {
            Some(record) if record.is_expired(SystemTime::now()) => {
                indexed.remove(id);
                None
            }
            other => other.cloned(),
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn replace(&self, expected: u64, mut record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        let mut indexed = self.lock();
        let current = indexed.records.get(record.id());
        let replaced = current.is_some_and(|c| c.version() == expected && !c.is_expired(SystemTime::now()));
        if replaced {
            // Out and in again: the expiry and the lease may both have moved.
            indexed.remove(record.id());
            record.set_version(expected + 1);
            indexed.insert(record);
        }
        Box::pin(std::future::ready(Ok(replaced)))
    }

    fn lapsed(&self, now: SystemTime, limit: usize) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let mut indexed = self.lock();
        indexed.sweep(now, SWEEP_PER_LOOK);
        Box::pin(std::future::ready(Ok(indexed.lapsed(now, limit))))
    }

    fn worker_alive(&self, worker: &str, until: SystemTime) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut indexed = self.lock();
        let now = SystemTime::now();
        indexed.workers.retain(|_, alive| *alive > now);
        indexed.workers.insert(worker.to_owned(), until);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Servers in this process only, as for workers.
    fn server_alive(
        &self,
        server: &str,
        now: SystemTime,
        until: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let mut indexed = self.lock();
        indexed.servers.retain(|_, alive| *alive > now);
        indexed.servers.insert(server.to_owned(), until);
        let others = indexed.servers.keys().filter(|name| *name != server).cloned().collect();
        Box::pin(std::future::ready(Ok(others)))
    }

    /// Workers in this process only: a memory store is not shared with any other.
    fn workers(&self, now: SystemTime) -> BoxFuture<'_, Result<Option<usize>, StoreError>> {
        let alive = self.lock().workers.values().filter(|alive| **alive > now).count();
        Box::pin(std::future::ready(Ok(Some(alive))))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ext::tasks::store::tests::record;
    use crate::ext::tasks::store::{now_ms, Lease, TaskStatus};

    fn leased(id: &str, until_ms: u64, ttl: Option<Duration>) -> TaskRecord {
        let mut r = record(id, ttl);
        r.lease = Some(Lease { holder: format!("run-{id}"), until_ms });
        r
    }

    #[tokio::test]
    async fn replace_is_compare_and_set() {
        let store = MemoryTaskStore::new();
        store.create(record("a", None)).await.unwrap();
        assert!(store.create(record("a", None)).await.is_err(), "ids are unique");
        let read = store.get("a").await.unwrap().unwrap();
        let mut changed = read.next();
        changed.status = TaskStatus::Completed;
        assert!(store.replace(read.version(), changed.clone()).await.unwrap());
        // A writer that read before the first write loses.
        assert!(!store.replace(read.version(), changed).await.unwrap());
        let now = store.get("a").await.unwrap().unwrap();
        assert_eq!((now.version(), now.status()), (1, TaskStatus::Completed));
        assert!(!store.replace(0, record("missing", None)).await.unwrap());
    }

    #[tokio::test]
    async fn expired_records_read_as_absent() {
        let store = MemoryTaskStore::new();
        store.create(record("gone", Some(Duration::ZERO))).await.unwrap();
        store.create(record("kept", Some(Duration::from_secs(3600)))).await.unwrap();
        assert!(store.get("gone").await.unwrap().is_none());
        assert!(store.get("kept").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn working_tasks_whose_lease_lapsed_are_listed() {
        let store = MemoryTaskStore::new();
        let now = SystemTime::now();
        let now_ms = unix_ms(now);
        store.create(leased("alive", now_ms + 60_000, None)).await.unwrap();
        store.create(leased("dead", now_ms - 1, None)).await.unwrap();
        store.create(record("handed-back", None)).await.unwrap();
        let mut waiting = leased("waiting", now_ms - 1, None);
        waiting.status = TaskStatus::InputRequired;
        store.create(waiting).await.unwrap();
        // The longest lapsed first: a lease handed back lapsed at the epoch.
        assert_eq!(store.lapsed(now, 10).await.unwrap(), ["handed-back", "dead"]);
        assert_eq!(store.lapsed(now, 1).await.unwrap(), ["handed-back"], "the limit holds");
    }

    /// Audit B19: expired records go without a walk over the store, on the next create
    /// (not a second later), and the indexes follow every write.
    #[tokio::test]
    async fn expired_records_go_on_the_next_create_and_the_indexes_follow_every_write() {
        let store = MemoryTaskStore::new();
        let soon = now_ms() + 60_000;
        for i in 0..100 {
            store.create(leased(&format!("live-{i}"), soon, Some(Duration::from_secs(3600)))).await.unwrap();
        }
        store.create(leased("expired", 1, Some(Duration::ZERO))).await.unwrap();
        store.create(record("next", None)).await.unwrap();
        let held = |store: &MemoryTaskStore| {
            let indexed = store.lock();
            (indexed.records.len(), indexed.by_expiry.len(), indexed.by_lease.len())
        };
        assert_eq!(held(&store), (101, 100, 101), "the expired record went; `next` has no expiry");

        // A lease renewed, then a task finished: the old entries go with each write.
        let read = store.get("live-0").await.unwrap().unwrap();
        let mut renewed = read.next();
        renewed.lease = Some(Lease { holder: "run-live-0".into(), until_ms: 1 });
        assert!(store.replace(read.version(), renewed).await.unwrap());
        assert_eq!(store.lapsed(SystemTime::now(), 10).await.unwrap(), ["next", "live-0"], "by when they lapsed");
        let read = store.get("live-0").await.unwrap().unwrap();
        let mut finished = read.next();
        finished.finish(TaskStatus::Completed, Duration::ZERO);
        assert!(store.replace(read.version(), finished).await.unwrap());
        assert_eq!(store.lapsed(SystemTime::now(), 10).await.unwrap(), ["next"]);
        assert_eq!(held(&store), (100, 99, 100), "the finished task expired at once and was swept by the look");
    }

    #[tokio::test]
    async fn a_create_removes_a_bounded_number_of_expired_records() {
        let store = MemoryTaskStore::new();
        for i in 0..(SWEEP_PER_CREATE * 2) {
            store.create(record(&format!("expired-{i}"), Some(Duration::ZERO))).await.unwrap();
        }
        // Each create above swept those before it: one create never pays for many.
        store.create(record("one", None)).await.unwrap();
        assert_eq!(store.lock().records.len(), 1);
        // A backlog (expired records no create has reached) drains by the bound.
        let mut indexed = store.lock();
        for i in 0..(SWEEP_PER_CREATE * 3) {
            indexed.insert(record(&format!("backlog-{i}"), Some(Duration::ZERO)));
        }
        let before = indexed.records.len();
        indexed.sweep(SystemTime::now(), SWEEP_PER_CREATE);
        assert_eq!(before - indexed.records.len(), SWEEP_PER_CREATE);
    }
}
