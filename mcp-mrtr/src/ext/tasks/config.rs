//! [`TaskConfig`]: everything about how a server keeps and runs tasks, as one value.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::end::{hook, EndHook};
use super::lease::{DEFAULT_LEASE, MIN_LEASE};
use super::{MemoryTaskStore, TaskEnd, TaskLimits, TaskStore, DEFAULT_TTL};

/// How long a task waits for a worker while none is alive ([`TaskConfig::worker_wait`]).
const DEFAULT_WORKER_WAIT: Duration = Duration::from_secs(60);

/// How a server keeps and runs its tasks: where their records live, how long, how long a
/// run's lease lasts, their bounds, and what runs when one ends. Give it to
/// [`Server::tasks`](crate::Server::tasks); every part has a default meant for production.
///
/// ```
/// use std::time::Duration;
///
/// use mcp_mrtr::tasks::{MemoryTaskStore, TaskConfig, TaskLimits, TaskStatus};
/// use mcp_mrtr::Server;
///
/// let tasks = TaskConfig::default()
///     .store(MemoryTaskStore::new()) // the `redis` feature's RedisTaskStore for a fleet
///     .ttl(Some(Duration::from_secs(2 * 3600)))
///     .limits(TaskLimits::default().max_live_tasks_per_client(4))
///     .on_end(|end| async move {
///         if end.tool() == "deploy" && end.status() != TaskStatus::Completed {
///             // e.g. mark the deployment as rolled back in your database
///             tracing::info!(expired = end.expired(), "deploy ended early; rolling back");
///         }
///     });
/// let server = Server::new("deploys", "1.0.0").tasks(tasks);
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct TaskConfig {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) ttl: Option<Duration>,
    pub(crate) lease: Duration,
    pub(crate) stop_grace: Duration,
    pub(crate) limits: TaskLimits,
    pub(crate) on_end: Option<EndHook>,
    pub(crate) on_workers: bool,
    pub(crate) worker_wait: Duration,
}

impl Default for TaskConfig {
    /// Records in memory for an hour, 10 s leases, 10 s for a stop to let steps finish,
    /// [`TaskLimits::default`], no end hook, tasks run where they are created (or, on
    /// workers, wait a minute for one to be alive).
    fn default() -> Self {
        Self {
            store: Arc::new(MemoryTaskStore::new()),
            ttl: Some(DEFAULT_TTL),
            lease: DEFAULT_LEASE,
            stop_grace: super::running::DEFAULT_GRACE,
            limits: TaskLimits::default(),
            on_end: None,
            on_workers: false,
            worker_wait: DEFAULT_WORKER_WAIT,
        }
    }
}

