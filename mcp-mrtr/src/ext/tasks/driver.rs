//! Running tasks: turning a `tools/call` into a task, driving its handler until it
//! finishes or waits for a person, and replaying it when the answers arrive.
//!
//! A task's handler runs in a spawned tokio task registered in [`Running`], so
//! `tasks/cancel` can drop it wherever it stands. When it suspends on questions its
//! future is dropped and only the record remains; [`start`] runs it again from the
//! journal, on whichever instance. Every write is a compare-and-set [`transition`], and
//! every write of a run is fenced by its lease (see `lease`): a handler finishing after
//! a cancel, or after another instance took its task over, changes nothing.
//!
//! A task is created only within [`TaskLimits`](super::TaskLimits): its arguments are
//! cut to what the tool reads and capped, and its client admitted (`admission`). Each
//! run waits for one of the instance's run slots and is stopped at its time limit.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tokio::task::AbortHandle;

use super::status::StatusWriter;
use super::store::{Lease, TaskCall, TaskRecord, TaskStatus};
use super::write::RunWrites;
use super::Host;
use super::{admission, lease, new_task_id, store_error, wire, Tasks};
use crate::bounds::fair::ClientId;
use crate::dispatch::{Called, ToolFuture};
use crate::intake::envelope::RequestMeta;
use crate::mrtr::replay::{self, Carried, Outcome, Replay, Step, TaskLog};
use crate::protocol::{ClientCapabilities, InputRequest, RequestId};
use crate::{Ctx, Error};

/// Runs one round of a call that may become a task. When the handler asks to continue
/// as a task, or waits on its own work, the task is created (durably, before anything
/// is answered) with the answers and `once!` results gathered so far, and the live
/// handler moves into it, holding the task's lease.
pub(crate) async fn call(
    server: &Host<'_>,
    call: TaskCall,
    owner: Option<String>,
    client: ClientId,
    replay: Arc<Replay>,
    mut handler: ToolFuture,
) -> Result<Called, Error> {
    replay.allow_task();
    let caps = call.client_capabilities.clone();
    match replay::step(&replay, &caps, handler.as_mut()).await? {
        Step::Round(outcome) => Ok(Called::Round(outcome)),
        Step::ContinueAsTask => create(server, call, owner, &client, replay, handler).await,
    }
}

/// Creates the task the call continues as, and moves its handler into a run. Refused
/// (the handler is dropped where it stands, as for any failed call) when its arguments
/// are over the cap, or its client or this instance may not have one more task.
async fn create(
    server: &Host<'_>,
    mut call: TaskCall,
    owner: Option<String>,
    client: &ClientId,
    replay: Arc<Replay>,
    handler: ToolFuture,
) -> Result<Called, Error> {
    let tasks = &server.tasks;
    let route = server.find_tool(&call.tool);
    if let Some(route) = &route {
        call.arguments = (route.decoded_arguments)(&call.arguments);
    }
    super::limits::check_arguments(&tasks.limits, &call.arguments)?;
    let caps = call.client_capabilities.clone();
    let run = lease::new_run()?;
    let mut record = TaskRecord::new(new_task_id()?, owner, call, replay.carried(), tasks.ttl);
    record.lease = Some(tasks.lease_for(&run));
    let admitted = admission::admit(tasks, client, record.id(), record.expires_at()).await?;
    tasks.store.create(record.clone()).await.map_err(store_error)?;
    admitted.keep();
    let limit = route.and_then(|route| route.task_timeout).or(tasks.limits.run_timeout);
    launch(tasks, &record, run, limit, caps, replay, handler);
    Ok(Called::Task(wire::task(&record)))
}

