//! Leases: which run of a handler holds a `working` task. A run renews its lease every
//! third of [`Tasks::lease`] ([`keep`]); a run that finds its lease gone (the task was
//! cancelled, or taken over while this instance stalled) drops its handler. How another
//! instance takes over a task whose lease lapsed is `takeover`'s.

use std::time::Duration;

use super::store::{now_ms, Lease};
use super::write::RunWrites;
use super::{new_task_id, Tasks};
use crate::base::error::Error;

/// How long a run's hold on a task lasts unless renewed, by default: short, so a dead
/// instance's tasks resume within seconds; long enough that a busy instance renews in time.
pub(crate) const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// The shortest lease a server accepts: shorter ones would renew faster than a store
/// round trip under load.
pub(crate) const MIN_LEASE: Duration = Duration::from_millis(300);

impl Lease {
    /// A lease of `length` for `run`, from now.
    pub(crate) fn new(run: &str, length: Duration) -> Self {
        let length = u64::try_from(length.as_millis()).unwrap_or(u64::MAX);
        Self { holder: run.to_owned(), until_ms: now_ms().saturating_add(length) }
    }
}

/// A fresh run id: random, so every run's writes are fenced from every other's.
pub(crate) fn new_run() -> Result<String, Error> {
    new_task_id()
}

impl Tasks {
    /// A lease for `run`, from now.
    pub(crate) fn lease_for(&self, run: &str) -> Lease {
        Lease::new(run, self.lease)
    }
}

/// Renews the lease of the run writing `writes` while its handler runs; returns when the
/// lease is lost. A store that cannot be reached is tried again at the next renewal: if
/// it stays away past the lease, another instance may take the task over, and the next
/// renewal that reaches the store finds the lease gone.
pub(super) async fn keep(tasks: &Tasks, writes: &RunWrites) {
    let (id, run) = (&writes.id, &writes.run);
    let every = tasks.lease / 3;
    loop {
        tokio::time::sleep(every).await;
        let renewed = writes.fenced(|record| record.lease = Some(tasks.lease_for(run))).await;
        match renewed {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(task = %id, "a task's run lost its lease (cancelled, or taken over); stopping it");
                return;
            }
            Err(error) => tracing::warn!(task = %id, %error, "could not renew a task's lease"),
        }
    }
}
