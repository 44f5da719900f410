//! Rounds built by hand: the shape every other SDK offers and the protocol describes. A
//! handler returns [`Ctx::input_required`] with the requests it wants answered and a state
//! of its own; on the retry it reads the answers ([`Ctx::answer`], [`Ctx::input_response`])
//! and its state ([`Ctx::request_state`]). The runtime keeps the guarantees `ask!` has: the
//! state is sealed (bound to the method, target, arguments and caller; expiring; capped;
//! single-use on request), each request is gated on the client's capabilities, and a
//! 2025-11-25 client gets the requests through the bridge.

use std::collections::BTreeMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::Ctx;
use crate::base::error::Error;
use crate::mrtr::question::Question;
use crate::mrtr::replay::{HandBuilt, Replay};
use crate::protocol::{InputRequest, InputRequiredResult, JsonObject};

/// A round's result built by hand: the requests the client answers under their keys,
/// and a state the handler reads back on the retry. End the round with it through
/// [`Ctx::input_required`].
///
/// ```
/// use mcp_mrtr::question::Elicit;
/// use mcp_mrtr::context::InputRequired;
/// use mcp_mrtr::prelude::*;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Confirm {
///     yes: bool,
/// }
///
/// #[derive(Serialize, Deserialize)]
/// struct Step {
///     env: String,
/// }
///
/// /// Deploys after a confirmation, as an explicit state machine.
/// #[tool]
/// async fn deploy(ctx: &Ctx, env: String) -> Result<String, ToolError> {
///     let confirm = Elicit::<Confirm>::new(format!("Deploy to {env}?"));
///     let Some(step) = ctx.request_state::<Step>().await? else {
///         let first = InputRequired::new().ask("confirm", &confirm).state(&Step { env });
///         return ctx.input_required(first).await;
///     };
///     match ctx.answer("confirm", &confirm) {
///         Some(Ok(Confirm { yes: true })) => Ok(format!("deployed to {}", step.env)),
///         Some(_) => Ok("not deployed".into()),
///         None => ctx.input_required(InputRequired::new().ask("confirm", &confirm).state(&step)).await,
///     }
/// }
/// # let _ = Server::new("deploys", "1.0.0").tool(deploy);
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "an InputRequired does nothing until given to ctx.input_required"]
pub struct InputRequired {
    requests: BTreeMap<String, InputRequest>,
    state: Option<Value>,
    single_use: bool,
    /// The first thing wrong with what was built: the round fails with it, and nothing
    /// is sent.
    problem: Option<String>,
}

impl InputRequired {
    /// Nothing asked and no state yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks `question` (a [`question`](mod@crate::question) type: `Elicit`, `ElicitUrl`, `Sample`,
    /// `Roots`) under `key`; read the answer with [`Ctx::answer`].
    pub fn ask(self, key: impl Into<String>, question: &impl Question) -> Self {
        match question.request() {
            Ok(request) => self.request(key, request),
            Err(error) => self.refused(error.to_string()),
        }
    }

    /// Asks a request of the protocol's own type under `key`.
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.insert(key.into(), request);
        self
    }

    /// Asks a request written as JSON (`{"method": …, "params": …}`) under `key`, as code
    /// ported from an SDK without typed requests writes it. A request the protocol does
    /// not allow in an `input_required` result (any method but `elicitation/create`,
    /// `sampling/createMessage` and `roots/list`), or malformed params, fails the call
    /// naming it; nothing is sent.
    pub fn request_json(self, key: impl Into<String>, request: Value) -> Self {
        let key = key.into();
        match serde_json::from_value::<InputRequest>(request) {
            Ok(request) => self.request(key, request),
            Err(e) => self.refused(format!("the input request under key {key:?} is not one a server may send: {e}")),
        }
    }

    /// The state the retry reads back with [`Ctx::request_state`]: any `Serialize` value,
    /// sealed with the round (the client holds only ciphertext).
    pub fn state(mut self, state: &impl Serialize) -> Self {
        match serde_json::to_value(state) {
            Ok(state) => self.state = Some(state),
            Err(e) => return self.refused(format!("the request state does not serialize: {e}")),
        }
        self
    }

    /// Makes the state single-use: the retry's first [`Ctx::request_state`] spends it, and
    /// a second request presenting it fails, as a replayed state does for `once!`. Needs
    /// the server's single-use guard (the default; see
    /// [`StateConfig`](crate::request_state::StateConfig)).
    pub fn single_use(mut self) -> Self {
        self.single_use = true;
        self
    }

    fn refused(mut self, problem: String) -> Self {
        self.problem.get_or_insert(problem);
        self
    }
}