/// Runs a `working` task whose lease the run `run` holds: replays its handler from the
/// top with its journal and the answers received, or fails the task if its tool is gone.
pub(crate) async fn start(server: &Host<'_>, record: &TaskRecord, run: String) -> Result<(), Error> {
    let tasks = &server.tasks;
    let Some(route) = server.find_tool(&record.call.tool) else {
        let error = Error::internal(format!("the tool {:?} of this task is no longer served", record.call.tool));
        super::end::finishing(tasks, record.id(), Some(record.clone()), |record| {
            let held = record.is_held_by(&run);
            if held {
                record.error = Some(error.to_object());
                record.finish(TaskStatus::Failed, tasks.limits.keep_finished);
            }
            held
        })
        .await?;
        tasks.forget(record.id());
        return Ok(());
    };
    let replay = Arc::new(Replay::new(Some(record.journal.clone()), record.input_responses.clone()));
    let meta = Arc::new(RequestMeta {
        protocol_version: record.call.protocol_version.clone(),
        client_capabilities: record.call.client_capabilities.clone(),
        client_info: record.call.client_info.clone(),
        ..RequestMeta::default()
    });
    let id = RequestId::from(record.id());
    let transport = super::transport_for(record.call.caller.as_ref());
    let ctx = Ctx::new(id, meta, transport, server.logging, replay.clone(), server.app.clone());
    let handler = route.run(ctx, record.call.arguments.clone());
    let limit = route.task_timeout.or(tasks.limits.run_timeout);
    launch(tasks, record, run, limit, record.call.client_capabilities.clone(), replay, handler);
    Ok(())
}

/// Spawns the handler as the run `run` of the task whose record (holding the run's
/// lease) is `record`, keeping its lease while it waits for a run slot and runs (for at
/// most `limit`). The handler is dropped when the lease is lost (the task was
/// cancelled, or another instance took it over after this one stalled).
fn launch(
    tasks: &Tasks,
    record: &TaskRecord,
    run: String,
    limit: Option<Duration>,
    caps: ClientCapabilities,
    replay: Arc<Replay>,
    handler: ToolFuture,
) {
    let id = record.id();
    let writes = RunWrites::new(tasks.store.clone(), record, &run);
    let status = StatusWriter::new(writes.clone());
    let log = StoreLog { writes: writes.clone(), status: status.clone(), lease: tasks.lease };
    // One span per run, outliving the request that created the task, in the trace of
    // the flow it continues.
    let span = crate::intake::telemetry::task_run_span(id, &run, replay.carried().origin());
    replay.enter_task(Arc::new(log));
    let (tasks_here, task_id, holder) = (tasks.clone(), id.to_owned(), run.clone());
    tasks.running.spawn(
        id,
        run,
        tracing::Instrument::instrument(
            async move {
                let settled = tokio::select! {
                    settled = in_slot(&tasks_here.runs, limit, self::run(&replay, &caps, handler)) => settled,
                    () = lease::keep(&tasks_here, &writes) => return,
                };
                // The last status message, if one still waits, goes into the final write.
                let message = status.take_pending();
                let keep = tasks_here.limits.keep_finished;
                let written = super::end::finishing(&tasks_here, &task_id, writes.last(), |record| {
                    settle(record, &settled, &holder, message.as_ref(), keep)
                })
                .await;
                match written {
                    // Waiting for answers, or taken over by another run: still live.
                    Ok(Some((record, _))) if !record.status.is_terminal() => {}
                    Ok(_) => tasks_here.forget(&task_id),
                    Err(error) => tracing::warn!(task = %task_id, %error, "could not record how a task ended"),
                }
            },
            span,
        ),
    );
}

/// Runs `run` once one of the instance's run slots is free (waiting in line for it),
/// failing it when it takes longer than `limit`.
async fn in_slot(runs: &Semaphore, limit: Option<Duration>, run: impl Future<Output = Settled>) -> Settled {
    // The semaphore is never closed.
    let Ok(_slot) = runs.acquire().await else { return Settled::Failed(Error::internal("task runs are closed")) };
    let Some(limit) = limit else { return run.await };
    tokio::time::timeout(limit, run).await.unwrap_or_else(|_| Settled::Failed(timed_out(limit)))
}

fn timed_out(limit: Duration) -> Error {
    Error::internal(format!(
        "the task timed out after {}, the longest one run of this tool may take, and was stopped",
        crate::base::deadline::describe(limit)
    ))
}

/// How one run of a task's handler ended.
enum Settled {
    Completed(Value),
    Failed(Error),
    Waiting(std::collections::BTreeMap<String, InputRequest>, Box<Carried>),
}

