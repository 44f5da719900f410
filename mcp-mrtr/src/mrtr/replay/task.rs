//! A replay as a task runs it: where a call may become a task, the door the tasks
//! extension writes a run's journal and status through ([`TaskLog`]), and what a task
//! takes from the call it continues.

use std::sync::Arc;
use std::task::Poll;

use futures_util::future::BoxFuture;

use super::{Carried, Escalation, Phase, Replay};
use crate::base::error::Error;
use crate::intake::request_state::SingleUse;
use crate::protocol::JsonObject;

#[derive(Clone)]
pub(super) struct Log(pub(super) Arc<dyn TaskLog>);

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskLog")
    }
}

/// Where a task's running handler writes what must outlive this run (tasks only).
pub(crate) trait TaskLog: Send + Sync {
    /// The task's id.
    fn task_id(&self) -> &str;

    /// Records a status message (`statusMessage` on `tasks/get`).
    fn status(&self, message: String) -> BoxFuture<'static, ()>;

    /// Stores the journal after a `once` step, before the handler goes on, so a run
    /// that takes the task over does not take the step again. `false` when it could not
    /// be stored (the store is down, or this run lost the task): the run must stop.
    fn journal(&self, journal: Carried) -> BoxFuture<'static, bool>;

    /// Claims a `once` step before it runs: stores the journal (the step marked started)
    /// in one write that lands only while this run holds a lease that has not lapsed,
    /// and renews it. `false` when it did not land (cancelled, taken over, lapsed, or the
    /// store is down): the step must not run, and the run must stop.
    fn claim(&self, journal: Carried) -> BoxFuture<'static, bool>;

    /// Whether a `once` step may start now: `false` once a graceful stop has asked the run
    /// to stop between steps (its task is handed back, and the run waits where it stands
    /// until it is dropped). On `true` the step is under way until its result is journaled
    /// ([`journal`](Self::journal)), and a stop waits for it.
    fn begin_step(&self) -> bool;
}

impl Replay {
    /// The replay of a task's run, from its journal: wherever it runs (a worker, a
    /// takeover, after `tasks/update`), its `once` steps are claimed for the call in
    /// `ledger` as well as in the task's record, when clients hold states of the call
    /// (see [`Carried::held_by_client`]).
    pub(crate) fn of_task(journal: Carried, responses: JsonObject, ledger: Option<SingleUse>) -> Self {
        Self { single_use: ledger, ..Self::new(Some(journal), responses) }
    }

    /// Lets this call turn into a task (a task tool and a client that declared tasks).
    pub(crate) fn allow_task(&self) {
        self.lock().escalation = Escalation::Allowed;
    }

    /// Lets this call turn into a task only where its handler asks to
    /// (`Ctx::continue_as_task`): its own work before that runs in the request.
    pub(crate) fn allow_task_on_request(&self) {
        self.lock().escalation = Escalation::OnRequest;
    }

    /// Marks this call as running as a task: asks suspend the task, not a round.
    ///
    /// From here on an answer counts only for a question the task asked: answers the
    /// client sent with its first request, before anything was asked, reach no ask inside
    /// the task (a person must see a task's question before anyone can answer it).
    pub(crate) fn enter_task(&self, log: Arc<dyn TaskLog>) {
        let mut round = self.lock();
        round.escalation = Escalation::InTask;
        round.task_log = Some(Log(log));
        round.has_state = true;
    }

    /// Where the task this call runs as keeps its status and journal; `None` outside tasks.
    pub(crate) fn task_log(&self) -> Option<Arc<dyn TaskLog>> {
        self.lock().task_log.as_ref().map(|log| log.0.clone())
    }

    /// `Ready` when the handler may go on where it stands; `Pending` (recorded) when the
    /// round must end so the rest runs as a task.
    pub(crate) fn continue_as_task(&self) -> Poll<()> {
        let mut round = self.lock();
        match round.escalation {
            Escalation::Never | Escalation::InTask => Poll::Ready(()),
            Escalation::Allowed | Escalation::OnRequest => {
                round.phase.advance(Phase::Escalating);
                Poll::Pending
            }
        }
    }

    /// The answers and `once` results gathered so far, for a task's journal.
    pub(crate) fn carried(&self) -> Carried {
        self.lock().carried.clone()
    }

    /// The journal of the task this call continues as. The task owns the call from here
    /// on: a single-use state the round opened is spent now (another presentation of it
    /// reads it no more, even where the task never reads it), and the call's id is drawn
    /// if it has none, so every run of the task derives the same step keys.
    pub(crate) async fn hand_to_task(&self) -> Result<Carried, Error> {
        let single = {
            let round = self.lock();
            round.carried.hand_state.is_some() && round.carried.single
        };
        if single {
            self.spend_state().await?;
        }
        let mut round = self.lock();
        round.carried.call_id()?;
        Ok(round.carried.clone())
    }
}
