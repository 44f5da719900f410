//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a `tools/call` that
//! answers at once with a task id, which the client polls with `tasks/get`, answers with
//! `tasks/update` and stops with `tasks/cancel`.
//!
//! A task runs the same handler as a multi-round call; its answers and `once!` results
//! live in a [`TaskRecord`] in a [`TaskStore`] ([`MemoryTaskStore`] for one instance, the
//! `redis` feature's `RedisTaskStore` for several). [`TaskLimits`] bounds them, and
//! [`TaskEnd`] is what the end hook hears. See the [tasks guide](crate::guide::tasks).

// For maintainers:
//
// Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a `tools/call` that
// answers at once with a task id, which the client polls with `tasks/get`, answers with
// `tasks/update` and stops with `tasks/cancel`.
//
// A task runs the same handler as a multi-round call, through the same replay driver
// (see the [tasks guide](crate::guide::tasks)). Only the journal moves: answers and
// `once!` results live in the task's [`TaskRecord`] in a [`TaskStore`] instead of a sealed
// `requestState`. A task waiting
// for a person holds no future: `tasks/update` journals the answers and replays the
// handler from the top.
//
// One door in: [`Tasks`] is dispatch's `TaskHook` (a `tools/call` of a tool that
// supports tasks goes to `driver::call`, and `tasks/*` to `methods::serve`). Code here
// sees the server as a [`Runtime`]: the engine, and the task machinery.
//
// Bounds (a total and a share per client, as for every pool; [`TaskLimits`]):
// `admission` decides whether a client may create one more task (a rate and live caps,
// per client and in all); `base::kept_arguments` keeps only what the tool's argument type
// reads, within a size cap (`limits::check_arguments`); runs take a slot of their
// own and have a time limit (`driver`); status messages are coalesced (`status`); a
// finished record drops its inputs and is kept for a shorter time (`store`).

mod admission;
mod asked;
mod config;
mod driver;
mod end;
mod lease;
mod limits;
mod memory;
mod methods;
mod running;
mod sharing;
mod status;
mod store;
mod takeover;
mod unrun;
mod wire;
mod worker;
mod write;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub use config::TaskConfig;
pub(crate) use end::EndHook;
pub use end::TaskEnd;
use lease::DEFAULT_LEASE;
pub use limits::TaskLimits;
pub use memory::MemoryTaskStore;
pub(crate) use running::Running;
pub(crate) use worker::work;
pub use worker::Worker;

/// The future a [`TaskStore`] returns (a re-export of `futures_util`'s), so a store of your
/// own needs no other crate to name it.
pub use futures_util::future::BoxFuture;
pub(crate) use store::{CallerRecord, TaskCall};
pub use store::{StoreError, TaskRecord, TaskStatus, TaskStore};

use crate::base::error::Error;
use crate::dispatch::{Called, Engine, TaskHook, TaskRequest, ToolFuture};
use crate::mrtr::context::Delivery;

/// How long a task's record is kept after it is created, unless the server says otherwise.
const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);

/// How often clients are told to poll `tasks/get`.
const POLL_INTERVAL_MS: u64 = 500;

