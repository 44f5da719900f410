//! Where a `once!` step asks whether it may run: a task claims it for its call in the
//! single-use guard (when clients hold states of the call) and in its record under a live
//! lease, a round of a presented state claims it for its call in the guard, and a call's
//! first round, which no one can present again, claims nothing. And the idempotency key a
//! step runs under, the same wherever it runs.

use super::Replay;
use crate::base::error::Error;

impl Replay {
    /// May the `once` step `key` take its side effect now? `false` (the call failed, or
    /// the run must stop) when it may not.
    ///
    /// - In a task, the run claims the step for the call in the single-use guard when
    ///   clients hold states of the call (every run, wherever it runs), then in the task's
    ///   record, fenced on a live lease ([`TaskLog::claim`](super::TaskLog::claim)): a run
    ///   that stalled past its lease, or was cancelled, finds out here, before the step,
    ///   never after it. A run being handed back starts no step.
    /// - In an MRTR round, the round claims the step for its call (every state of one
    ///   call shares its id), atomically with every other request presenting a state of
    ///   the call: another took it first, or it cannot be recorded, and the round fails
    ///   with the client's error. A call's first round claims nothing (no state of the
    ///   call exists yet, so none can take the step again), nor does a server with
    ///   reusable states.
    pub(crate) async fn claim_step(&self, key: &str) -> bool {
        if let Some(log) = self.task_log() {
            if !log.begin_step() {
                // The run is being handed back: no step starts now, and the run waits
                // here until it is dropped. The task goes on elsewhere, from its journal.
                return false;
            }
            let (journal, again) = {
                let mut round = self.lock();
                let again = !round.carried.started.insert(key.to_owned());
                if again {
                    tracing::warn!(key, "a once! step was cut mid-way by an earlier run of this task; taking it again");
                }
                (round.carried.clone(), again)
            };
            // A task of a call whose states clients hold: a round presenting one of them
            // (or another task made from one) could take the step too, so it is claimed
            // for the call in the guard first, the one ledger of the call's steps, unless an
            // earlier run of this task claimed it (the guard's claim comes first, so a
            // step the journal says was started is the task's own).
            if let (Some(single_use), false) = (&self.single_use, again) {
                if let Err(error) = single_use.claim_step(key).await {
                    self.fail(error);
                    return false;
                }
            }
            if !log.claim(journal).await {
                self.fail(Error::internal(format!("this run lost its task before once step {key:?}; stopping")));
                return false;
            }
            return true;
        }
        let Some(single_use) = &self.single_use else { return true };
        if !self.lock().claimed.insert(key.to_owned()) {
            // Reached again before its first run recorded a result: two steps under one
            // key, joined. The guard would refuse the second as a replay; say what it is.
            self.fail(Error::internal(format!(
                "once step {key:?} is reached twice at once in one round: give each step a key of its own"
            )));
            return false;
        }
        match single_use.claim_step(key).await {
            Ok(()) => true,
            Err(error) => {
                self.fail(error);
                false
            }
        }
    }

    /// The idempotency key of the `once` step `key` of this call (see `Ctx::step_key`):
    /// the same in every round, task run and takeover of the call, different in any
    /// other call. Drawing the call's id, if it has none yet, may fail.
    pub(crate) fn step_key(&self, key: &str) -> Result<String, Error> {
        use sha2::{Digest, Sha256};
        let call = self.lock().carried.call_id()?;
        let mut hash = Sha256::new();
        hash.update(b"mcp-mrtr step key\0");
        hash.update(call.0);
        hash.update(key.as_bytes());
        Ok(crate::base::hex::encode(&hash.finalize()[..16]))
    }
}
