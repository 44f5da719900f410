//! `tasks/get`, `tasks/update` and `tasks/cancel`.
//!
//! Checks, in order: the client declared the extension on this request (`-32021`, even
//! for an id that does not exist), the params are well-formed, and the task exists and
//! belongs to the caller (`-32602` for both, so another caller's ids do not leak).
//!
//! A task belongs to the principal of the request that created it (its authenticated
//! caller, else what the server's principal hook names), and is reached only by a
//! request with exactly that principal. A task created with none is reached only by
//! requests with none: on a server without authentication everyone shares it, as
//! before, but a caller with a principal (authenticated, or named by the hook) never
//! reaches it, however it learned the id.
//!
//! `tasks/update` also asks what `tools/call` asks, of the request answering now (see
//! `dispatch::access`): its caller must still see the task's tool and hold its scopes.
//! A caller whose token lost a scope since the task began cannot approve it (`403`), and
//! a tool hidden from it reads as an unknown tool. The replay that the answers start runs
//! as that caller, with its scopes now, not those recorded at creation.

use serde::Deserialize;
use serde_json::Value;

use super::driver;
use super::store::{TaskRecord, TaskStatus};
use super::write::transition;
use super::Runtime;
use super::{caller, store_error, wire};
use super::{lease, takeover, unrun};
use crate::base::error::Error;
use crate::intake::capability::Capability;
use crate::intake::envelope::RequestMeta;
use crate::mrtr::context::Delivery;
use crate::protocol::{JsonObject, Method};
use crate::routes::catalog::RequestView;

/// The task methods this revision has. `tasks/result` and `tasks/list` were removed and
/// are unknown methods (`-32601`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskMethod {
    Get,
    Update,
    Cancel,
}

