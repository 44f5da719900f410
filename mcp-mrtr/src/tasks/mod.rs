//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a `tools/call` that
//! answers at once with a task id, which the client polls with `tasks/get`, answers with
//! `tasks/update` and stops with `tasks/cancel`.
//!
//! A task runs the same handler as a multi-round call, through the same replay driver
//! (DESIGN §11). Only the journal moves: answers and `once!` results live in the task's
//! [`TaskRecord`] in a [`TaskStore`] instead of a sealed `requestState`. A task waiting
//! for a person holds no future: `tasks/update` journals the answers and replays the
//! handler from the top.
//!
//! Doors in from dispatch: [`call`] for a `tools/call` of a tool that supports tasks,
//! and [`serve`] for `tasks/*`.
//!
//! Bounds (DESIGN §13, [`TaskLimits`]): `admission` decides whether a client may create
//! one more task (a rate and live caps, per client and in all); `arguments` keeps only
//! what the tool's argument type reads, within a size cap; runs take a slot of their
//! own and have a time limit (`driver`); status messages are coalesced (`status`); a
//! finished record drops its inputs and is kept for a shorter time (`store`).

mod admission;
mod driver;
mod lease;
mod limits;
mod memory;
mod methods;
mod status;
mod store;
mod wire;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use driver::{call, Called, Running};
use lease::DEFAULT_LEASE;
pub(crate) use lease::{watch, MIN_LEASE};
pub use limits::TaskLimits;
pub use memory::MemoryTaskStore;
pub(crate) use methods::{serve, TaskMethod};
pub(crate) use store::{CallerRecord, TaskCall};
pub use store::{StoreError, TaskRecord, TaskStatus, TaskStore};

use crate::context::Transport;
use crate::handler::TaskSupport;
use crate::protocol::ClientCapabilities;
use crate::{Capability, Error, Server};

/// The extension's id, in `capabilities.extensions` of both sides.
pub(crate) use crate::protocol::TASKS_EXTENSION as EXTENSION;

/// How long a task's record is kept after it is created, unless the server says otherwise.
const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);

/// How often clients are told to poll `tasks/get`.
const POLL_INTERVAL_MS: u64 = 500;

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
    /// Whether this server already looks for tasks to take over (see `lease::watch`).
    pub(crate) watching: Arc<AtomicBool>,
    /// Set by the hand-back at shutdown: this instance takes no task (back) any more.
    pub(crate) closing: Arc<AtomicBool>,
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
            watching: Arc::default(),
            closing: Arc::default(),
        }
    }
}

impl Tasks {
    /// The same machinery bounded by `limits`, with fresh counts and run slots (a
    /// builder step: nothing is counted before the server serves).
    pub(crate) fn with_limits(self, limits: TaskLimits) -> Self {
        Self {
            limits,
            admission: Arc::new(admission::Admission::new(&limits)),
            runs: Arc::new(tokio::sync::Semaphore::new(limits.max_runs)),
            ..self
        }
    }

    /// The task `id` ended, or is gone: it no longer counts against its client.
    pub(crate) fn forget(&self, id: &str) {
        self.admission.release(id);
    }
}

/// Who a request's client is, for the per-client task bounds (see [`TaskLimits`]).
pub(crate) fn client_of(transport: &Transport) -> crate::fair::ClientId {
    crate::fair::ClientId::of(&transport.extensions)
}

/// Whether this `tools/call` may become a task: `Err(-32021)` when the tool needs one and
/// the client did not declare tasks on this request. Legacy (2025-11-25) calls never
/// become tasks: the extension does not exist in that revision, so a tool that needs one
/// cannot be served there (`-32603`, as declaring anything would not help).
pub(crate) fn may_become_task(support: TaskSupport, caps: &ClientCapabilities, legacy: bool) -> Result<bool, Error> {
    let declared = !legacy && Capability::Tasks.is_declared_in(caps);
    match support {
        TaskSupport::Forbidden => Ok(false),
        TaskSupport::Optional => Ok(declared),
        TaskSupport::Required if declared => Ok(true),
        TaskSupport::Required if legacy => {
            Err(Error::internal("this tool runs only as a task, and tasks need protocol version 2026-07-28"))
        }
        TaskSupport::Required => Err(Error::missing_client_capability(Capability::Tasks.as_object())),
    }
}

/// Who is asking: tasks are visible only to the caller that created them. With
/// [`caller_record`] and [`transport_for`], the one place tasks learn the caller.
pub(crate) fn caller(server: &Server, transport: &Transport) -> Option<String> {
    server.principal_of(transport)
}

/// The authenticated caller of a request, as a task's record keeps it.
pub(crate) fn caller_record(transport: &Transport) -> Option<CallerRecord> {
    let caller = transport.caller()?;
    Some(CallerRecord { id: caller.id().to_owned(), scopes: caller.scopes().map(str::to_owned).collect() })
}

/// What a replay of a task knows of its request: no stream, no headers, and the caller
/// recorded in the task (the one who created it, then whoever answered it last: see
/// `methods`; other request extensions are not kept).
pub(crate) fn transport_for(caller: Option<&CallerRecord>) -> Transport {
    let mut extensions = axum::http::Extensions::new();
    if let Some(caller) = caller {
        extensions.insert(crate::Caller::new(caller.id.clone()).with_scopes(caller.scopes.iter().cloned()));
    }
    Transport { extensions: Arc::new(extensions), ..Transport::default() }
}

/// 128 random bits as hex: task ids must not be guessable.
fn new_task_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for a task id: {e}")))?;
    Ok(crate::hex::encode(&bytes))
}

#[allow(clippy::needless_pass_by_value, reason = "called as map_err(store_error)")]
fn store_error(error: StoreError) -> Error {
    // The details stay in the server's log: they may describe its infrastructure.
    tracing::warn!(%error, "task store failed");
    Error::internal("the task store is unavailable")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn caps(value: serde_json::Value) -> ClientCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn tasks_only_for_clients_that_declare_them_on_a_modern_request() {
        let declared = caps(json!({ "extensions": { EXTENSION: {} } }));
        let silent = caps(json!({}));
        assert!(may_become_task(TaskSupport::Optional, &declared, false).unwrap());
        assert!(!may_become_task(TaskSupport::Optional, &declared, true).unwrap());
        assert!(!may_become_task(TaskSupport::Optional, &silent, false).unwrap());
        assert!(!may_become_task(TaskSupport::Forbidden, &declared, false).unwrap());
        assert!(may_become_task(TaskSupport::Required, &declared, false).unwrap());
        let refused = may_become_task(TaskSupport::Required, &silent, false).unwrap_err();
        assert_eq!(refused.code(), crate::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(refused.data().unwrap()["requiredCapabilities"], json!({ "extensions": { EXTENSION: {} } }));
        let legacy = may_become_task(TaskSupport::Required, &declared, true).unwrap_err();
        assert_eq!(legacy.code(), crate::ErrorCode::INTERNAL_ERROR);
    }

    #[test]
    fn task_ids_are_distinct_128_bit_hex() {
        let (a, b) = (new_task_id().unwrap(), new_task_id().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
