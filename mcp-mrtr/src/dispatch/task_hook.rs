//! The door the tasks extension comes in by (ARCHITECTURE.md, "Layers of the runtime"):
//! dispatch defines what it asks of the extension here, and `tasks` implements it, so
//! nothing below the extensions names them. Dispatch decides whether a `tools/call` may
//! become a task ([`may_become_task`]: the tool's [`TaskSupport`] and what the client
//! declared); the hook decides what becomes of it, and answers the extension's own methods.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::Engine;
use crate::base::error::Error;
use crate::intake::capability::Capability;
use crate::intake::envelope::RequestMeta;
use crate::mrtr::context::Delivery;
use crate::mrtr::replay::{Outcome, Replay};
use crate::protocol::{CallToolResult, ClientCapabilities, JsonObject, Method};
use crate::routes::handler::TaskSupport;

/// A tool handler's future, as a task holds it.
pub(crate) type ToolFuture = BoxFuture<'static, Result<CallToolResult, Error>>;

/// What a `tools/call` that may become a task turned into.
pub(crate) enum Called {
    /// An ordinary round: the result, or the questions of an MRTR round.
    Round(Outcome<Result<CallToolResult, Error>>),
    /// A task: the `CreateTaskResult` body.
    Task(JsonObject),
}

/// The `tools/call` a task may be made of, as dispatch received it.
pub(crate) struct TaskRequest<'a> {
    pub(crate) tool: &'a str,
    pub(crate) arguments: &'a JsonObject,
    pub(crate) meta: &'a RequestMeta,
    pub(crate) delivery: &'a Delivery,
}

/// What dispatch asks of the tasks extension.
pub(crate) trait TaskHook: Send + Sync {
    /// Starts looking for other instances' tasks to take over; later calls do nothing.
    fn watch(&self, engine: &Engine);

    /// Gives back the tasks running here: runs inside a `once!` step finish it first (for
    /// at most the tasks' stop grace), then their handlers stop and their leases are
    /// released.
    fn hand_back(&self) -> BoxFuture<'_, ()>;

    /// How long past a call's end a task made from it may still run (its TTL, bounded):
    /// the claims of a call that may become a task are kept that much longer.
    fn horizon(&self) -> std::time::Duration;

    /// Answers one of the extension's methods; the body is stamped by dispatch.
    fn serve<'a>(
        &'a self,
        engine: &'a Engine,
        method: Method,
        params: Value,
        meta: &'a RequestMeta,
        delivery: &'a Delivery,
    ) -> BoxFuture<'a, Result<JsonObject, Error>>;

    /// Runs one round of a `tools/call` that may become a task: the round's outcome, or
    /// the task the call continued as, with `handler` moved into it.
    fn call<'a>(
        &'a self,
        engine: &'a Engine,
        request: TaskRequest<'a>,
        replay: Arc<Replay>,
        handler: ToolFuture,
    ) -> BoxFuture<'a, Result<Called, Error>>;
}

/// Whether this `tools/call` may become a task: `Err(-32021)` when the tool needs one and
/// the client did not declare tasks on this request. Legacy (2025-11-25) calls never
/// become tasks: the extension does not exist in that revision, so a tool that needs one
/// cannot be served there: `-32601`, as 2025-11-25 answers a call of a task-required tool
/// made without a task (its session's `tools/list` leaves such tools out).
pub(crate) fn may_become_task(support: TaskSupport, caps: &ClientCapabilities, legacy: bool) -> Result<bool, Error> {
    let declared = !legacy && Capability::Tasks.is_declared_in(caps);
    match support {
        TaskSupport::Forbidden => Ok(false),
        TaskSupport::Optional => Ok(declared),
        TaskSupport::Required if declared => Ok(true),
        TaskSupport::Required if legacy => Err(Error::task_only_tool_in_legacy_session()),
        TaskSupport::Required => Err(Error::missing_client_capability(Capability::Tasks.as_object())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::TASKS_EXTENSION;

    fn caps(value: serde_json::Value) -> ClientCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn tasks_only_for_clients_that_declare_them_on_a_modern_request() {
        let declared = caps(json!({ "extensions": { TASKS_EXTENSION: {} } }));
        let silent = caps(json!({}));
        assert!(may_become_task(TaskSupport::Optional, &declared, false).unwrap());
        assert!(!may_become_task(TaskSupport::Optional, &declared, true).unwrap());
        assert!(!may_become_task(TaskSupport::Optional, &silent, false).unwrap());
        assert!(!may_become_task(TaskSupport::Forbidden, &declared, false).unwrap());
        assert!(may_become_task(TaskSupport::Required, &declared, false).unwrap());
        let refused = may_become_task(TaskSupport::Required, &silent, false).unwrap_err();
        assert_eq!(refused.code(), crate::base::error::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(refused.data().unwrap()["requiredCapabilities"], json!({ "extensions": { TASKS_EXTENSION: {} } }));
        let legacy = may_become_task(TaskSupport::Required, &declared, true).unwrap_err();
        assert_eq!(legacy.code(), crate::base::error::ErrorCode::METHOD_NOT_FOUND);
    }
}
