//! Running tasks: turning a `tools/call` into a task, driving its handler until it
//! finishes or waits for a person, and replaying it when the answers arrive.
//!
//! A task's handler runs in a spawned tokio task registered in [`Running`], so
//! `tasks/cancel` can drop it wherever it stands. When it suspends on questions its
//! future is dropped and only the record remains; [`resume`] starts it again from the
//! journal. Every write is a compare-and-set [`transition`] that never leaves a final
//! status, so a handler finishing after a cancel changes nothing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::task::AbortHandle;

use super::store::{TaskCall, TaskRecord, TaskStatus, TaskStore};
use super::{new_task_id, store_error, wire, Tasks};
use crate::envelope::RequestMeta;
use crate::handler::ToolRoute;
use crate::protocol::{CallToolResult, InputRequest, JsonObject, RequestId};
use crate::replay::{self, Carried, Outcome, Replay, StatusSink, Step};
use crate::{Ctx, Error, Server};

/// A tool handler's future, as tasks hold it.
pub(crate) type ToolFuture = BoxFuture<'static, Result<CallToolResult, Error>>;

/// Writers that lose a compare-and-set race retry from a fresh read, this many times.
const MAX_RACES: u32 = 16;

/// What a `tools/call` that may become a task turned into.
pub(crate) enum Called {
    /// An ordinary round: the result, or the questions of an MRTR round.
    Round(Outcome<Result<CallToolResult, Error>>),
    /// A task: the `CreateTaskResult` body.
    Task(JsonObject),
}

/// Runs one round of a call that may become a task. When the handler asks to continue
/// as a task, or waits on its own work, the task is created (durably, before anything
/// is answered) with the answers and `once!` results gathered so far, and the live
/// handler moves into it.
pub(crate) async fn call(
    server: &Server,
    call: TaskCall,
    owner: Option<String>,
    replay: Arc<Replay>,
    mut handler: ToolFuture,
) -> Result<Called, Error> {
    replay.allow_task();
    let caps = call.client_capabilities.clone();
    match replay::step(&replay, &caps, handler.as_mut()).await? {
        Step::Round(outcome) => Ok(Called::Round(outcome)),
        Step::ContinueAsTask => {
            let tasks = &server.tasks;
            let record = TaskRecord::new(new_task_id()?, owner, call, replay.carried(), tasks.ttl);
            tasks.store.create(record.clone()).await.map_err(store_error)?;
            launch(tasks, record.id(), caps, replay, handler);
            Ok(Called::Task(wire::task(&record)))
        }
    }
}

/// Replays a task's handler from the top with its journal and the answers received.
pub(crate) fn resume(server: &Server, route: &ToolRoute, record: &TaskRecord) {
    let replay = Arc::new(Replay::new(Some(record.journal.clone()), record.input_responses.clone()));
    let meta = RequestMeta {
        protocol_version: record.call.protocol_version.clone(),
        client_capabilities: record.call.client_capabilities.clone(),
        client_info: record.call.client_info.clone(),
        ..RequestMeta::default()
    };
    let id = RequestId::from(record.id());
    let transport = super::transport_for(record.call.caller.as_ref());
    let ctx = Ctx::new(id, meta, transport, server.logging, replay.clone(), server.app.clone());
    let handler = route.run(ctx, record.call.arguments.clone());
    launch(&server.tasks, record.id(), record.call.client_capabilities.clone(), replay, handler);
}

/// Spawns the handler as the task `id`.
fn launch(
    tasks: &Tasks,
    id: &str,
    caps: crate::protocol::ClientCapabilities,
    replay: Arc<Replay>,
    handler: ToolFuture,
) {
    replay.enter_task(status_sink(tasks.store.clone(), id.to_owned()));
    let (store, task_id) = (tasks.store.clone(), id.to_owned());
    tasks.running.spawn(id, async move {
        let settled = run(&replay, &caps, handler).await;
        let written = transition(&*store, &task_id, |record| settle(record, &settled)).await;
        if let Err(error) = written {
            tracing::warn!(task = %task_id, %error, "could not record how a task ended");
        }
    });
}

/// How one run of a task's handler ended.
enum Settled {
    Completed(Value),
    Failed(Error),
    Waiting(std::collections::BTreeMap<String, InputRequest>, Carried),
}

