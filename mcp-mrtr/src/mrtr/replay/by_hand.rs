//! The bookkeeping of rounds a handler builds by hand (`Ctx::input_required`): its
//! requests join the round's questions (so they are gated on the client's capabilities,
//! sealed, bridged and journaled as an `ask!`'s are), its own state rides in the sealed
//! state, and on the retry it reads the answers to what it asked and the state it sealed.
//!
//! The two styles share a key space but not answers: a key asked by hand is answered only
//! to `Ctx::input_response`, one asked by `ask!` only to the `ask!`. Crossing them fails the
//! call with a message that says so, rather than handing either side the other's answer.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Phase, Replay, Round};
use crate::base::error::Error;
use crate::protocol::{InputRequest, JsonObject};

/// What a handler's hand-built round asks and carries.
pub(crate) struct HandBuilt {
    pub(crate) requests: BTreeMap<String, InputRequest>,
    pub(crate) state: Option<Value>,
    pub(crate) single_use: bool,
}

impl Replay {
    /// Ends this round with the handler's own requests and state (nothing if the round
    /// has failed already). A result with neither is refused: the protocol's
    /// `input_required` needs one of them, and a state-only retry is what
    /// `Ctx::retry_later` says.
    pub(crate) fn suspend_by_hand(&self, built: HandBuilt) {
        let Some(mut round) = self.ready() else { return };
        if built.requests.is_empty() && built.state.is_none() {
            round.fail(Error::internal(
                "an input_required result needs input requests, a request state, or both; \
                 to have the client simply retry, use ctx.retry_later()",
            ));
            return;
        }
        if built.state.is_some() && round.next_hand_state.is_some() {
            round.fail(Error::internal("this round already set its request state: call input_required once per round"));
            return;
        }
        for (key, request) in built.requests {
            if round.pending.contains_key(&key) {
                round.fail(Error::internal(format!(
                    "the key {key:?} is asked twice in this round (by ask! and by input_required, or twice \
                     by hand): give each request a key of its own"
                )));
                return;
            }
            let digest = crate::mrtr::question::request_digest(&request);
            round.pending.insert(key.clone(), (digest, request));
            round.by_hand_keys.insert(key);
        }
        if built.state.is_some() {
            round.next_hand_state = built.state;
            round.next_single = built.single_use;
        }
        let phase = if round.pending.is_empty() { Phase::RetryLater } else { Phase::Asked };
        round.phase.advance(phase);
    }

    /// The client's answer under `key` to a request the round this one continues asked by
    /// hand; `None` when there is none (not asked, or not answered). Reading the answer
    /// to an `ask!` this way fails the call: that answer is the `ask!`'s.
    pub(crate) fn answer_by_hand(&self, key: &str) -> Option<Value> {
        let mut round = self.lock();
        if !round.carried.by_hand.contains(key) {
            if round.carried.asked.contains_key(key) || round.carried.answers.contains_key(key) {
                round.fail(Error::internal(format!(
                    "the answer under key {key:?} belongs to an ask!, which reads it itself; \
                     input_response reads the answers to input_required's requests"
                )));
            }
            return None;
        }
        round.responses.get(key).cloned()
    }

    /// This round's `inputResponses` as the client sent them, less what `ask!`s took.
    pub(crate) fn responses_by_hand(&self) -> JsonObject {
        self.lock().responses.clone()
    }

    /// The state the handler sealed in the round this one continues, and whether it
    /// asked for it to be spent on first read.
    pub(crate) fn state_by_hand(&self) -> Option<(Value, bool)> {
        let round = self.lock();
        round.carried.hand_state.clone().map(|state| (state, round.carried.single))
    }

    /// Spends the state this round opened, once per round (see `claim_step`): the claim
    /// is the call's and the round's that sealed the state, so of all the states of that
    /// round of the call (forks presented at once) one is read. A state that another
    /// request spent first, or that cannot be recorded, fails the call.
    /// A server whose states are reusable cannot keep the promise, so the read fails
    /// rather than pretend. The bridge's and a task's own memory is no client's to
    /// present again: there is nothing to spend.
    pub(crate) async fn spend_state(&self) -> Result<(), Error> {
        if !self.presented {
            return Ok(());
        }
        let Some(single_use) = &self.single_use else {
            return Err(Error::internal(
                "this state was sealed single-use, but the server's request states are reusable \
                 (StateConfig::reusable): give the server a single-use guard",
            ));
        };
        let round = self.lock().carried.round;
        self.spent
            .get_or_init(|| single_use.spend_state(round))
            .await
            .clone()
            .inspect_err(|error| self.fail(error.clone()))
    }
}

impl Round {
    /// Whether `key` was asked by hand, in this round or the one it continues: an `ask!`
    /// under it is the wrong mix (see the module docs), and fails the call saying so.
    pub(super) fn refuse_if_by_hand(&mut self, key: &str) -> bool {
        let taken = self.carried.by_hand.contains(key) || self.by_hand_keys.contains(key);
        if taken {
            self.fail(Error::internal(format!(
                "the key {key:?} is asked by input_required in this handler; an ask! needs a key of its own"
            )));
        }
        taken
    }
}
