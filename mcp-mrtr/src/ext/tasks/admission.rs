//! Admission: whether a client may create one more task ([`admit`]), and the count of
//! live tasks (not yet in a final state) per client and in all that decides it.
//!
//! The count is this instance's (see [`TaskLimits`]): a task is counted from its
//! creation here until this instance sees it end, in any of the runtime's writes of a
//! final state ([`Tasks::forget`]), a `tasks/get` that reads one, or the record's
//! expiry. A task that ended on another instance may stay counted here; when a client
//! is refused, the tasks counted against it are checked against the store (at most
//! once a second), so a stale count never locks a client out for long.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use super::{TaskLimits, Tasks};
use crate::base::error::Error;
use crate::bounds::fair::{ClientId, RateLimit};

/// How often a refused client's counted tasks may be checked against the store.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// Besides the refused client's, the oldest tasks checked by one reconciliation: when
/// the total is reached, they are the likeliest to have ended elsewhere.
const RECONCILE_OLDEST: usize = 32;

/// The live tasks this instance created, and the creation rate per client.
#[derive(Debug)]
pub(crate) struct Admission {
    rate: RateLimit,
    max_live: usize,
    per_client: usize,
    ledger: Mutex<Ledger>,
    reconciled_at: Mutex<Option<Instant>>,
}

#[derive(Debug, Default)]
struct Ledger {
    tasks: HashMap<Arc<str>, Entry>,
    by_client: HashMap<ClientId, Vec<Arc<str>>>,
}

#[derive(Debug)]
struct Entry {
    client: ClientId,
    created: Instant,
    /// When the record expires; the count drops it then, whatever became of the task.
    expires: Option<SystemTime>,
}

/// Why a live task was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// The client holds its share.
    Client(usize),
    /// This instance holds the total.
    Total(usize),
}

impl Admission {
    pub(crate) fn new(limits: &TaskLimits) -> Self {
        Self {
            rate: RateLimit::new(limits.creations_per_second, limits.creation_burst),
            max_live: limits.max_live,
            per_client: limits.max_live_per_client,
            ledger: Mutex::default(),
            reconciled_at: Mutex::default(),
        }
    }

    /// Counts the task `id` of `client` as live, unless the client or the instance is at
    /// its cap. Expired entries of the client (or of everyone, at the total) go first.
    pub(crate) fn hold(&self, client: &ClientId, id: &str, expires: Option<SystemTime>) -> Result<(), Full> {
        let mut ledger = self.ledger();
        let now = SystemTime::now();
        if ledger.held_by(client) >= self.per_client {
            ledger.drop_expired(client, now);
            if ledger.held_by(client) >= self.per_client {
                return Err(Full::Client(self.per_client));
            }
        }
        if ledger.tasks.len() >= self.max_live {
            ledger.drop_all_expired(now);
            if ledger.tasks.len() >= self.max_live {
                return Err(Full::Total(self.max_live));
            }
        }
        let id: Arc<str> = id.into();
        ledger.by_client.entry(client.clone()).or_default().push(id.clone());
        ledger.tasks.insert(id, Entry { client: client.clone(), created: Instant::now(), expires });
        Ok(())
    }

    /// The task `id` ended (or is gone): it no longer counts. Unknown ids are ignored.
    pub(crate) fn release(&self, id: &str) {
        self.ledger().remove(id);
    }

    /// The tasks to check against the store after `client` was refused: its own and the
    /// oldest few; empty when a check ran less than [`RECONCILE_EVERY`] ago.
    fn to_reconcile(&self, client: &ClientId) -> Vec<Arc<str>> {
        {
            let mut at = self.reconciled_at.lock().unwrap_or_else(PoisonError::into_inner);
            if at.is_some_and(|at| at.elapsed() < RECONCILE_EVERY) {
                return Vec::new();
            }
            *at = Some(Instant::now());
        }
        let ledger = self.ledger();
        let mut ids = ledger.by_client.get(client).cloned().unwrap_or_default();
        let mut oldest: Vec<(&Arc<str>, Instant)> = ledger.tasks.iter().map(|(id, e)| (id, e.created)).collect();
        if oldest.len() > RECONCILE_OLDEST {
            oldest.select_nth_unstable_by_key(RECONCILE_OLDEST, |(_, created)| *created);
            oldest.truncate(RECONCILE_OLDEST);
        }
        ids.extend(oldest.into_iter().map(|(id, _)| id.clone()));
        ids
    }

