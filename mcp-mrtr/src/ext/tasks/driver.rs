//! Running tasks: turning a `tools/call` into a task, driving its handler until it
//! finishes or waits for a person, and replaying it when the answers arrive.
//!
//! A task's handler runs in a spawned tokio task registered in
//! [`Running`](super::Running), so `tasks/cancel` can drop it wherever it stands, and a
//! graceful stop can let it finish its step first. When it suspends on questions its
//! future is dropped and only the record remains; [`start`] runs it again from the
//! journal, on whichever instance. Every write is a compare-and-set [`transition`], and
//! every write of a run is fenced by its lease (see `lease`): a handler finishing after
//! a cancel, or after another instance took its task over, changes nothing.
//!
//! A task is created only within [`TaskLimits`](super::TaskLimits): its arguments are
//! cut to what the tool reads and capped, and its client admitted (`admission`). Each
//! run waits for one of the instance's run slots and is stopped at its time limit.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use futures_util::FutureExt as _;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use super::running::Gate;
use super::status::StatusWriter;
use super::store::{Lease, TaskCall, TaskRecord, TaskStatus};
use super::write::RunWrites;
use super::Runtime;
use super::{admission, lease, new_task_id, store_error, wire, Tasks};
use crate::base::error::Error;
use crate::bounds::fair::ClientId;
use crate::dispatch::{Called, ToolFuture};
use crate::intake::envelope::RequestMeta;
use crate::intake::request_state::SingleUse;
use crate::mrtr::context::Ctx;
use crate::mrtr::replay::{self, CallEnd, Carried, Outcome, Replay, Step, TaskLog};
use crate::protocol::{ClientCapabilities, InputRequest, RequestId};

/// Runs one round of a call that may become a task. When the handler asks to continue
/// as a task, or waits on its own work, the task is created (durably, before anything
/// is answered) with the answers and `once!` results gathered so far, and the live
/// handler moves into it, holding the task's lease.
pub(crate) async fn call(
    server: &Runtime<'_>,
    call: TaskCall,
    owner: Option<String>,
    client: ClientId,
    replay: Arc<Replay>,
    mut handler: ToolFuture,
) -> Result<Called, Error> {
    // A task made here is run elsewhere when tasks run on workers: the handler is dropped
    // where it stands, so it must stand where it asked to continue as a task.
    if server.tasks.runs_here {
        replay.allow_task();
    } else {
        replay.allow_task_on_request();
    }
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
    server: &Runtime<'_>,
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
    let journal = replay.hand_to_task().await?;
    let ttl = ttl_within_call(server, &journal, tasks.ttl)?;
    let mut record = TaskRecord::new(new_task_id()?, owner, call, journal, ttl);
    record.lease = Some(tasks.lease_for(&run));
    let admitted = admission::admit(tasks, client, record.id(), record.expires_at()).await?;
    if !tasks.runs_here {
        // A front end whose tasks run on workers: the task is stored with no runner, and a
        // worker's next look takes it and replays the handler from the journal, which
        // holds every answer and `once!` result of the rounds so far.
        record.lease = None;
        tasks.store.create(record.clone()).await.map_err(store_error)?;
        admitted.keep();
        return Ok(Called::Task(wire::task(&super::unrun::shown(record))));
    }
    let limit = route.and_then(|route| route.task_timeout).or(tasks.limits.run_timeout);
    // The run is polled once before the record is stored, its writes held back until it
    // is: a handler that asks at once (the common shape: continue as a task, then ask) is
    // stored waiting for its answers in the one write that creates it.
    let (writes, stored) = RunWrites::before_stored(tasks.store.clone(), &record, &run);
    let mut running = Run::new(tasks, &record, &run, writes, limit, caps, replay, handler);
    let first = (&mut running.settling).now_or_never();
    if let Some(waiting @ Settled::Waiting(..)) = &first {
        let message = running.status.take_pending();
        settle(&mut record, waiting, &run, message.as_ref(), tasks.limits.keep_finished);
        tasks.store.create(record.clone()).await.map_err(store_error)?;
        admitted.keep();
        return Ok(Called::Task(wire::task(&record)));
    }
    tasks.store.create(record.clone()).await.map_err(store_error)?;
    admitted.keep();
    stored.send_replace(true);
    if let Some(settled) = first {
        running.settling = Box::pin(std::future::ready(settled));
    }
    running.spawn(tasks, &record, run);
    Ok(Called::Task(wire::task(&record)))
}