impl TaskConfig {
    /// Where task records live (default: a [`MemoryTaskStore`], for one instance).
    /// Several instances serving the same tasks need a store they share (the `redis`
    /// feature's `RedisTaskStore`).
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// How long a task's record is kept after the task is created (default one hour);
    /// `None` keeps it as long as the store does. After that, `tasks/get` no longer
    /// knows the task. A task that finished is kept for a shorter time, within this:
    /// [`TaskLimits::keep_finished`]. A live task expires shortly before its record does
    /// (a tenth of this, at most a minute), and fails with `error.data.expired`.
    ///
    /// A task made from a call that asked in rounds first (so its client holds states of
    /// the call) lives at most until the call's `once!` claims are forgotten: the call's
    /// lifetime plus this TTL, as both were when the call began (a day, with `None`). Only a
    /// TTL raised since the call began, or `None`, makes that shorter than the TTL.
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long a running task's lease lasts unless renewed (default 10 s, at least
    /// 300 ms). The instance running a task renews it every third of this; every
    /// instance looks for lapsed leases every half of it and takes those tasks over,
    /// replaying the handler from the task's journal. So a task whose instance died
    /// resumes within about 1.5× this, and a `tasks/cancel` received by another instance
    /// stops the handler within a third of it. Shorter means faster takeover and more
    /// store writes (one per running task per renewal).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(MIN_LEASE);
        self
    }

    /// How long a graceful stop (SIGTERM, a rolling deploy,
    /// [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown),
    /// [`Server::hand_back_tasks`](crate::Server::hand_back_tasks)) waits for task runs
    /// inside a `once!` step to finish the step and record its result before their tasks
    /// are handed back (default 10 s). Runs between steps stop at once; a run in a step
    /// starts no other, and is stopped when its step's result is stored, so the instance
    /// that takes its task over replays the result instead of taking the step again.
    ///
    /// A step still running when this is up is cut off, as a crash would cut it: the
    /// next run takes it again (see [`Ctx::step_key`](crate::Ctx::step_key) for the shape
    /// a step needs to survive that). Over HTTP this wait comes after the requests' drain
    /// ([`ListenerLimits::shutdown_timeout`](crate::http::ListenerLimits::shutdown_timeout)),
    /// so keep both together under the platform's kill deadline (Kubernetes'
    /// `terminationGracePeriodSeconds`, 30 s by default).
    pub fn stop_grace(mut self, grace: Duration) -> Self {
        self.stop_grace = grace;
        self
    }

    /// How many tasks this instance holds and runs, for how long, and how big their
    /// arguments may be: see [`TaskLimits`] for each bound, its default and the memory it
    /// allows.
    pub fn limits(mut self, limits: TaskLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs no task work on the instances that serve requests (`true`), and leaves it to
    /// [`Worker`](crate::tasks::Worker)s: processes serving the same server, sharing its
    /// task store, that only run tasks. Default `false`: tasks run where they are created
    /// or answered, and any instance takes over those whose runner died.
    ///
    /// For front ends that stop when their response is sent, such as AWS Lambda
    /// functions. Such a front end still runs each `tools/call` until its handler
    /// continues as a task (the rounds before it, and their `once!` steps), and still
    /// answers `tasks/get`, `tasks/update` and `tasks/cancel`; a task it creates or whose
    /// last question it answers is stored with no runner, and a worker takes it at its next
    /// look ([`Worker::look_every`](crate::tasks::Worker::look_every)). Meanwhile its
    /// `statusMessage` says it waits for a worker; with none alive in the store it fails
    /// after [`worker_wait`](Self::worker_wait), and a front end that starts when the store
    /// has seen no worker alive warns so in the log. The store must be one the workers
    /// share (the `redis` feature's `RedisTaskStore`, or one [`MemoryTaskStore`] behind an
    /// `Arc` in one process).
    pub fn run_on_workers(mut self, on_workers: bool) -> Self {
        self.on_workers = on_workers;
        self
    }

    /// On a front end whose tasks run on workers ([`run_on_workers`](Self::run_on_workers)),
    /// how long a task may wait for one to take it while the task store counts no worker
    /// alive (default one minute). Past it, the client's next `tasks/get` finds the task
    /// failed, with a message saying no worker was available, and the front end logs it
    /// at WARN. While it waits, its `statusMessage` says so. Workers that are alive but
    /// busy are waited for as long as the task lives; a store that cannot count workers
    /// ([`TaskStore::workers`]) waits as long too.
    ///
    /// A front end runs no look of its own, so this is checked when a client polls, and so
    /// is the end of a task's lifetime: an expired task fails on the front end too, even
    /// with no worker alive to see it.
    pub fn worker_wait(mut self, wait: Duration) -> Self {
        self.worker_wait = wait;
        self
    }

    /// Runs `hook` when a task ends: completed, failed (its handler failed, its run timed
    /// out, or it expired: [`TaskEnd::expired`]) or cancelled. It is where to undo what a
    /// task left half done, since its handler cannot: a cancel drops the handler where it
    /// stands, a task waiting for an answer holds no handler at all, and a `Drop` guard
    /// inside the handler runs at every ask too.
    ///
    /// The hook runs once per task, on the instance whose write made the task final
    /// (other instances sharing the store do not run it), in a task of its own after that
    /// write; a crash in between loses it. It gets the task's tool, arguments and last
    /// caller, and the server's state.
    pub fn on_end<F, Fut>(mut self, hook_fn: F) -> Self
    where
        F: Fn(TaskEnd) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_end = Some(hook(hook_fn));
        self
    }
}

impl fmt::Debug for TaskConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskConfig")
            .field("ttl", &self.ttl)
            .field("lease", &self.lease)
            .field("stop_grace", &self.stop_grace)
            .field("limits", &self.limits)
            .field("on_end", &self.on_end.is_some())
            .field("run_on_workers", &self.on_workers)
            .field("worker_wait", &self.worker_wait)
            .finish_non_exhaustive()
    }
}