    /// How many live tasks this instance counts.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.ledger().tasks.len()
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Ledger {
    fn held_by(&self, client: &ClientId) -> usize {
        self.by_client.get(client).map_or(0, Vec::len)
    }

    fn remove(&mut self, id: &str) {
        let Some(entry) = self.tasks.remove(id) else { return };
        if let Some(ids) = self.by_client.get_mut(&entry.client) {
            ids.retain(|held| &**held != id);
            if ids.is_empty() {
                self.by_client.remove(&entry.client);
            }
        }
    }

    fn drop_expired(&mut self, client: &ClientId, now: SystemTime) {
        let ids = self.by_client.get(client).cloned().unwrap_or_default();
        for id in ids {
            if self.tasks.get(&id).is_some_and(|entry| entry.is_expired(now)) {
                self.remove(&id);
            }
        }
    }

    fn drop_all_expired(&mut self, now: SystemTime) {
        let expired: Vec<Arc<str>> =
            self.tasks.iter().filter(|(_, entry)| entry.is_expired(now)).map(|(id, _)| id.clone()).collect();
        for id in expired {
            self.remove(&id);
        }
    }
}

impl Entry {
    fn is_expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|at| at <= now)
    }
}

/// A task counted as live until [`keep`](Self::keep) says its record was created; if
/// the creation fails (or is dropped), it stops counting.
#[derive(Debug)]
#[must_use = "an admitted task stops counting when this is dropped"]
pub(crate) struct Admitted<'a> {
    admission: &'a Admission,
    id: Option<String>,
}

impl Admitted<'_> {
    /// The task exists: it counts until it ends.
    pub(crate) fn keep(mut self) {
        self.id = None;
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.admission.release(id);
        }
    }
}

/// Admits the task `id` of `client`, or refuses it with an error that names the bound
/// and what to do: the creation rate first (a flood is refused before anything is
/// counted), then the live caps. A client at a cap has its counted tasks checked
/// against the store once, in case some ended on another instance.
pub(crate) async fn admit<'a>(
    tasks: &'a Tasks,
    client: &ClientId,
    id: &str,
    expires: Option<SystemTime>,
) -> Result<Admitted<'a>, Error> {
    let admission = &*tasks.admission;
    admission.rate.take(client).map_err(|wait| too_fast(&tasks.limits, wait))?;
    let admitted = || Admitted { admission, id: Some(id.to_owned()) };
    let Err(full) = admission.hold(client, id, expires) else { return Ok(admitted()) };
    let stale = admission.to_reconcile(client);
    if stale.is_empty() {
        return Err(refused(full));
    }
    for id in stale {
        let ended = match tasks.store.get(&id).await {
            Ok(record) => record.is_none_or(|record| record.status().is_terminal()),
            // A store that cannot be read proves nothing: the task stays counted.
            Err(_) => false,
        };
        if ended {
            admission.release(&id);
        }
    }
    admission.hold(client, id, expires).map_err(refused)?;
    Ok(admitted())
}

fn too_fast(limits: &TaskLimits, wait: Duration) -> Error {
    let retry_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
    Error::internal(format!(
        "too many tasks started: a client may start {} tasks at once and {} per second after that; \
         retry in {}",
        limits.creation_burst,
        limits.creations_per_second,
        crate::base::deadline::describe(wait.max(Duration::from_millis(1))),
    ))
    .with_data(json!({ "limit": "taskCreationRate", "retryAfterMs": retry_ms }))
}

