//! The runtime half of `ask!`: deterministic replay of a handler across rounds.
//!
//! Each round re-runs the handler from the top. An `ask` whose answer is known evaluates
//! to it; an unanswered one records its question and stays pending without a waker. The
//! [`drive`] loop polls the handler: when it is pending and a question was recorded, the
//! handler is dropped and the round ends with `input_required`, carrying every question
//! recorded in that poll (so asks joined with `join!` go out together) and a sealed state
//! holding the answers so far.
//!
//! Answers are pinned to a digest of their question: a stored answer counts only for the
//! same question, a fresh answer only for the question asked in the round the state
//! closed (or, with no state at all, for a question the handler reaches). Answers nobody
//! asked for are ignored; malformed ones are asked again. What is stored is the answer as
//! the question decoded it, not the client's bytes.
//!
//! The request's `requestState` is opened (and, with single-use states, spent) before the
//! handler runs: no handler code runs on a state that does not open.
//!
//! Beside the bookkeeping here: `carried` is the sealed state's wire format, `by_hand`
//! the rounds a handler builds itself (`Ctx::input_required`), `claim` what a `once!`
//! step claims before it runs, `task` a replay as a task runs it, and `notify` what keeps
//! progress and log notifications to one per call.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;

use serde_json::Value;
use tracing::Instrument as _;

use crate::base::error::Error;
use crate::intake::capability;
use crate::intake::request_state::SingleUse;
use crate::mrtr::question::Question;
use crate::protocol::{ClientCapabilities, InputRequest, JsonObject};

mod by_hand;
mod carried;
mod claim;
mod notify;
mod task;

pub(crate) use by_hand::HandBuilt;
use carried::Stored;
pub(crate) use carried::{CallEnd, CallId, Carried};
pub(crate) use task::TaskLog;

/// Rounds after which a multi-round call is abandoned as a loop.
const MAX_ROUNDS: u32 = 32;
/// How often one question may change after it was asked before it is reported as a bug.
const MAX_CHANGES: u32 = 1;

/// The replay bookkeeping of one request.
#[derive(Debug)]
pub(crate) struct Replay {
    round: Mutex<Round>,
    /// The claims of the call this round continues: each `once` step claims its key
    /// before it runs, and a single-use hand-built state its reading.
    single_use: Option<SingleUse>,
    /// Whether the round continues from a state a client presented (rather than from
    /// the bridge's or a task's own memory, which no client can present again).
    presented: bool,
    /// The outcome of spending a single-use hand-built state, once per round however
    /// often the handler reads it.
    spent: tokio::sync::OnceCell<Result<(), Error>>,
}

#[derive(Debug)]
struct Round {
    /// False for requests that cannot answer `input_required`.
    enabled: bool,
    carried: Carried,
    has_state: bool,
    responses: JsonObject,
    pending: BTreeMap<String, (String, InputRequest)>,
    phase: Phase,
    /// The `once` steps that ran in this round (rather than being read from the state).
    ran_once: BTreeSet<String>,
    /// The `once` steps this round claimed (or is claiming) in the guard.
    claimed: BTreeSet<String>,
    /// The notifications the handler reached in this round, sent or not.
    notifications: u32,
    /// The keys of `pending` the handler asked by hand (see `by_hand`).
    by_hand_keys: BTreeSet<String>,
    /// The state a hand-built round seals for the next, and whether it is single-use.
    next_hand_state: Option<Value>,
    next_single: bool,
    escalation: Escalation,
    /// Where a task's status messages and journal go (tasks only).
    task_log: Option<task::Log>,
    /// The `CreateTaskResult` of a task another server made for this call, and which of
    /// the server's doors for such tasks it came by (`dispatch::elsewhere`).
    elsewhere: Option<(usize, JsonObject)>,
}

/// Whether a call may turn into a task (see the tasks guide: where a call becomes a task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Escalation {
    /// The call runs to its end in rounds: `continue_as_task` is a no-op.
    Never,
    /// A tool that supports tasks, called by a client that declared them: the call
    /// becomes a task when the handler asks for it or waits on work.
    Allowed,
    /// The same, where the task will run elsewhere (a front end whose tasks run on
    /// workers): only when the handler asks for it, since a handler waiting on its own
    /// work (a `once!` step's claim, say) is dropped where it stands when the task is made.
    OnRequest,
    /// The call runs as a task.
    InTask,
}

/// How far this round has got: what ends it when the handler next stops. Each step
/// only moves to a phase that outranks it, in the order below, so the first failure is
/// the one reported and a question asked beside a request to become a task is still asked.
#[derive(Debug)]
enum Phase {
    /// Nothing ends the round yet.
    Open,
    /// The handler asked to continue as a task.
    Escalating,
    /// The handler asked to end the round with its state only: the client retries later.
    RetryLater,
    /// Questions are pending: the round ends with them.
    Asked,
    /// The call failed.
    Failed(Error),
}