impl TaskMethod {
    /// The extension's method `method` is, if it is one of them.
    pub(crate) fn of(method: Method) -> Option<Self> {
        Some(match method {
            Method::TasksGet => Self::Get,
            Method::TasksUpdate => Self::Update,
            Method::TasksCancel => Self::Cancel,
            _ => return None,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    task_id: String,
    #[serde(default)]
    input_responses: Option<Value>,
}

/// Answers one `tasks/*` request; the body is stamped by dispatch.
pub(crate) async fn serve(
    server: &Runtime<'_>,
    method: TaskMethod,
    params: Value,
    meta: &RequestMeta,
    delivery: &Delivery,
) -> Result<JsonObject, Error> {
    crate::intake::capability::missing(&meta.client_capabilities, [Capability::Tasks])?;
    let params: TaskParams =
        serde_json::from_value(params).map_err(|e| Error::invalid_params(format!("Invalid params: {e}")))?;
    let caller = caller(server, delivery);
    let mut record = if method == TaskMethod::Update {
        answered(server, &params.task_id, caller.as_deref()).await?
    } else {
        find(server, &params.task_id, caller.as_deref()).await?
    };
    // A front end ends what no worker will: see `unrun` (boxed: rare, and its future is big).
    if !server.tasks.runs_here {
        record = Box::pin(unrun::settle(server, record)).await?.ok_or_else(|| unknown_task(&params.task_id))?;
    }
    if method == TaskMethod::Get {
        server.tasks.asked.saw(&record);
    }
    // It may have ended on another instance: it no longer counts against its client here.
    if record.status().is_terminal() {
        server.tasks.forget(record.id());
    }
    // A client polling a task whose runner died need not wait for the next look (unless
    // tasks run on workers: they look often).
    if server.tasks.runs_here && record.lease_lapsed(std::time::SystemTime::now()) {
        takeover::take_over(server, record.id(), Some(record.clone())).await?;
    }
    match method {
        TaskMethod::Get if server.tasks.runs_here => Ok(wire::detailed(&record)),
        TaskMethod::Get => Ok(wire::detailed(&unrun::shown(record))),
        TaskMethod::Update => {
            may_answer(server, &record, &RequestView::new(meta, delivery))?;
            update(server, &record, params.input_responses, delivery).await
        }
        TaskMethod::Cancel => cancel(server, &record).await,
    }
}

/// The caller's task: unknown, expired and someone else's read the same.
async fn find(server: &Runtime<'_>, id: &str, caller: Option<&str>) -> Result<TaskRecord, Error> {
    let record = server.tasks.store.get(id).await.map_err(store_error)?;
    record.filter(|record| record.owner.as_deref() == caller).ok_or_else(|| unknown_task(id))
}

/// The caller's task that `tasks/update` answers: the record the client's last poll here
/// read, when it waited for answers then (its owner checked all the same; the write
/// decides on the store, see `asked`), else the store's.
async fn answered(server: &Runtime<'_>, id: &str, caller: Option<&str>) -> Result<TaskRecord, Error> {
    match server.tasks.asked.take(id).filter(|record| record.owner.as_deref() == caller) {
        Some(record) => Ok(record),
        None => find(server, id, caller).await,
    }
}

/// "Unknown task", with the client's id cut short (ours are 32 characters).
fn unknown_task(id: &str) -> Error {
    Error::unknown("task", id)
}

/// Refuses answers from a caller who may not call the task's tool now, as `tools/call`
/// would refuse it: `403` for a missing scope, an unknown tool for a hidden (or removed) one.
fn may_answer(server: &Runtime<'_>, record: &TaskRecord, view: &RequestView<'_>) -> Result<(), Error> {
    server.callable_tool(view, &record.call.tool).map(drop)
}

/// Journals the answers to open questions; unknown, answered or late keys are ignored.
/// When the last open question is answered, the handler is replayed, as the caller of
/// `delivery` (who answered).
async fn update(
    server: &Runtime<'_>,
    record: &TaskRecord,
    responses: Option<Value>,
    delivery: &Delivery,
) -> Result<JsonObject, Error> {
    let responses = match responses {
        None => JsonObject::new(),
        Some(Value::Object(responses)) => responses,
        Some(_) => return Err(Error::invalid_params("inputResponses must be an object keyed like inputRequests")),
    };
    // The run that replays the handler once the last question is answered: it takes the
    // lease in the same write, so exactly one instance runs it.
    let run = lease::new_run()?;
    let answering = super::caller_record(delivery);
    // An instance shutting down runs nothing new, nor does a front end whose tasks run on
    // workers: the task is left without a lease (handed back), and another instance (a
    // worker) takes it over at its next look (audit B15).
    let closing = server.tasks.leaves_runs();
    let answer = |record: &mut TaskRecord| {
        if record.status != TaskStatus::InputRequired {
            return false;
        }
        let mut took = false;
        for (key, answer) in &responses {
            took |= record.answer(key, answer);
        }
        if took {
            record.call.caller.clone_from(&answering);
        }
        if took && record.input_requests.is_empty() {
            record.status = TaskStatus::Working;
            record.lease = (!closing).then(|| server.tasks.lease_for(&run));
        }
        took
    };
    // The last answers and what the replay they start does at once, in one write.
    if !closing && driver::answer(server, record, run.clone(), answer).await? {
        return Ok(JsonObject::new());
    }
    // The record read for this request, or the one the last poll read here: the write
    // starts from it, and a stale one falls back to a read.
    let changed = transition(&*server.tasks.store, record.id(), Some(record.clone()), answer).await?;
    match changed {
        // Gone since it was read (expired, or the guess outlived it).
        None => return Err(unknown_task(record.id())),
        Some((record, true)) if record.status == TaskStatus::Working && !closing => {
            driver::start(server, &record, run).await?;
        }
        Some(_) => {}
    }
    Ok(JsonObject::new())
}

/// Cancels the task and drops its handler where it stands (at once here; on another
/// instance at its next lease renewal); a task that already ended keeps its status and
/// the request is acknowledged all the same.
async fn cancel(server: &Runtime<'_>, record: &TaskRecord) -> Result<JsonObject, Error> {
    let keep = server.tasks.limits.keep_finished;
    super::end::finishing(server.tasks, record.id(), Some(record.clone()), |record| {
        let live = !record.status.is_terminal();
        if live {
            record.finish(TaskStatus::Cancelled, keep);
        }
        live
    })
    .await?;
    server.tasks.running.abort(record.id());
    server.tasks.forget(record.id());
    Ok(JsonObject::new())
}
