//! Every write to a task's record: a compare-and-set [`transition`] keyed by the
//! record's version, retried from a fresh read when it loses a race, and a run's
//! writes ([`RunWrites`]), fenced by its lease.
//!
//! A write needs the record as it stands. With a shared store that read is a network
//! round trip, so a write may start from a record the caller already holds (the one a
//! request just read, or the one a run last wrote) instead. That is only a guess: the
//! compare-and-set refuses it when anyone wrote since, and the write falls back to a
//! read. A guess that calls for no change is read again too, so the outcome is always
//! decided on what the store holds.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use super::store::{TaskRecord, TaskStore};
use super::store_error;
use crate::base::error::Error;

/// Writers that lose a compare-and-set race retry from a fresh read, this many times.
const MAX_RACES: u32 = 16;

/// Applies `change` to the record `id` by compare-and-set, starting from `guess` when
/// given (see the module's doc) and retrying lost races from a fresh read. `change`
/// returns whether it changed anything (nothing is written if not). `Ok(None)` for an
/// unknown task; otherwise the record as it now stands, and whether this call wrote it.
pub(super) async fn transition(
    store: &dyn TaskStore,
    id: &str,
    mut guess: Option<TaskRecord>,
    mut change: impl FnMut(&mut TaskRecord) -> bool,
) -> Result<Option<(TaskRecord, bool)>, Error> {
    for _ in 0..MAX_RACES {
        let guessed = guess.is_some();
        let current = match guess.take() {
            Some(record) => record,
            None => match store.get(id).await.map_err(store_error)? {
                Some(record) => record,
                None => return Ok(None),
            },
        };
        let mut next = current.next();
        if !change(&mut next) {
            if guessed {
                continue;
            }
            return Ok(Some((current, false)));
        }
        if store.replace(current.version(), next.clone()).await.map_err(store_error)? {
            return Ok(Some((next, true)));
        }
    }
    Err(Error::internal("the task changed too often to be updated"))
}

/// Applies `change` to the record `id` only while the run `run` holds its lease (see
/// [`transition`]); `Ok(false)` when it does not (cancelled, taken over, or gone).
pub(super) async fn fenced(
    store: &dyn TaskStore,
    id: &str,
    run: &str,
    change: impl FnMut(&mut TaskRecord),
) -> Result<bool, Error> {
    let written = transition(store, id, None, while_held(run, change)).await?;
    Ok(written.is_some_and(|(_, wrote)| wrote))
}

/// `change` as a transition's change that applies only while `run` holds the lease.
fn while_held<'a>(
    run: &'a str,
    mut change: impl FnMut(&mut TaskRecord) + 'a,
) -> impl FnMut(&mut TaskRecord) -> bool + 'a {
    move |record| {
        let held = record.is_held_by(run);
        if held {
            change(record);
        }
        held
    }
}

/// The writes of one run of a task: each fenced by the run's lease, each starting from
/// the record as this run last wrote it, so that a run that is the only writer of its
/// task (the common case) never reads its record back.
pub(super) struct RunWrites {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) id: String,
    pub(super) run: String,
    last: Mutex<Option<TaskRecord>>,
    /// True once the record holding the run's lease is stored: every write waits for it.
    stored: watch::Receiver<bool>,
}

impl RunWrites {
    /// The writes of `run`, whose lease `record` (as just written) holds.
    pub(super) fn new(store: Arc<dyn TaskStore>, record: &TaskRecord, run: &str) -> Arc<Self> {
        Self::gated(store, record, run, watch::channel(true).1)
    }

    /// The writes of `run`, whose lease `record` holds once it is stored: none is made
    /// before the returned sender says so (with `true`), and none at all if it is
    /// dropped first. A run is polled before its record's first write when what it does
    /// at once can go into that write (see `driver`).
    pub(super) fn before_stored(
        store: Arc<dyn TaskStore>,
        record: &TaskRecord,
        run: &str,
    ) -> (Arc<Self>, watch::Sender<bool>) {
        let (stored, watching) = watch::channel(false);
        (Self::gated(store, record, run, watching), stored)
    }

    fn gated(store: Arc<dyn TaskStore>, record: &TaskRecord, run: &str, stored: watch::Receiver<bool>) -> Arc<Self> {
        Arc::new(Self {
            store,
            id: record.id().to_owned(),
            run: run.to_owned(),
            last: Mutex::new(Some(record.clone())),
            stored,
        })
    }

    /// Applies `change` while the run holds the lease; `Ok(false)` when it does not.
    pub(super) async fn fenced(&self, change: impl FnMut(&mut TaskRecord)) -> Result<bool, Error> {
        self.transition(while_held(&self.run, change)).await
    }

    /// [`transition`] from the record as this run last wrote it, keeping what it writes
    /// for the next write; whether it wrote.
    pub(super) async fn transition(&self, change: impl FnMut(&mut TaskRecord) -> bool) -> Result<bool, Error> {
        if self.stored.clone().wait_for(|stored| *stored).await.is_err() {
            return Ok(false);
        }
        let written = transition(&*self.store, &self.id, self.last(), change).await?;
        let written = written.and_then(|(record, wrote)| wrote.then_some(record));
        let wrote = written.is_some();
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = written;
        Ok(wrote)
    }

    /// The record as this run last wrote it, for the next write to start from.
    pub(super) fn last(&self) -> Option<TaskRecord> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::tasks::store::tests::record;
    use crate::ext::tasks::MemoryTaskStore;

    #[tokio::test]
    async fn a_stale_guess_falls_back_to_a_read_and_is_never_written() {
        let store = MemoryTaskStore::new();
        store.create(record("t", None)).await.unwrap();
        let stale = store.get("t").await.unwrap().unwrap();
        let moved = transition(&store, "t", None, |r| {
            r.status_message = Some("someone else".into());
            true
        });
        moved.await.unwrap();
        let (written, wrote) = transition(&store, "t", Some(stale.clone()), |r| {
            r.status_message.get_or_insert_with(String::new).push_str(" and me");
            true
        })
        .await
        .unwrap()
        .unwrap();
        assert!(wrote);
        assert_eq!(written.status_message.as_deref(), Some("someone else and me"), "changed from the store's record");
        assert_eq!(store.get("t").await.unwrap().unwrap(), written);

        // A guess that calls for no change is checked against the store, which does.
        let (_, wrote) = transition(&store, "t", Some(stale), |r| r.status_message.is_some()).await.unwrap().unwrap();
        assert!(wrote, "decided on the store's record, not the guess");
    }
}