/// Runs a `working` task whose lease the run `run` holds: replays its handler from the
/// top with its journal and the answers received, or fails the task if its tool is gone.
pub(crate) async fn start(server: &Runtime<'_>, record: &TaskRecord, run: String) -> Result<(), Error> {
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
    let (replay, handler) = replay_of(server, record, &route)?;
    let limit = route.task_timeout.or(tasks.limits.run_timeout);
    launch(tasks, record, run, limit, record.call.client_capabilities.clone(), replay, handler);
    Ok(())
}

/// The end of the call `journal` continues, when its task's steps are claimed for the
/// call (see [`ledger`]) and the call says when it began.
fn claimed_end(server: &Runtime<'_>, journal: &Carried) -> Result<Option<CallEnd>, Error> {
    if !journal.held_by_client() || server.state.guard().is_none() {
        return Ok(None);
    }
    Ok(journal.end(server.sealer()?.call_lifetime(), server.tasks.horizon()))
}

/// How long a task made from a call whose states clients hold may live: its TTL, but
/// never past the moment the call's claims are forgotten, which only a TTL changed since
/// the call began (or none at all) reaches.
fn ttl_within_call(server: &Runtime<'_>, journal: &Carried, ttl: Option<Duration>) -> Result<Option<Duration>, Error> {
    let Some(end) = claimed_end(server, journal)? else { return Ok(ttl) };
    let left = end.kept_until.duration_since(SystemTime::now()).unwrap_or_default();
    Ok(Some(ttl.map_or(left, |ttl| ttl.min(left))))
}

/// The claims of the call `journal` continues, when clients hold states of it: every run
/// of the task claims each step there before taking it, as a round presenting one of
/// those states would, so no step is taken both in a task and in a round, or in two tasks
/// made from one call (the sixth audit's E1). A call of an earlier release, which says
/// neither when it began nor when its state was sealed, takes no step there anyway.
fn ledger(server: &Runtime<'_>, journal: &Carried) -> Result<Option<SingleUse>, Error> {
    let (Some(guard), Some(call)) = (server.state.guard(), journal.call()) else { return Ok(None) };
    if !journal.held_by_client() {
        return Ok(None);
    }
    let kept_until = claimed_end(server, journal)?.map_or_else(SystemTime::now, |end| end.kept_until);
    let issued = journal.sealed_at().unwrap_or(UNIX_EPOCH);
    Ok(Some(SingleUse::new(guard, call.0, journal.owner(), kept_until, issued)))
}

/// The handler of `record`'s task, to replay from the top with its journal and the
/// answers received.
fn replay_of(
    server: &Runtime<'_>,
    record: &TaskRecord,
    route: &crate::routes::handler::ToolRoute,
) -> Result<(Arc<Replay>, ToolFuture), Error> {
    let ledger = ledger(server, &record.journal)?;
    let replay = Arc::new(Replay::of_task(record.journal.clone(), record.input_responses.clone(), ledger));
    let meta = Arc::new(RequestMeta {
        protocol_version: record.call.protocol_version.clone(),
        client_capabilities: record.call.client_capabilities.clone(),
        client_info: record.call.client_info.clone(),
        ..RequestMeta::default()
    });
    let id = RequestId::from(record.id());
    let delivery = super::delivery_for(record.call.caller.as_ref());
    let ctx = Ctx::new(id, meta, delivery, server.logging, replay.clone(), server.values.clone());
    let handler = route.run(ctx, record.call.arguments.clone());
    Ok((replay, handler))
}

/// Stores the last answers to a task's questions and replays its handler, as the run
/// `run`, in one write when it can: `answer` turns a record into the answered one (the
/// task `working`, its lease held by `run`), and `guess` is the record it was read as.
///
/// The replay is polled once before anything is written, its own writes held back: if it
/// finishes or asks again at once, the answers and that outcome are one write; if it
/// waits on its work, the answers are written and it goes on. Either write lands only
/// on the very record `guess` is, since the replay started from it. `Ok(false)` when it
/// did not (someone wrote since, or the tool is gone): nothing was written, and the
/// caller answers the usual way, from a fresh read.
pub(crate) async fn answer(
    server: &Runtime<'_>,
    guess: &TaskRecord,
    run: String,
    answer: impl Fn(&mut TaskRecord) -> bool,
) -> Result<bool, Error> {
    let tasks = &server.tasks;
    let mut answered = guess.next();
    if !answer(&mut answered) || answered.status != TaskStatus::Working {
        return Ok(false);
    }
    let Some(route) = server.find_tool(&answered.call.tool) else { return Ok(false) };
    let (replay, handler) = replay_of(server, &answered, &route)?;
    let limit = route.task_timeout.or(tasks.limits.run_timeout);
    let caps = answered.call.client_capabilities.clone();
    let (writes, stored) = RunWrites::before_stored(tasks.store.clone(), &answered, &run);
    let mut running = Run::new(tasks, &answered, &run, writes, limit, caps, replay, handler);
    let first = (&mut running.settling).now_or_never();
    let unchanged = |record: &TaskRecord| record.version() == answered.version();
    if let Some(settled) = first {
        let message = running.status.take_pending();
        let keep = tasks.limits.keep_finished;
        let written = super::end::finishing(tasks, guess.id(), Some(guess.clone()), |record| {
            unchanged(record) && answer(record) && settle(record, &settled, &run, message.as_ref(), keep)
        })
        .await?;
        return Ok(match written {
            Some((record, true)) => {
                if record.status.is_terminal() {
                    tasks.forget(record.id());
                }
                true
            }
            _ => false,
        });
    }
    let written = super::write::transition(&*tasks.store, guess.id(), Some(guess.clone()), |record| {
        unchanged(record) && answer(record)
    })
    .await?;
    let Some((record, true)) = written else { return Ok(false) };
    stored.send_replace(true);
    running.spawn(tasks, &record, run);
    Ok(true)
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
    let writes = RunWrites::new(tasks.store.clone(), record, &run);
    Run::new(tasks, record, &run, writes, limit, caps, replay, handler).spawn(tasks, record, run);
}