fn refused(full: Full) -> Error {
    match full {
        Full::Client(max) => Error::internal(format!(
            "too many live tasks: this client already has {max} tasks that have not finished, the most one client \
             may have; wait for one to complete, or cancel one with tasks/cancel, then retry"
        ))
        .with_data(json!({ "limit": "liveTasksPerClient", "max": max })),
        Full::Total(max) => Error::internal(format!(
            "the server is busy: it holds {max} live tasks, the most it takes; retry in a while"
        ))
        .with_data(json!({ "limit": "liveTasks", "max": max })),
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::ext::tasks::store::tests::record;
    use crate::ext::tasks::{MemoryTaskStore, TaskStatus, TaskStore};

    fn admission(total: usize, share: usize) -> Admission {
        Admission::new(&TaskLimits::default().max_live_tasks(total).max_live_tasks_per_client(share))
    }

    #[test]
    fn a_client_holds_at_most_its_share_and_the_instance_its_total() {
        let live = admission(3, 2);
        live.hold(&ClientId::loopback(1), "a1", None).unwrap();
        live.hold(&ClientId::loopback(1), "a2", None).unwrap();
        assert_eq!(live.hold(&ClientId::loopback(1), "a3", None), Err(Full::Client(2)));
        live.hold(&ClientId::loopback(2), "b1", None).expect("another client has its own share");
        assert_eq!(live.hold(&ClientId::loopback(3), "c1", None), Err(Full::Total(3)), "refused, nobody evicted");
        live.release("a1");
        live.release("a1");
        assert_eq!(live.live(), 2, "a release counts once");
        live.hold(&ClientId::loopback(3), "c1", None).expect("an ended task frees its place");
    }

    #[test]
    fn expired_tasks_stop_counting() {
        let live = admission(2, 1);
        let past = SystemTime::now() - Duration::from_secs(1);
        live.hold(&ClientId::loopback(1), "old", Some(past)).unwrap();
        live.hold(&ClientId::loopback(1), "new", None).expect("the expired task no longer counts against its client");
        live.hold(&ClientId::loopback(2), "expired", Some(past)).unwrap();
        live.hold(&ClientId::loopback(3), "late", None).expect("the expired task no longer counts against the total");
    }

    #[tokio::test]
    async fn refusals_name_the_bound_and_stale_counts_are_checked_against_the_store() {
        let limits = TaskLimits::default().max_live_tasks_per_client(1).creation_rate(0.0, 3).max_live_tasks(100);
        let tasks = Tasks::default().configured(super::super::TaskConfig::default().limits(limits));
        let store = Arc::new(MemoryTaskStore::new());
        let tasks = Tasks { store: store.clone(), ..tasks };
        let mut ended = record("ended-elsewhere", None);
        ended.status = TaskStatus::Completed;
        store.create(ended).await.unwrap();
        admit(&tasks, &ClientId::loopback(1), "ended-elsewhere", None).await.unwrap().keep();
        // Its record says it ended (on another instance): the count catches up.
        admit(&tasks, &ClientId::loopback(1), "second", None).await.unwrap().keep();
        let full = admit(&tasks, &ClientId::loopback(1), "third", None).await.unwrap_err();
        assert_eq!(full.data().unwrap()["limit"], "liveTasksPerClient");
        assert!(full.message().contains("cancel one with tasks/cancel"), "{}", full.message());
        let fast = admit(&tasks, &ClientId::loopback(1), "fourth", None).await.unwrap_err();
        assert_eq!(fast.data().unwrap()["limit"], "taskCreationRate", "a burst of 3, no refill");
    }

    #[tokio::test]
    async fn a_task_whose_creation_failed_stops_counting() {
        let tasks = Tasks::default();
        drop(admit(&tasks, &ClientId::loopback(1), "never-stored", None).await.unwrap());
        assert_eq!(tasks.admission.live(), 0);
        admit(&tasks, &ClientId::loopback(1), "stored", None).await.unwrap().keep();
        assert_eq!(tasks.admission.live(), 1);
    }
}