/// A protocol result as a hand-built round: its requests, and its `requestState` string
/// as the state (sealed, and read back as a `String`).
impl From<InputRequiredResult> for InputRequired {
    fn from(result: InputRequiredResult) -> Self {
        let built = Self { requests: result.input_requests.unwrap_or_default(), ..Self::default() };
        match result.request_state {
            Some(state) => built.state(&state),
            None => built,
        }
    }
}

impl Ctx {
    /// Ends this round with a result built by hand: the client answers its requests
    /// and retries, and the handler runs again from the top. Awaiting it never
    /// completes in this round, so `return ctx.input_required(…).await` fits any result
    /// type.
    ///
    /// Each request is gated on the client's capabilities (`-32021` naming every one
    /// missing); a result with neither requests nor state, a request a server may not
    /// send, or a key an `ask!` of this handler uses, fails the call with a message
    /// saying so. In a task the requests are the task's; through the 2025-11-25 bridge
    /// they are sent to the client as requests, and the handler runs again with the
    /// answers.
    pub fn input_required<T>(&self, result: InputRequired) -> Suspend<T> {
        Suspend { replay: self.inner.replay.clone(), result: Some(result), output: PhantomData }
    }

    /// Answers this `tools/call` with a task another server made (a mounted upstream's,
    /// come by door `door` of `dispatch::elsewhere`): the handler's own result is
    /// ignored, and the caller gets `created` under an id of this server's.
    #[cfg(feature = "client")]
    pub(crate) fn answer_with_task(&self, door: usize, created: JsonObject) {
        self.inner.replay.answer_elsewhere(door, created);
    }

    /// The answer under `key` to a request the previous round asked by hand, decoded by
    /// `question` (the one asked); `None` when it was not asked by hand, not answered, or
    /// malformed (ask again). An elicitation gives `Result<T, Declined>`.
    pub fn answer<Q: Question>(&self, key: &str, question: &Q) -> Option<Q::Output> {
        let answer = self.inner.replay.answer_by_hand(key)?;
        question.decode(answer).map(|(output, _)| output)
    }

    /// The raw answer under `key` to a request the previous round asked by hand (an
    /// `ElicitResult`, `CreateMessageResult` or `ListRootsResult` as JSON); `None` when
    /// there is none. Answers to questions nobody asked are never returned.
    pub fn input_response(&self, key: &str) -> Option<Value> {
        self.inner.replay.answer_by_hand(key)
    }

    /// This round's `inputResponses`, as the client sent them: client data, not checked
    /// against what was asked (prefer [`answer`](Self::answer)).
    pub fn input_responses(&self) -> JsonObject {
        self.inner.replay.responses_by_hand()
    }

    /// The state the previous round sealed with [`InputRequired::state`], opened: never
    /// the client's bytes. `None` in a call's first round, or when the previous round set
    /// none. A single-use state is spent here, once per round; if another request spent it
    /// first, this fails with the client's error.
    pub async fn request_state<S: DeserializeOwned>(&self) -> Result<Option<S>, Error> {
        let Some((state, single_use)) = self.inner.replay.state_by_hand() else { return Ok(None) };
        if single_use {
            self.inner.replay.spend_state().await?;
        }
        S::deserialize(state).map(Some).map_err(|e| {
            Error::internal(format!("the request state does not read as {}: {e}", std::any::type_name::<S>()))
        })
    }
}

/// The future of [`Ctx::input_required`]: ends the round when polled, and never resolves.
#[must_use = "a hand-built round ends only when awaited: return ctx.input_required(…).await"]
pub struct Suspend<T> {
    replay: Arc<Replay>,
    result: Option<InputRequired>,
    output: PhantomData<fn() -> T>,
}

impl<T> Future for Suspend<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        if let Some(result) = this.result.take() {
            match result.problem {
                Some(problem) => this.replay.fail(Error::internal(problem)),
                None => this.replay.suspend_by_hand(HandBuilt {
                    requests: result.requests,
                    state: result.state,
                    single_use: result.single_use,
                }),
            }
        }
        Poll::Pending
    }
}

impl<T> std::fmt::Debug for Suspend<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suspend").field("result", &self.result).finish_non_exhaustive()
    }
}
