//! Task workers: processes that only run task work from the shared store, for front ends
//! that run none ([`TaskConfig::run_on_workers`](super::TaskConfig::run_on_workers)), such
//! as AWS Lambda functions, which stop the moment their response is sent.
//!
//! A worker is the same server, served by [`Worker`] instead of a transport that takes
//! requests: it looks for tasks that have no runner (created or answered on a front end,
//! or whose runner died) often, takes each by compare-and-set on its lease, and replays
//! its handler from the journal, exactly as an instance takes over a dead one's tasks
//! (`takeover`). Its asks park the task for a front end to answer. It says it is alive in
//! the store every few seconds, so a front end that starts with no worker alive says so.

use std::future::Future;
use std::time::{Duration, SystemTime};

use super::{takeover, Runtime, TaskStore, Tasks};
use crate::dispatch::Engine;

/// How often a worker looks for tasks to run, unless [`Worker::look_every`] says otherwise.
const DEFAULT_LOOK: Duration = Duration::from_millis(250);

/// How often a worker says it is alive; it is counted alive for three times this.
const BEAT: Duration = Duration::from_secs(5);

/// Serves a server as a task worker: `server.serve(Worker::new()).await` runs the tasks
/// that front ends (built from the same server with
/// [`TaskConfig::run_on_workers`](super::TaskConfig::run_on_workers)) create and resume,
/// from the task store they share, until SIGTERM or Ctrl-C (or the signal given to
/// [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown)); then
/// it hands its running tasks back for another worker to take. It takes no requests.
///
/// Run as many as the load needs, on something that keeps running between requests (a
/// container, a VM): a worker holds a task's run for as long as its handler works. Each
/// runs at most [`TaskLimits::max_runs`](super::TaskLimits::max_runs) tasks at once.
///
/// ```no_run
/// use mcp_mrtr::tasks::{TaskConfig, Worker};
/// use mcp_mrtr::Server;
///
/// # async fn run(store: mcp_mrtr::tasks::MemoryTaskStore) -> Result<(), mcp_mrtr::serve::ServeError> {
/// // The same builder as the front ends' (tools, state, keys, task store).
/// let server = Server::new("deploys", "1.0.0").tasks(TaskConfig::default().store(store).run_on_workers(true));
/// server.serve(Worker::new()).await
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Worker {
    pub(crate) look: Duration,
}

impl Default for Worker {
    /// Looks for tasks to run every 250 ms.
    fn default() -> Self {
        Self { look: DEFAULT_LOOK }
    }
}

impl Worker {
    /// A worker with the default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// How often the worker looks for tasks with no runner (default 250 ms, at least
    /// 10 ms): the most a task created or answered on a front end waits before its
    /// handler runs again, when a worker has a run slot free. Each look is one
    /// store query (one per bucket on a Redis Cluster), whatever the number of tasks.
    pub fn look_every(mut self, every: Duration) -> Self {
        self.look = every.max(Duration::from_millis(10));
        self
    }
}

/// Runs task work until `stop`, then hands the running tasks back.
pub(crate) async fn work(engine: Engine, tasks: Tasks, worker: Worker, stop: impl Future<Output = ()>) {
    let id = match super::new_task_id() {
        Ok(id) => id,
        Err(error) => {
            tracing::error!(%error, "a task worker cannot start");
            return;
        }
    };
    // Alive in the store before it says it runs: a front end that starts on hearing this
    // finds it there.
    say_alive(&*tasks.store, &id).await;
    tracing::info!(worker = %id, look_every = ?worker.look, "running tasks from the task store");
    // The newcomer's export ran on a worker and read an empty ledger: say it where it shows.
    tracing::info!(
        worker = %id,
        "this worker is a process of its own: its Server::with_state values are the ones it built, and \
         what handlers on the front end put in theirs is not here; share what a task reads through a \
         store both reach (a database, Redis)"
    );
    // Runs hold an engine without the hook, as an instance's look does (`takeover::watch`).
    let engine = Engine { tasks: None, ..engine };
    let host = Runtime { engine: &engine, tasks: &tasks };
    let mut looks = tokio::time::interval(worker.look);
    looks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut beats = tokio::time::interval(BEAT);
    beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            _ = beats.tick() => {
                say_alive(&*tasks.store, &id).await;
                super::sharing::note(&tasks, &engine.info.name).await;
            }
            _ = looks.tick() => {
                // As many as it has run slots free: a task taken beyond them would hold its
                // lease waiting here while another worker sits idle.
                let free = tasks.runs.available_permits();
                if free > 0 {
                    takeover::look(&host, free.min(takeover::TAKE_PER_LOOK)).await;
                }
            }
        }
    }
    tasks.hand_back().await;
    tracing::info!(worker = %id, "stopped: tasks running here handed back");
}

async fn say_alive(store: &dyn TaskStore, id: &str) {
    if let Err(error) = store.worker_alive(id, SystemTime::now() + 3 * BEAT).await {
        tracing::warn!(%error, "a task worker could not say it is alive");
    }
}