impl Phase {
    fn rank(&self) -> u8 {
        match self {
            Self::Open => 0,
            Self::Escalating => 1,
            Self::RetryLater => 2,
            Self::Asked => 3,
            Self::Failed(_) => 4,
        }
    }

    /// Moves on to `next` unless this phase already outranks it.
    fn advance(&mut self, next: Self) {
        if next.rank() > self.rank() {
            *self = next;
        }
    }
}

impl Replay {
    /// A replay from the opened state (if the request carried one) and the request's
    /// `inputResponses`.
    pub(crate) fn new(carried: Option<Carried>, responses: JsonObject) -> Self {
        let has_state = carried.is_some();
        let round = Round {
            enabled: true,
            carried: carried.unwrap_or_default(),
            has_state,
            responses,
            pending: BTreeMap::new(),
            phase: Phase::Open,
            ran_once: BTreeSet::new(),
            claimed: BTreeSet::new(),
            notifications: 0,
            by_hand_keys: BTreeSet::new(),
            next_hand_state: None,
            next_single: false,
            escalation: Escalation::Never,
            task_log: None,
            elsewhere: None,
        };
        Self { round: Mutex::new(round), single_use: None, presented: false, spent: tokio::sync::OnceCell::new() }
    }

    /// The replay of a call's first round (no state yet).
    pub(crate) fn new_call(responses: JsonObject, origin: Option<String>) -> Self {
        let replay = Self::new(None, responses);
        replay.lock().carried.origin = origin;
        replay
    }

    /// The replay of a round that opened a state: its `once` steps claim it first.
    pub(crate) fn opened(carried: Carried, responses: JsonObject, single_use: Option<SingleUse>) -> Self {
        Self { single_use, presented: true, ..Self::new(Some(carried), responses) }
    }

    /// Records that the call is answered by a task another server made, its
    /// `CreateTaskResult` as that server sent it, come by door `door`.
    #[cfg(feature = "client")]
    pub(crate) fn answer_elsewhere(&self, door: usize, created: JsonObject) {
        self.lock().elsewhere = Some((door, created));
    }

    /// The task another server made for this call, if the handler said so.
    pub(crate) fn take_elsewhere(&self) -> Option<(usize, JsonObject)> {
        self.lock().elsewhere.take()
    }

    /// A replay for a request that cannot answer `input_required`: any ask fails it.
    pub(crate) fn disabled() -> Self {
        let replay = Self::new(None, JsonObject::new());
        replay.lock().enabled = false;
        replay
    }

    fn lock(&self) -> MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The round, unless this request cannot ask or the round has failed already (then
    /// `None`, after recording why).
    fn ready(&self) -> Option<MutexGuard<'_, Round>> {
        let mut round = self.lock();
        if !round.enabled {
            round.fail(not_here());
            return None;
        }
        (!matches!(round.phase, Phase::Failed(_))).then_some(round)
    }

    /// The answer to `question` under `key`, or `Pending` after recording the question.
    ///
    /// A `fresh` ask accepts only an answer to the question as the server asked it in the
    /// round this one continues: never one sent before it was asked.
    pub(crate) fn lookup<Q: Question>(&self, key: &str, question: &Q, fresh: bool) -> Poll<Q::Output> {
        let Some(mut round) = self.ready() else { return Poll::Pending };
        if round.refuse_if_by_hand(key) {
            return Poll::Pending;
        }
        let digest = match question.digest() {
            Ok(digest) => digest,
            Err(error) => {
                round.fail(error);
                return Poll::Pending;
            }
        };
        if let Some((asked, _)) = round.pending.get(key) {
            if *asked != digest {
                round.fail(Error::internal(format!("ask key {key:?} is used for two different questions")));
            }
            return Poll::Pending;
        }
        match round.kept_answer(key, &digest) {
            // Kept in an earlier round: read where it lies (one that no longer decodes is
            // asked again).
            Some(kept) => {
                if let Some(output) = question.decode_kept(kept) {
                    return Poll::Ready(output);
                }
            }
            // The stored answer is what the question made of it, so junk the client sent
            // beside the answer never rides along in later states.
            None => match round.fresh_answer(key, &digest, fresh).map(|answer| question.decode(answer)) {
                Some(Some((output, answer))) => {
                    round.carried.answers.insert(key.to_owned(), Stored { digest, answer });
                    return Poll::Ready(output);
                }
                Some(None) if !question.asks_again_when_malformed() => {
                    round.fail(Error::invalid_params(format!(
                        "Invalid inputResponses: {key:?} is neither an answer to the request asked nor a refusal of it"
                    )));
                    return Poll::Pending;
                }
                _ => {}
            },
        }
        // Unanswered, or answered with something that does not decode: ask (again).
        match question.request() {
            Ok(request) => {
                round.pending.insert(key.to_owned(), (digest, request));
                round.phase.advance(Phase::Asked);
            }
            Err(error) => round.fail(error),
        }
        Poll::Pending
    }

