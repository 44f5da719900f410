//! A call of a 2025-11-25 upstream, held across the caller's rounds.
//!
//! Such an upstream asks its questions as requests on the call's stream, and waits there
//! for the answers: the call cannot be sent again with them, as a 2026-07-28 round can. So
//! the gateway keeps the call open in this process. Each question becomes a round of the
//! caller's (keys `q1`, `q2`, … of the call), gated on the caller's capabilities like any;
//! the round's sealed state names the held call; the retry hands the answers to the waiting
//! upstream and waits for its next question or its result.
//!
//! A call is held by the instance that started it, in memory, for at most
//! [`Mount::hold_for`](super::Mount::hold_for) between rounds, and an upstream holds at most
//! [`Mount::held_calls`](super::Mount::held_calls) at once. A retry that reaches another
//! instance, or comes after the hold lapsed, is refused (`-32602`): the caller starts over.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::relay;
use crate::base::error::{Error, ToolError};
use crate::client::{Answers, Client, ClientError, Forwarding, Relayed};
use crate::mrtr::context::{Ctx, InputRequired};
use crate::protocol::JsonObject;

/// How soon after a question another must come to be asked in the same round.
const TOGETHER: Duration = Duration::from_millis(10);

/// How many questions of one call may wait to be put to the caller.
const WAITING_QUESTIONS: usize = 16;

/// The calls an upstream holds between rounds, by id.
pub(super) struct Held {
    /// The upstream's client: its session carries every held call.
    client: Client,
    calls: Mutex<HashMap<String, HeldCall>>,
    limit: usize,
    lapse: Duration,
}

/// What a held call's round seals: the call's id in this process.
#[derive(Serialize, Deserialize)]
struct HeldState {
    held: String,
}

/// One upstream call in flight, and the questions of it waiting for the caller.
struct HeldCall {
    /// The upstream's questions, as they come.
    questions: mpsc::Receiver<Relayed>,
    /// The upstream's progress and log messages for the call, relayed by the round waiting.
    notices: mpsc::Receiver<Value>,
    /// The questions put to the caller in the last round, by key, and where each answer goes.
    waiting: Vec<(String, oneshot::Sender<Value>)>,
    /// The call itself, aborted when the held call is dropped.
    call: Running,
    /// How many questions the call has asked so far (keys are `q1`, `q2`, …).
    asked: u32,
}

/// The spawned upstream call: aborted when dropped, so nothing waits on a call nobody holds.
struct Running(JoinHandle<Result<JsonObject, ClientError>>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Held {
    pub(super) fn new(client: Client, limit: usize, lapse: Duration) -> Self {
        Self { client, calls: Mutex::default(), limit, lapse }
    }

    fn take(&self, id: &str) -> Option<HeldCall> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).remove(id)
    }

    /// Keeps `call` until its retry, or until the hold lapses; refused past the limit.
    fn keep(self: &Arc<Self>, call: HeldCall) -> Result<String, Error> {
        let id = held_id()?;
        {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            if calls.len() >= self.limit {
                return Err(Error::internal(
                    "the gateway holds as many calls of this server as it may: try again later",
                ));
            }
            calls.insert(id.clone(), call);
        }
        let (held, lapsed) = (Arc::downgrade(self), id.clone());
        let lapse = self.lapse;
        tokio::spawn(async move {
            tokio::time::sleep(lapse).await;
            if let Some(held) = held.upgrade() {
                // Dropped here, outside the lock: its call is aborted.
                let dropped = held.take(&lapsed);
                drop(dropped);
            }
        });
        Ok(id)
    }
}

/// Forwards `method` with `params` to a 2025-11-25 upstream: the call started in the first
/// round, continued with this round's answers in the next, until the upstream's result,
/// or how the upstream failed it (for the mount to say as it says any refusal).
pub(super) async fn forward(
    ctx: &Ctx,
    held: &Arc<Held>,
    ours: &str,
    method: &str,
    params: JsonObject,
    bearer: Option<String>,
) -> Result<Result<JsonObject, ClientError>, ToolError> {
    let mut call = match ctx.request_state::<HeldState>().await.map_err(ToolError::protocol)? {
        Some(state) => resume(ctx, held, ours, &state)?,
        None => start(&held.client, method, params, bearer),
    };
    loop {
        let question = tokio::select! {
            // Notices first: those the upstream sent before its result are relayed before it.
            biased;
            Some(note) = call.notices.recv() => {
                relay::relay_one(ctx, &note).await;
                continue;
            }
            Some(question) = call.questions.recv() => question,
            ended = &mut call.call.0 => {
                let ended = ended.map_err(|_| Error::internal(format!("the call of {ours} was stopped")))?;
                return Ok(ended);
            }
        };
        let mut next = InputRequired::new();
        let mut question = Some(question);
        // The questions asked together are put to the caller together: those that follow
        // the first within moments (they come as requests of their own) join its round.
        while let Some(Relayed { request, answer }) = question.take() {
            call.asked += 1;
            let key = format!("q{}", call.asked);
            next = next.request_json(key.clone(), Value::Object(request));
            call.waiting.push((key, answer));
            question = tokio::time::timeout(TOGETHER, call.questions.recv()).await.ok().flatten();
        }
        let id = held.keep(call).map_err(ToolError::protocol)?;
        return ctx.input_required(next.state(&HeldState { held: id })).await;
    }
}

/// Starts the call (with the caller's token, if the mount maps callers to tokens), its
/// questions relayed to the held call.
fn start(client: &Client, method: &str, mut params: JsonObject, bearer: Option<String>) -> HeldCall {
    // A session's capabilities are its own: the caller's are checked here, on each question.
    params.remove("_meta");
    let (relay, questions) = mpsc::channel(WAITING_QUESTIONS);
    let (notified, notices) = mpsc::channel(relay::RELAYED_NOTICES);
    let (client, method) = (client.clone(), method.to_owned());
    // Progress is asked for always: the round waiting relays it if its caller asked.
    let answers = Some(Answers::relaying(relay));
    let forwarding = Forwarding { notices: Some(notified), progress: true, answers, bearer };
    let running = tokio::spawn(async move { client.forward(&method, params, forwarding).await });
    HeldCall { questions, notices, waiting: Vec::new(), call: Running(running), asked: 0 }
}

/// The held call a retry continues, its questions answered with this round's answers.
fn resume(ctx: &Ctx, held: &Held, ours: &str, state: &HeldState) -> Result<HeldCall, ToolError> {
    let mut call = held.take(&state.held).ok_or_else(|| {
        ToolError::protocol(Error::invalid_params(format!(
            "the call of {ours} is no longer held here (its hold lapsed, or another instance holds it): start the \
             call over"
        )))
    })?;
    for (key, answer) in call.waiting.drain(..) {
        // An unanswered question is dropped: the upstream hears it went unanswered.
        if let Some(response) = ctx.input_response(&key) {
            let _ = answer.send(response);
        }
    }
    Ok(call)
}

/// A held call's id: 128 random bits, in hex.
fn held_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for a call id: {e}")))?;
    Ok(crate::base::hex::encode(&bytes))
}
