//! Taking over a task whose run died (see the tasks and many-instances chapters of the
//! guide): every serving instance looks for lapsed leases every half lease, from the
//! moment it starts serving ([`watch`]), and takes those tasks over: it claims the lease
//! by compare-and-set and replays the handler from the journal. So a task whose instance
//! died resumes within about one and a half leases. A front end that runs no task only
//! checks that a worker is alive to ([`check_for_workers`]); workers look with [`look`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::lease::new_run;
use super::store::{Lease, TaskRecord, TaskStatus, TaskStore};
use super::{driver, Runtime, Tasks};
use crate::base::error::Error;
use crate::dispatch::Engine;

/// A task whose runs died this many times is failed instead of taken over again: a
/// handler that brings its instance down would otherwise take every instance down in turn.
const MAX_TAKEOVERS: u32 = 3;

/// Lapsed tasks taken over per look, per instance: the others wait for the next look
/// (or another instance), so one instance does not take on a dead one's whole load at once.
pub(super) const TAKE_PER_LOOK: usize = 32;

/// Starts, once per server, the look for tasks whose runner died. It ends when the
/// server (every clone of it) is gone, or hands its tasks back.
///
/// Serving starts it, so an instance that no request has reached yet still takes over
/// a dead instance's tasks. Each request calls it too, which starts it where serving
/// could not: in-process use (`TestClient`), or a router built outside a runtime.
pub(crate) fn watch(server: &Runtime<'_>) {
    // A load first: once started, this is a read of a shared cache line per request.
    let watching = &server.tasks.watching;
    if watching.load(Ordering::Relaxed) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    if watching.swap(true, Ordering::AcqRel) {
        return;
    }
    if !server.tasks.runs_here {
        // A front end runs no task: it only says when no worker is there to, and notes
        // its server in the store (once: it may not outlive this request).
        let (tasks, name) = (server.tasks.clone(), server.info.name.clone());
        runtime.spawn(async move {
            check_for_workers(&*tasks.store).await;
            super::sharing::note(&tasks, &name).await;
        });
        return;
    }
    // The loop's engine holds no hook: the tasks' `running` then counts only the
    // engines that serve, and this loop's own clone of the machinery.
    let engine = crate::dispatch::Engine { tasks: None, ..Engine::clone(server) };
    let tasks = server.tasks.clone();
    runtime.spawn(async move {
        let server = Runtime { engine: &engine, tasks: &tasks };
        let mut looks = tokio::time::interval(look_every(server.tasks));
        looks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            looks.tick().await;
            // `running` is shared by every clone of the server: when only this loop's
            // clone holds it, the server was dropped.
            if Arc::strong_count(&server.tasks.running) == 1 || server.tasks.closing.load(Ordering::Acquire) {
                return;
            }
            super::sharing::note(server.tasks, &server.info.name).await;
            look(&server, TAKE_PER_LOOK).await;
        }
    });
}

/// One look: takes over at most `limit` tasks whose lease lapsed (or that have none), and
/// ends those at the end of their lifetime. Tasks of tools this instance does not serve are
/// left where they are, and the next look asks for as many more, so they never crowd out
/// the tasks it can run.
pub(super) async fn look(server: &Runtime<'_>, limit: usize) {
    let passed_over = &server.tasks.passed_over;
    let asked = limit + passed_over.load(Ordering::Relaxed).min(MAX_PASSED_OVER);
    match server.tasks.store.lapsed(SystemTime::now(), asked).await {
        Ok(ids) => {
            let (mut taken, mut left) = (0, 0);
            for id in ids {
                if taken == limit {
                    break;
                }
                match take_over(server, &id, None).await {
                    Ok(Taken::NotServedHere) => left += 1,
                    Ok(Taken::Done) => taken += 1,
                    Err(error) => tracing::warn!(task = %id, %error, "could not take over a task"),
                }
            }
            passed_over.store(left, Ordering::Relaxed);
        }
        Err(error) => tracing::warn!(%error, "could not look for tasks to take over"),
    }
}

/// The most tasks of tools it does not serve that a look reads past.
const MAX_PASSED_OVER: usize = 1024;

/// What [`take_over`] did with a task.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Took it over, failed it, or found nothing to do (its lease held, or it ended).
    Done,
    /// Left it: this instance does not serve its tool, so an instance that does runs it.
    NotServedHere,
}

/// How often an instance looks for tasks to act on: every half lease, and often enough
/// to see a live task reach its end of life at least twice before its record goes (the
/// notice is a tenth of the ttl, at most a minute), and never more than 20 times a second.
fn look_every(tasks: &Tasks) -> Duration {
    let notice = tasks.ttl.map_or(Duration::MAX, super::store::expiry_notice);
    (tasks.lease / 2).min(notice / 2).max(Duration::from_millis(50))
}