    /// The result of a `once` step taken in an earlier round: `Ok(None)` when it has not
    /// run yet, `Err(())` when the round has failed (the state did not open, say) and the
    /// step must not run.
    pub(crate) fn once_result(&self, key: &str) -> Result<Option<Value>, ()> {
        let round = self.ready().ok_or(())?;
        Ok(round.carried.once.get(key).cloned())
    }

    /// Records the result of a `once` step taken in this round.
    pub(crate) fn record_once(&self, key: &str, value: Value) {
        let mut round = self.lock();
        round.ran_once.insert(key.to_owned());
        round.carried.started.remove(key);
        round.carried.once.insert(key.to_owned(), value);
    }

    /// The note for the error of a round that fails after `once` steps ran in it: the
    /// steps' results cannot be kept, so a retry runs them again. `None` if none ran.
    pub(crate) fn once_lost(&self) -> Option<String> {
        once_lost(&self.lock().ran_once)
    }

    /// Ends this round with state only: the client retries later.
    pub(crate) fn retry_later(&self) {
        if let Some(mut round) = self.ready() {
            if round.escalation == Escalation::InTask {
                round.fail(Error::internal("retry_later ends an MRTR round; a task awaits its work instead"));
            } else {
                round.phase.advance(Phase::RetryLater);
            }
        }
    }

    pub(crate) fn fail(&self, error: Error) {
        self.lock().fail(error);
    }

    /// Something ends this round when the handler next stops.
    fn is_suspended(&self) -> bool {
        !matches!(self.lock().phase, Phase::Open)
    }

    /// The handler is pending on its own work while it may still become a task.
    fn may_escalate(&self) -> bool {
        self.lock().escalation == Escalation::Allowed
    }
}

impl Round {
    /// The round's requests, and the state the next one continues from: what it asked
    /// (by `ask!`, pinned to digests, or by hand) and what the handler sealed. Taken, not
    /// copied: the round is over, and its replay is not read again.
    fn close(&mut self) -> (BTreeMap<String, InputRequest>, Carried) {
        let mut next = std::mem::take(&mut self.carried);
        next.round += 1;
        next.asked.clear();
        next.by_hand = std::mem::take(&mut self.by_hand_keys);
        next.hand_state = self.next_hand_state.take();
        next.single = self.next_single;
        let mut requests = BTreeMap::new();
        for (key, (digest, request)) in std::mem::take(&mut self.pending) {
            if !next.by_hand.contains(&key) {
                next.asked.insert(key.clone(), digest);
            }
            requests.insert(key, request);
        }
        (requests, next)
    }

    fn fail(&mut self, error: Error) {
        self.phase.advance(Phase::Failed(error));
    }

    /// The answer an earlier round kept for this question, if any. An answer kept for
    /// the question asked under this key before it changed no longer counts.
    fn kept_answer(&mut self, key: &str, digest: &str) -> Option<&Value> {
        match self.carried.answers.get(key) {
            Some(stored) if stored.digest == digest => {}
            Some(_) => {
                self.note_change(key);
                return None;
            }
            None => return None,
        }
        self.carried.answers.get(key).map(|stored| &stored.answer)
    }

    /// The client's answer to this question in this round, if it counts.
    fn fresh_answer(&mut self, key: &str, digest: &str, only_if_asked: bool) -> Option<Value> {
        // Taken, not copied: an answer counts (or not) once per round.
        let answer = self.responses.remove(key)?;
        let asked_here = match self.carried.asked.get(key) {
            Some(asked) if asked == digest => true,
            Some(_) => {
                self.note_change(key);
                false
            }
            // In a call's first round a client may answer before being asked, unless the
            // ask wants a fresh answer; with state, or in a task, only what was asked can
            // be answered.
            None => !self.has_state && !only_if_asked,
        };
        asked_here.then_some(answer)
    }

    /// A question that keeps changing after it was asked can never be answered: report
    /// it as the bug it is instead of looping to the round cap.
    fn note_change(&mut self, key: &str) {
        let changes = self.carried.changes.entry(key.to_owned()).or_default();
        *changes += 1;
        if *changes > MAX_CHANGES {
            self.fail(Error::internal(format!(
                "the question asked under key {key:?} changes every round, so no answer can match it; \
                 make its text depend only on the arguments and earlier answers"
            )));
        }
    }
}