/// One run of a task's handler, made but not spawned yet.
struct Run {
    /// The handler, in a run slot, under the run's time limit and span.
    settling: BoxFuture<'static, Settled>,
    writes: Arc<RunWrites>,
    status: Arc<StatusWriter>,
    /// Where the run stands with its `once!` steps, for a graceful stop.
    gate: Arc<Gate>,
    span: tracing::Span,
}

impl Run {
    /// The run `run` of `record`'s task, whose journal, status and `once!` claims go
    /// through `writes`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        tasks: &Tasks,
        record: &TaskRecord,
        run: &str,
        writes: Arc<RunWrites>,
        limit: Option<Duration>,
        caps: ClientCapabilities,
        replay: Arc<Replay>,
        handler: ToolFuture,
    ) -> Self {
        let status = StatusWriter::new(writes.clone());
        let gate = Gate::new();
        let log = StoreLog { writes: writes.clone(), status: status.clone(), lease: tasks.lease, gate: gate.clone() };
        // One span per run, outliving the request that created the task, in the trace of
        // the flow it continues.
        let span = crate::intake::telemetry::task_run_span(record.id(), run, replay.carried().origin());
        replay.enter_task(Arc::new(log));
        let runs = tasks.runs.clone();
        let settling = async move { in_slot(&runs, limit, self::run(&replay, &caps, handler)).await };
        let settling = Box::pin(tracing::Instrument::instrument(settling, span.clone()));
        Self { settling, writes, status, gate, span }
    }

    /// Runs the rest in a task of its own, keeping the lease meanwhile, and writes how it
    /// ended.
    fn spawn(self, tasks: &Tasks, record: &TaskRecord, run: String) {
        let Self { settling, writes, status, gate, span } = self;
        let id = record.id();
        let (tasks_here, task_id, holder) = (tasks.clone(), id.to_owned(), run.clone());
        tasks.running.spawn(
            id,
            run,
            gate,
            tracing::Instrument::instrument(
                async move {
                    let settled = tokio::select! {
                        settled = settling => settled,
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
    /// The steps under way, which a graceful stop lets finish.
    gate: Arc<Gate>,
}

/// Stores a `once!` step's result in the journal, trying again while the store is away
/// for as long as the run's lease would have held: a result that is not stored stops the
/// run, and the run that takes the task over takes the step again, so an outage shorter
/// than the lease (a Redis restart from its AOF, a network blip) must not cost a step.
/// `false` when the run lost its task, or the store stayed away.
async fn store_result(writes: &RunWrites, journal: &Carried, lease: Duration) -> bool {
    let until = tokio::time::Instant::now() + lease;
    let mut pause = Duration::from_millis(25);
    loop {
        match writes.fenced(|record| record.journal = journal.clone()).await {
            Ok(written) => return written,
            Err(error) if tokio::time::Instant::now() + pause < until => {
                tracing::debug!(task = %writes.id, %error, "could not store a once! step's result yet; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(lease / 4);
            }
            Err(error) => {
                tracing::warn!(task = %writes.id, %error, "could not store a once! step's result; this run stops");
                return false;
            }
        }
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
        let (writes, gate, lease) = (self.writes.clone(), self.gate.clone(), self.lease);
        Box::pin(async move {
            let written = store_result(&writes, &journal, lease).await;
            // Stored or not, the step is over: a stop may drop the run now.
            gate.end_step();
            written
        })
    }

    fn begin_step(&self) -> bool {
        self.gate.begin_step()
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