/// How long past its call's end a task with no TTL (`TaskConfig::ttl(None)`) made from a
/// call whose states clients hold may run: the call's claims are kept this much longer,
/// and such a task lives no longer (see `driver::ledger`).
const HORIZON_WITHOUT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The server's task machinery: where records live, how long, which tasks run here,
/// and how long a run's lease on its task lasts.
#[derive(Clone)]
pub(crate) struct Tasks {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) ttl: Option<Duration>,
    pub(crate) running: Arc<Running>,
    pub(crate) limits: TaskLimits,
    /// Who may create one more task: the creation rate and the live counts.
    pub(crate) admission: Arc<admission::Admission>,
    /// One permit per task run at once ([`TaskLimits::max_runs`]); FIFO, so runs
    /// waiting for one start in the order they came.
    pub(crate) runs: Arc<tokio::sync::Semaphore>,
    pub(crate) lease: Duration,
    /// How long a graceful stop waits for runs inside a `once!` step to finish it
    /// ([`TaskConfig::stop_grace`]).
    pub(crate) stop_grace: Duration,
    /// Whether this server already looks for tasks to take over (see `takeover::watch`).
    pub(crate) watching: Arc<AtomicBool>,
    /// Set by the hand-back at shutdown: this instance takes no task (back) any more.
    pub(crate) closing: Arc<AtomicBool>,
    /// Tasks of tools this instance does not serve that its last look read past.
    pub(crate) passed_over: Arc<std::sync::atomic::AtomicUsize>,
    /// Whether it said so at WARN already (once; at DEBUG after).
    pub(crate) told_not_served: Arc<AtomicBool>,
    /// Its notes of the server's name in the store, and the other servers found there.
    pub(crate) sharing: Arc<sharing::Sharing>,
    /// Whether this instance runs task work: `false` on a front end whose tasks run on
    /// workers ([`TaskConfig::run_on_workers`]); a [`Worker`] always does.
    pub(crate) runs_here: bool,
    /// How long a task left for workers waits while none is alive ([`TaskConfig::worker_wait`]).
    pub(crate) worker_wait: Duration,
    /// The application's cleanup when a task ends ([`TaskConfig::on_end`]).
    pub(crate) on_end: Option<EndHook>,
    /// The server's application state, for that cleanup: set when serving starts.
    pub(crate) values: crate::intake::state_values::StateValues,
    /// Tasks waiting for answers as last read here, for `tasks/update` to start from.
    pub(crate) asked: Arc<asked::Asked>,
}

impl Default for Tasks {
    fn default() -> Self {
        let limits = TaskLimits::default();
        Self {
            store: Arc::new(MemoryTaskStore::new()),
            ttl: Some(DEFAULT_TTL),
            running: Arc::default(),
            limits,
            admission: Arc::new(admission::Admission::new(&limits)),
            runs: Arc::new(tokio::sync::Semaphore::new(limits.max_runs)),
            lease: DEFAULT_LEASE,
            stop_grace: running::DEFAULT_GRACE,
            watching: Arc::default(),
            closing: Arc::default(),
            passed_over: Arc::default(),
            told_not_served: Arc::default(),
            sharing: Arc::default(),
            runs_here: true,
            worker_wait: TaskConfig::default().worker_wait,
            on_end: None,
            values: crate::intake::state_values::StateValues::default(),
            asked: Arc::default(),
        }
    }
}

impl Tasks {
    /// The same machinery as `config` says, with fresh counts and run slots (a builder
    /// step: nothing is counted before the server serves).
    pub(crate) fn configured(self, config: TaskConfig) -> Self {
        let TaskConfig { store, ttl, lease, stop_grace, limits, on_end, on_workers, worker_wait } = config;
        Self {
            store,
            runs_here: !on_workers,
            worker_wait,
            ttl,
            lease,
            stop_grace,
            on_end,
            limits,
            admission: Arc::new(admission::Admission::new(&limits)),
            runs: Arc::new(tokio::sync::Semaphore::new(limits.max_runs)),
            asked: Arc::default(),
            ..self
        }
    }

    /// Whether a task this instance creates or resumes is left in the store for another
    /// to run: on a front end whose tasks run on workers, or once it shuts down.
    pub(crate) fn leaves_runs(&self) -> bool {
        !self.runs_here || self.closing.load(std::sync::atomic::Ordering::Acquire)
    }

    /// How long past its call's end a task made from it may still run: its TTL, or a day
    /// for tasks that have none.
    pub(crate) fn horizon(&self) -> Duration {
        self.ttl.unwrap_or(HORIZON_WITHOUT_TTL)
    }

    /// The task `id` ended, or is gone: it no longer counts against its client.
    pub(crate) fn forget(&self, id: &str) {
        self.admission.release(id);
    }
}