/// How a handler's round ended.
pub(crate) enum Outcome<T> {
    /// The handler finished.
    Complete(T),
    /// The handler needs input: questions, and the state to seal.
    InputRequired(BTreeMap<String, InputRequest>, Box<Carried>),
}

/// How a round of a call that may become a task ended.
pub(crate) enum Step<T> {
    /// Finished, or suspended on questions.
    Round(Outcome<T>),
    /// The rest runs as a task: the handler asked for it or waits on its own work. The
    /// handler future is still live and may be moved into the task.
    ContinueAsTask,
}

/// Runs `handler` until it finishes or suspends on its questions, then gates the
/// questions on the client's capabilities.
pub(crate) async fn drive<T>(
    replay: &Arc<Replay>,
    caps: &ClientCapabilities,
    handler: impl Future<Output = T>,
) -> Result<Outcome<T>, Error> {
    match step(replay, caps, pin!(handler)).await? {
        Step::Round(outcome) => Ok(outcome),
        // Only a replay with `allow_task` escalates, and those go through `step`.
        Step::ContinueAsTask => Err(Error::internal("this call cannot continue as a task")),
    }
}

/// [`drive`] for a handler that may turn into a task: it also stops when the handler
/// asks to continue as a task, or (while it still may) when it waits on its own work.
pub(crate) async fn step<F: Future + ?Sized>(
    replay: &Arc<Replay>,
    caps: &ClientCapabilities,
    mut handler: Pin<&mut F>,
) -> Result<Step<F::Output>, Error> {
    // One span per round, inside the request's: the handler's own events nest under it.
    // At debug, as the request's span is.
    let span = tracing::debug_span!("round", n = replay.lock().carried.round + 1, outcome = tracing::field::Empty);
    let finished = std::future::poll_fn(|cx| {
        // A panicking handler fails its request with an internal error instead of taking
        // the connection (or, on stdio, the answer) down with it. It is never polled again.
        let polled = panic::catch_unwind(AssertUnwindSafe(|| handler.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(Some(output))),
            // Pending with a question recorded: the handler is waiting for the client.
            // Pending on its own work while it may become a task: it becomes one.
            Ok(Poll::Pending) if replay.is_suspended() || replay.may_escalate() => Poll::Ready(Ok(None)),
            // Pending on real work (I/O, timers): keep waiting.
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(Error::internal("the handler panicked"))),
        }
    })
    .instrument(span.clone())
    .await
    .inspect_err(|_| {
        span.record("outcome", "panicked");
    })?;
    let mut round = replay.lock();
    match (std::mem::replace(&mut round.phase, Phase::Open), finished) {
        (Phase::Failed(failure), _) => {
            span.record("outcome", "failed");
            return Err(failure);
        }
        (_, Some(output)) => {
            span.record("outcome", "complete");
            return Ok(Step::Round(Outcome::Complete(output)));
        }
        // Stopped with nothing asked: on a request to continue as a task, or (while it
        // still may become one) on its own work.
        (Phase::Open | Phase::Escalating, None) => {
            span.record("outcome", "continue_as_task");
            return Ok(Step::ContinueAsTask);
        }
        (Phase::Asked | Phase::RetryLater, None) => {
            span.record("outcome", "input_required");
        }
    }
    if round.carried.round + 1 >= MAX_ROUNDS {
        return Err(Error::internal(format!("gave up after {MAX_ROUNDS} rounds of input")));
    }
    capability::missing(caps, round.pending.values().map(|(_, request)| capability::required_for(request))).map_err(
        |error| match once_lost(&round.ran_once) {
            Some(note) => error.with_note(&note),
            None => error,
        },
    )?;
    let (mut requests, next) = round.close();
    capability::rendered_for(caps, &mut requests);
    Ok(Step::Round(Outcome::InputRequired(requests, Box::new(next))))
}

/// Added to the error of a round that failed after `once` steps ran: nothing is sealed
/// for an error, so the client (and the application's log) should know the steps are not
/// recorded.
fn once_lost(ran: &BTreeSet<String>) -> Option<String> {
    (!ran.is_empty()).then(|| {
        let keys: Vec<String> = ran.iter().map(|key| format!("{key:?}")).collect();
        format!(
            "once! step {} ran in this round and its result could not be kept, so a retry runs it again",
            keys.join(", ")
        )
    })
}

fn not_here() -> Error {
    Error::internal("only tools/call, prompts/get and resources/read handlers can ask for input")
}