async fn run(replay: &Arc<Replay>, caps: &ClientCapabilities, mut handler: ToolFuture) -> Settled {
    let step = replay::step(replay, caps, handler.as_mut()).await;
    // A task waiting for a person holds no future: its answers are journaled in the store,
    // and `tasks/update` replays the handler from the top.
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

/// The record after a run, written only while the run holds the lease: a final status
/// (a cancel that came first) is never left, and a run that lost the task changes nothing.
/// `message` is the run's last status message, if it was not written yet; a finished
/// task is kept for `keep`.
fn settle(record: &mut TaskRecord, settled: &Settled, run: &str, message: Option<&String>, keep: Duration) -> bool {
    if !record.is_held_by(run) {
        return false;
    }
    if let Some(message) = message {
        record.status_message = Some(message.clone());
    }
    record.input_responses.clear();
    record.lease = None;
    match settled {
        Settled::Completed(result) => {
            record.result = Some(result.clone());
            record.finish(TaskStatus::Completed, keep);
        }
        Settled::Failed(error) => {
            record.error = Some(error.to_object());
            record.finish(TaskStatus::Failed, keep);
        }
        Settled::Waiting(questions, journal) => {
            record.status = TaskStatus::InputRequired;
            record.ask(questions);
            record.journal = Carried::clone(journal);
        }
    }
    true
}

/// A run's status messages and journal, written to the task's record while the run
/// holds the lease: the journal at once, status messages coalesced.
struct StoreLog {
    writes: Arc<RunWrites>,
    status: Arc<StatusWriter>,
    /// How long a lease lasts: a claim renews it.
    lease: Duration,
}

impl StoreLog {
    fn write(&self, change: impl FnMut(&mut TaskRecord) + Send + 'static) -> BoxFuture<'static, bool> {
        let writes = self.writes.clone();
        Box::pin(async move {
            writes.fenced(change).await.unwrap_or_else(|error| {
                tracing::warn!(task = %writes.id, %error, "could not write to a task's record");
                false
            })
        })
    }
}

impl TaskLog for StoreLog {
    fn task_id(&self) -> &str {
        &self.writes.id
    }

    fn status(&self, message: String) -> BoxFuture<'static, ()> {
        let status = self.status.clone();
        Box::pin(async move { status.status(message).await })
    }

    fn journal(&self, journal: Carried) -> BoxFuture<'static, bool> {
        self.write(move |record| record.journal = journal.clone())
    }

    fn claim(&self, journal: Carried) -> BoxFuture<'static, bool> {
        let (writes, lease) = (self.writes.clone(), self.lease);
        Box::pin(async move {
            let run = &writes.run;
            let claimed = writes
                .transition(|record| {
                    // Held is not enough: a lease that lapsed may be taken over at any moment.
                    let live = record.is_held_by(run) && !record.lease_lapsed(SystemTime::now());
                    if live {
                        record.journal = journal.clone();
                        record.lease = Some(Lease::new(run, lease));
                    }
                    live
                })
                .await;
            match claimed {
                Ok(wrote) => wrote,
                Err(error) => {
                    tracing::warn!(task = %writes.id, %error, "could not claim a once! step in a task's record");
                    false
                }
            }
        })
    }
}

/// The tasks whose handlers run in this process, so `tasks/cancel` can stop them.
#[derive(Debug, Default)]
pub(crate) struct Running {
    handles: Mutex<HashMap<String, Handle>>,
    generation: AtomicU64,
}

#[derive(Debug)]
struct Handle {
    generation: u64,
    run: String,
    abort: AbortHandle,
}

impl Running {
    fn spawn(self: &Arc<Self>, id: &str, run: String, task: impl Future<Output = ()> + Send + 'static) {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let (running, key) = (self.clone(), id.to_owned());
        // Held across the spawn, so the handle is registered before the run can end
        // and unregister itself.
        let mut handles = self.lock();
        let spawned = tokio::spawn(async move {
            task.await;
            running.finished(&key, generation);
        });
        handles.insert(id.to_owned(), Handle { generation, run, abort: spawned.abort_handle() });
    }

    fn finished(&self, id: &str, generation: u64) {
        let mut handles = self.lock();
        if handles.get(id).is_some_and(|handle| handle.generation == generation) {
            handles.remove(id);
        }
    }

    /// Drops the task's handler where it stands, if it runs here.
    pub(super) fn abort(&self, id: &str) {
        if let Some(handle) = self.lock().remove(id) {
            handle.abort.abort();
        }
    }

    /// Drops every task handler running here; the tasks and the runs that held them.
    pub(super) fn abort_all(&self) -> Vec<(String, String)> {
        let stopped: Vec<_> = self.lock().drain().collect();
        stopped
            .into_iter()
            .map(|(id, handle)| {
                handle.abort.abort();
                (id, handle.run)
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Handle>> {
        self.handles.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