/// Who a request's client is, for the per-client task bounds (see [`TaskLimits`]).
pub(crate) fn client_of(delivery: &Delivery) -> crate::bounds::fair::ClientId {
    crate::bounds::fair::ClientId::of(&delivery.extensions)
}

/// Who is asking: tasks are visible only to the caller that created them. With
/// [`caller_record`] and [`delivery_for`], the one place tasks learn the caller.
pub(crate) fn caller(server: &Engine, delivery: &Delivery) -> Option<String> {
    server.principal_of(delivery)
}

/// The authenticated caller of a request, as a task's record keeps it.
pub(crate) fn caller_record(delivery: &Delivery) -> Option<CallerRecord> {
    let caller = delivery.caller()?;
    Some(CallerRecord { id: caller.id().to_owned(), scopes: caller.scopes().map(str::to_owned).collect() })
}

/// What a replay of a task knows of its request: no stream, no headers, and the caller
/// recorded in the task (the one who created it, then whoever answered it last: see
/// `methods`; other request extensions are not kept).
pub(crate) fn delivery_for(caller: Option<&CallerRecord>) -> Delivery {
    let mut extensions = axum::http::Extensions::new();
    if let Some(caller) = caller {
        extensions
            .insert(crate::base::caller::Caller::new(caller.id.clone()).with_scopes(caller.scopes.iter().cloned()));
    }
    Delivery { extensions: Arc::new(extensions), ..Delivery::default() }
}

/// 128 random bits as hex: task ids must not be guessable.
fn new_task_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for a task id: {e}")))?;
    Ok(crate::base::hex::encode(&bytes))
}

#[allow(clippy::needless_pass_by_value, reason = "called as map_err(store_error)")]
fn store_error(error: StoreError) -> Error {
    // The details stay in the server's log: they may describe its infrastructure.
    tracing::warn!(%error, "task store failed");
    Error::internal("the task store is unavailable")
}

/// The server as the task machinery sees it: the engine that runs handlers (reached
/// through `Deref`), and the machinery's own state.
pub(crate) struct Runtime<'a> {
    engine: &'a Engine,
    pub(crate) tasks: &'a Tasks,
}

impl std::ops::Deref for Runtime<'_> {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        self.engine
    }
}

impl TaskHook for Tasks {
    fn watch(&self, engine: &Engine) {
        takeover::watch(&Runtime { engine, tasks: self });
    }

    fn hand_back(&self) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(Tasks::hand_back(self))
    }

    fn horizon(&self) -> Duration {
        Tasks::horizon(self)
    }

    fn serve<'a>(
        &'a self,
        engine: &'a Engine,
        method: crate::protocol::Method,
        params: serde_json::Value,
        meta: &'a crate::intake::envelope::RequestMeta,
        delivery: &'a Delivery,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::protocol::JsonObject, Error>> {
        Box::pin(async move {
            let method = methods::TaskMethod::of(method).ok_or_else(|| Error::method_not_found(method.name()))?;
            methods::serve(&Runtime { engine, tasks: self }, method, params, meta, delivery).await
        })
    }

    fn call<'a>(
        &'a self,
        engine: &'a Engine,
        request: TaskRequest<'a>,
        replay: Arc<crate::mrtr::replay::Replay>,
        handler: ToolFuture,
    ) -> futures_util::future::BoxFuture<'a, Result<Called, Error>> {
        let call = TaskCall {
            tool: request.tool.to_owned(),
            arguments: request.arguments.clone(),
            protocol_version: request.meta.protocol_version.clone(),
            client_capabilities: request.meta.client_capabilities.clone(),
            client_info: request.meta.client_info.clone(),
            caller: caller_record(request.delivery),
        };
        let owner = caller(engine, request.delivery);
        let client = client_of(request.delivery);
        Box::pin(
            async move { driver::call(&Runtime { engine, tasks: self }, call, owner, client, replay, handler).await },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_distinct_128_bit_hex() {
        let (a, b) = (new_task_id().unwrap(), new_task_id().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