async fn run(replay: &Arc<Replay>, caps: &crate::protocol::ClientCapabilities, mut handler: ToolFuture) -> Settled {
    let step = replay::step(replay, caps, handler.as_mut()).await;
    // A task waiting for a person holds no future (DESIGN §11).
    drop(handler);
    match step {
        Ok(Step::Round(Outcome::Complete(Ok(result)))) => {
            let mut result =
                serde_json::to_value(result).unwrap_or_else(|e| json!({ "content": [], "error": e.to_string() }));
            // The inlined result is a 2026-07-28 CallToolResult, which names its type.
            result["resultType"] = json!("complete");
            Settled::Completed(result)
        }
        Ok(Step::Round(Outcome::Complete(Err(error)))) | Err(error) => Settled::Failed(error),
        Ok(Step::Round(Outcome::InputRequired(questions, journal))) => Settled::Waiting(questions, journal),
        Ok(Step::ContinueAsTask) => Settled::Failed(Error::internal("a task cannot continue as a task")),
    }
}

/// The record after a run; a final status (a cancel that came first) is never left.
fn settle(record: &mut TaskRecord, settled: &Settled) -> bool {
    if record.status.is_terminal() {
        return false;
    }
    record.input_responses.clear();
    match settled {
        Settled::Completed(result) => {
            record.status = TaskStatus::Completed;
            record.result = Some(result.clone());
        }
        Settled::Failed(error) => {
            record.status = TaskStatus::Failed;
            record.error = Some(error.to_object());
        }
        Settled::Waiting(questions, journal) => {
            record.status = TaskStatus::InputRequired;
            record.ask(questions);
            record.journal = journal.clone();
        }
    }
    true
}

/// Progress messages of a running task become its `statusMessage`.
fn status_sink(store: Arc<dyn TaskStore>, id: String) -> StatusSink {
    Arc::new(move |message: String| {
        let (store, id) = (store.clone(), id.clone());
        Box::pin(async move {
            let written = transition(&*store, &id, |record| {
                let live = !record.status.is_terminal();
                if live {
                    record.status_message = Some(message.clone());
                }
                live
            })
            .await;
            if let Err(error) = written {
                tracing::debug!(task = %id, %error, "could not record a status message");
            }
        })
    })
}

/// Applies `change` to the record `id` by compare-and-set, retrying lost races from a
/// fresh read. `change` returns whether it changed anything (nothing is written if not).
/// `Ok(None)` for an unknown task; otherwise the record as it now stands, and whether
/// this call wrote it.
pub(super) async fn transition(
    store: &dyn TaskStore,
    id: &str,
    mut change: impl FnMut(&mut TaskRecord) -> bool,
) -> Result<Option<(TaskRecord, bool)>, Error> {
    for _ in 0..MAX_RACES {
        let Some(current) = store.get(id).await.map_err(store_error)? else { return Ok(None) };
        let mut next = current.next();
        if !change(&mut next) {
            return Ok(Some((current, false)));
        }
        if store.replace(current.version(), next.clone()).await.map_err(store_error)? {
            return Ok(Some((next, true)));
        }
    }
    Err(Error::internal("the task changed too often to be updated"))
}

/// The tasks whose handlers run in this process, so `tasks/cancel` can stop them.
#[derive(Debug, Default)]
pub(crate) struct Running {
    handles: Mutex<HashMap<String, (u64, AbortHandle)>>,
    generation: AtomicU64,
}

impl Running {
    fn spawn(self: &Arc<Self>, id: &str, run: impl Future<Output = ()> + Send + 'static) {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let (running, key) = (self.clone(), id.to_owned());
        // Held across the spawn, so the handle is registered before the run can end
        // and unregister itself.
        let mut handles = self.lock();
        let task = tokio::spawn(async move {
            run.await;
            running.finished(&key, generation);
        });
        handles.insert(id.to_owned(), (generation, task.abort_handle()));
    }

    fn finished(&self, id: &str, generation: u64) {
        let mut handles = self.lock();
        if handles.get(id).is_some_and(|(g, _)| *g == generation) {
            handles.remove(id);
        }
    }

    /// Drops the task's handler where it stands, if it runs here.
    pub(super) fn abort(&self, id: &str) {
        if let Some((_, handle)) = self.lock().remove(id) {
            handle.abort();
        }
    }

    /// Drops every task handler running here.
    pub(super) fn abort_all(&self) {
        for (_, (_, handle)) in self.lock().drain() {
            handle.abort();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, AbortHandle)>> {
        self.handles.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
