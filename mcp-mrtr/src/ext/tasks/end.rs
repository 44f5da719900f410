//! How a task ended, told to the application ([`TaskConfig::on_end`](crate::tasks::TaskConfig::on_end)):
//! the one place to undo what a cancelled, failed or expired task left half done.
//!
//! A handler cannot do that itself. A cancel drops its future where it stands (at once
//! on the instance that runs it, at its next lease renewal elsewhere), a task waiting
//! for a person holds no future at all, and a `Drop` guard in the handler runs each time
//! it suspends at an ask, not only at the end.
//!
//! The hook runs once per task, on the instance whose write made the task final (one
//! write wins the store's compare-and-set), after that write: a crash in between loses
//! it. It runs in a task of its own, so a slow hook holds up no request.

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt as _;
use serde::de::DeserializeOwned;

use super::store::{TaskRecord, TaskStatus};
use super::write::transition;
use super::Tasks;
use crate::base::caller::Caller;
use crate::base::error::Error;
use crate::intake::state_values::StateValues;
use crate::protocol::{ErrorObject, JsonObject};

/// How a task ended, with what it was called with: see
/// [`TaskConfig::on_end`](crate::tasks::TaskConfig::on_end).
#[derive(Clone, Debug)]
pub struct TaskEnd {
    id: String,
    tool: String,
    arguments: JsonObject,
    status: TaskStatus,
    expired: bool,
    error: Option<ErrorObject>,
    result: Option<serde_json::Value>,
    caller: Option<Caller>,
    values: StateValues,
}

impl TaskEnd {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool the task ran.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The arguments the tool was called with, as the task kept them: the fields the
    /// tool's argument type reads.
    pub fn arguments(&self) -> &JsonObject {
        &self.arguments
    }

    /// The arguments read as `T`, such as the tool's own argument struct.
    pub fn arguments_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_value(serde_json::Value::Object(self.arguments.clone()))
    }

    /// `Completed`, `Failed` or `Cancelled`.
    pub fn status(&self) -> TaskStatus {
        self.status
    }

    /// Whether the task did what it was asked: completed with a result that is not a
    /// tool error. A handler that returned `Err` (a declined form through `?`, say) ends
    /// `Completed` with `isError: true`, which is not a success.
    pub fn succeeded(&self) -> bool {
        self.status == TaskStatus::Completed && !self.is_tool_error()
    }

    /// Whether it completed with a tool error (`isError: true`).
    pub fn is_tool_error(&self) -> bool {
        self.result.as_ref().is_some_and(|result| result["isError"] == true)
    }

    /// The `CallToolResult` a completed task ended with.
    pub fn result(&self) -> Option<&serde_json::Value> {
        self.result.as_ref()
    }

    /// The server's value of type `T` ([`Server::with_state`](crate::Server::with_state)),
    /// as a handler's `State<T>` gets it: what to clean up usually lives there.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<std::sync::Arc<T>> {
        self.values.get::<T>()
    }

    /// Whether the task failed because it reached the end of its lifetime (its `ttlMs`)
    /// before it finished: still waiting for an answer, or still running.
    pub fn expired(&self) -> bool {
        self.expired
    }

    /// The JSON-RPC error a failed task ended with.
    pub fn error(&self) -> Option<&ErrorObject> {
        self.error.as_ref()
    }

    /// Who last acted on the task: the caller that created it, or answered it last.
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_ref()
    }
}

/// The hook as the task machinery holds it.
pub(crate) type EndHook = Arc<dyn Fn(TaskEnd) -> BoxFuture<'static, ()> + Send + Sync>;

/// `hook` as the machinery holds it.
pub(crate) fn hook<F, Fut>(hook: F) -> EndHook
where
    F: Fn(TaskEnd) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |end| hook(end).boxed())
}

/// What a live task that reached the end of its lifetime ends with. `data.expired` tells
/// it from other failures, to clients and to the end hook.
pub(crate) fn expired_error() -> Error {
    Error::internal("the task reached the end of its lifetime (ttlMs) before it finished")
        .with_data(serde_json::json!({ "expired": true }))
}

/// [`transition`], telling the end hook when the write made a live task final.
pub(super) async fn finishing(
    tasks: &Tasks,
    id: &str,
    guess: Option<TaskRecord>,
    mut change: impl FnMut(&mut TaskRecord) -> bool,
) -> Result<Option<(TaskRecord, bool)>, Error> {
    let hook = tasks.on_end.as_ref();
    let mut before = None;
    let written = transition(&*tasks.store, id, guess, |record| {
        // Taken before the change: a final record forgets the arguments.
        before = before_end(hook, record, &tasks.values);
        change(record)
    })
    .await?;
    if let Some((record, true)) = &written {
        if record.status.is_terminal() {
            ended(hook, before, record);
        }
    }
    Ok(written)
}

/// What a task's last live record says. `None` when no hook listens (nothing is copied
/// then), or the task was final already.
fn before_end(hook: Option<&EndHook>, record: &TaskRecord, values: &StateValues) -> Option<TaskEnd> {
    if hook.is_none() || record.status.is_terminal() {
        return None;
    }
    Some(TaskEnd {
        id: record.id().to_owned(),
        tool: record.call.tool.clone(),
        arguments: record.call.arguments.clone(),
        status: record.status,
        expired: false,
        error: None,
        result: None,
        caller: record.call.caller.as_ref().map(|c| Caller::new(c.id.clone()).with_scopes(c.scopes.iter().cloned())),
        values: values.clone(),
    })
}

/// Tells the hook that the task ended as `record` (its final record) says.
fn ended(hook: Option<&EndHook>, before: Option<TaskEnd>, record: &TaskRecord) {
    let (Some(hook), Some(mut end)) = (hook, before) else { return };
    end.status = record.status;
    end.error.clone_from(&record.error);
    end.result.clone_from(&record.result);
    end.expired = end.error.as_ref().and_then(|e| e.data.as_ref()).is_some_and(|data| data["expired"] == true);
    let run = hook(end);
    let task = record.id().to_owned();
    // Outside any runtime (a store written from a plain thread) there is nowhere to run it.
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(task = %task, "a task ended outside a runtime: its end hook did not run");
        return;
    };
    runtime.spawn(async move {
        if std::panic::AssertUnwindSafe(run).catch_unwind().await.is_err() {
            tracing::error!(task = %task, "the task end hook panicked");
        }
    });
}
