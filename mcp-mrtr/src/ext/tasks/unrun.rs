//! Tasks a front end leaves for workers ([`TaskConfig::run_on_workers`]), as its
//! `tasks/get` sees them. A front end runs no task and looks for none, and may have no
//! process alive between requests (a Lambda function): what no worker takes must still
//! end, and a client polling must see why it waits. So the poll does what no one else
//! would: a task shows that it waits for a worker; one at the end of its lifetime fails as
//! expired; one left longer than [`TaskConfig::worker_wait`] while the store counts no
//! worker alive fails, saying so.
//!
//! [`TaskConfig::run_on_workers`]: super::TaskConfig::run_on_workers
//! [`TaskConfig::worker_wait`]: super::TaskConfig::worker_wait

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::store::{TaskRecord, TaskStatus};
use super::{end, Runtime};
use crate::base::error::Error;

/// The status message of a task no run holds, on a front end.
pub(super) const WAITING: &str = "waiting for a task worker to run it";

/// `record` as a front end's client is shown it: a task no run holds says it waits for a
/// worker (in place of what its last run said).
pub(super) fn shown(mut record: TaskRecord) -> TaskRecord {
    if unrun(&record) {
        record.status_message = Some(WAITING.to_owned());
    }
    record
}

/// Ends `record` if no one else will: expired, or left with no worker alive past the wait.
/// The record as it now stands; `None` when it is gone from the store.
pub(super) async fn settle(server: &Runtime<'_>, record: TaskRecord) -> Result<Option<TaskRecord>, Error> {
    let now = SystemTime::now();
    if record.past_deadline(now) {
        return fail(server, record, Ending::Expired, now).await;
    }
    let wait = server.tasks.worker_wait;
    if !unrun(&record) || waited(&record, now) < wait {
        return Ok(Some(record));
    }
    match server.tasks.store.workers(now).await {
        Ok(Some(0)) => fail(server, record, Ending::NoWorker(wait), now).await,
        // Workers are alive (busy, or about to look), or the store cannot count them.
        Ok(_) => Ok(Some(record)),
        Err(error) => {
            tracing::warn!(task = %record.id(), %error, "could not count the task workers in the task store");
            Ok(Some(record))
        }
    }
}

/// Why a front end ends a task.
#[derive(Clone, Copy)]
enum Ending {
    Expired,
    NoWorker(Duration),
}

impl Ending {
    /// Whether `record` is still as this ending saw it: a worker may have taken it since.
    fn applies(self, record: &TaskRecord, now: SystemTime) -> bool {
        match self {
            Self::Expired => record.past_deadline(now),
            Self::NoWorker(_) => unrun(record),
        }
    }

    fn error(self) -> Error {
        match self {
            Self::Expired => end::expired_error(),
            Self::NoWorker(wait) => Error::internal(format!(
                "no task worker was available to run the task within {} s; it did not start",
                wait.as_secs()
            )),
        }
    }
}

async fn fail(
    server: &Runtime<'_>,
    record: TaskRecord,
    ending: Ending,
    now: SystemTime,
) -> Result<Option<TaskRecord>, Error> {
    let tasks = server.tasks;
    let keep = tasks.limits.keep_finished;
    let id = record.id().to_owned();
    let written = end::finishing(tasks, &id, Some(record), |record| {
        if !ending.applies(record, now) {
            return false;
        }
        record.error = Some(ending.error().to_object());
        record.finish(TaskStatus::Failed, keep);
        true
    })
    .await?;
    if let Some((_, true)) = &written {
        tasks.forget(&id);
        match ending {
            Ending::Expired => tracing::warn!(task = %id, "failed a task: it expired"),
            Ending::NoWorker(wait) => tracing::warn!(
                task = %id,
                waited_s = wait.as_secs(),
                "failed a task no worker took: none is alive in the task store (serve the same server with \
                 mcp_mrtr::tasks::Worker, or raise TaskConfig::worker_wait)"
            ),
        }
    }
    Ok(written.map(|(record, _)| record))
}

/// Whether `record` waits for a run to take it: working, and no run holds it.
fn unrun(record: &TaskRecord) -> bool {
    record.status == TaskStatus::Working && record.lease.is_none()
}

/// How long `record` has been as it is: since its last write.
fn waited(record: &TaskRecord, now: SystemTime) -> Duration {
    let since = UNIX_EPOCH + Duration::from_millis(record.updated_at_ms);
    now.duration_since(since).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::tasks::store::tests::record;
    use crate::ext::tasks::store::Lease;

    #[test]
    fn only_a_working_task_no_run_holds_says_it_waits_for_a_worker() {
        let left = shown(record("left", None));
        assert_eq!(left.status_message.as_deref(), Some(WAITING));

        let mut held = record("held", None);
        held.lease = Some(Lease { holder: "run".into(), until_ms: u64::MAX });
        held.status_message = Some("halfway".into());
        assert_eq!(shown(held).status_message.as_deref(), Some("halfway"));

        let mut asking = record("asking", None);
        asking.status = TaskStatus::InputRequired;
        assert_eq!(shown(asking).status_message, None);
    }
}