/// Takes the task `id` over if its lease has lapsed: claims the lease (only one instance
/// can, by compare-and-set) and replays the handler from the journal. `known` is the
/// record if the caller just read it.
///
/// A task of a tool this instance does not serve is left for one that does (a worker of
/// the previous release, in a rolling upgrade, or another server on the same store): it
/// fails only at the end of its lifetime, which any instance may see to.
pub(crate) async fn take_over(server: &Runtime<'_>, id: &str, known: Option<TaskRecord>) -> Result<Taken, Error> {
    if server.tasks.leaves_runs() {
        return Ok(Taken::Done);
    }
    let run = new_run()?;
    let now = SystemTime::now();
    let tasks = &server.tasks;
    let keep = tasks.limits.keep_finished;
    let mut not_served = None;
    let claimed = super::end::finishing(tasks, id, known, |record| {
        if record.lease_lapsed(now) && !record.past_deadline(now) && server.find_tool(&record.call.tool).is_none() {
            not_served = Some(record.call.tool.clone());
            return false;
        }
        not_served = None;
        claim(record, tasks.lease_for(&run), now, keep)
    })
    .await?;
    if let Some(tool) = not_served {
        tell_not_served(tasks, id, &tool);
        return Ok(Taken::NotServedHere);
    }
    match claimed {
        Some((record, true)) if record.status == TaskStatus::Working => {
            // `takeovers` counts runners that died; a task handed back, or left for workers
            // by a front end, has none to replace.
            tracing::info!(task = %id, takeovers = record.takeovers, "taking over a task with no live runner");
            driver::start(server, &record, run).await?;
        }
        Some((record, true)) => {
            // A run of it may still be going here (an expired task): it ends now.
            tasks.running.abort(id);
            tasks.forget(id);
            let why = if record.takeovers > MAX_TAKEOVERS { "its runs kept dying" } else { "it expired" };
            tracing::warn!(task = %id, "failed a task: {why}");
        }
        _ => {}
    }
    Ok(Taken::Done)
}

/// Says, at WARN the first time on this instance and at DEBUG after, that it leaves a task
/// of a tool it does not serve.
fn tell_not_served(tasks: &Tasks, id: &str, tool: &str) {
    let why = "this instance does not serve its tool, so it leaves the task to one that does (an instance of \
               another release, or another server sharing the task store's prefix); it fails at the end of its \
               lifetime if none takes it";
    if tasks.told_not_served.swap(true, Ordering::Relaxed) {
        tracing::debug!(task = %id, %tool, "{why}");
    } else {
        tracing::warn!(task = %id, %tool, "{why}");
    }
}

/// Claims a lapsed task for the run holding `lease`; `false` (nothing to write) when its
/// lease has not lapsed. A task handed back on shutdown (no lease) is taken freely; one
/// whose run died counts a takeover, and fails after [`MAX_TAKEOVERS`] (kept for `keep`).
/// A live task at the end of its lifetime fails as expired, running or waiting.
fn claim(record: &mut TaskRecord, lease: Lease, now: SystemTime, keep: Duration) -> bool {
    if !record.lease_lapsed(now) {
        return false;
    }
    if record.past_deadline(now) {
        record.error = Some(super::end::expired_error().to_object());
        record.finish(TaskStatus::Failed, keep);
        return true;
    }
    if record.lease.is_some() {
        record.takeovers += 1;
        if record.takeovers > MAX_TAKEOVERS {
            let error = Error::internal(format!(
                "the task stopped {MAX_TAKEOVERS} times while running (its instance died each time); it is not run again"
            ));
            record.error = Some(error.to_object());
            record.finish(TaskStatus::Failed, keep);
            return true;
        }
    }
    record.lease = Some(lease);
    true
}

/// What a front end that runs no task checks when it starts: that a worker is alive to.
async fn check_for_workers(store: &dyn TaskStore) {
    match store.workers(SystemTime::now()).await {
        Ok(Some(0)) => tracing::warn!(
            "tasks run on workers (TaskConfig::run_on_workers), and no task worker is alive in the task store: \
             tasks created here wait until one runs (serve the same server with mcp_mrtr::tasks::Worker)"
        ),
        Ok(Some(workers)) => tracing::info!(workers, "tasks run on workers"),
        Ok(None) => tracing::info!("tasks run on workers; this task store does not count them"),
        Err(error) => tracing::warn!(%error, "tasks run on workers; could not count them in the task store"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::tasks::store::now_ms;
    use crate::ext::tasks::store::tests::record;

    const KEEP: Duration = Duration::from_secs(600);

    fn lease(holder: &str, until_ms: u64) -> Lease {
        Lease { holder: holder.into(), until_ms }
    }

    #[test]
    fn only_lapsed_working_tasks_are_claimed() {
        let now = SystemTime::now();
        let mut live = record("live", None);
        live.lease = Some(lease("a", now_ms() + 60_000));
        assert!(!claim(&mut live, lease("b", 0), now, KEEP));
        assert_eq!(live.lease.as_ref().unwrap().holder, "a");

        let mut waiting = record("waiting", None);
        waiting.status = TaskStatus::InputRequired;
        assert!(!claim(&mut waiting, lease("b", 0), now, KEEP), "a task waiting for a person has no runner to replace");

        let mut handed_back = record("handed-back", None);
        assert!(claim(&mut handed_back, lease("b", 1), now, KEEP));
        assert_eq!((handed_back.lease.unwrap().holder.as_str(), handed_back.takeovers), ("b", 0));
    }

    #[test]
    fn a_task_whose_runs_keep_dying_fails_instead_of_taking_every_instance_down() {
        let now = SystemTime::now();
        let mut task = record("crashy", None);
        for takeover in 1..=MAX_TAKEOVERS {
            task.lease = Some(lease("dead", 1));
            assert!(claim(&mut task, lease(&format!("run{takeover}"), 1), now, KEEP));
            assert_eq!((task.status, task.takeovers), (TaskStatus::Working, takeover));
        }
        task.lease = Some(lease("dead", 1));
        assert!(claim(&mut task, lease("one-too-many", 1), now, KEEP));
        assert_eq!(task.status, TaskStatus::Failed);
        assert!(task.lease.is_none());
        assert!(task.error.unwrap().message.contains("stopped 3 times"));
    }
}
