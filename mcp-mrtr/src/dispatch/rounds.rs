//! The one round path: every request whose handler may ask (`tools/call`, `prompts/get`,
//! `resources/read`, a server's own methods) goes through here. Its round input is taken
//! out of the params, its `requestState` opened into a `Replay`, its handler run once
//! (2026-07-28) or until it completes through the bridge (2025-11-25), and its questions
//! sealed into the next state.

use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use axum::http::Extensions;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::call::{input_responses, Call, RoundInput, Target};
use super::stamp::Text;
use super::{Body, Engine};
use crate::base::deadline;
use crate::base::error::Error;
use crate::bounds::fair::ClientId;
use crate::intake::capability;
use crate::intake::envelope::{RequestMeta, TraceContext};
use crate::intake::request_state::{Binding, Presented, SingleUse};
use crate::mrtr::context::Ctx;
use crate::mrtr::context::Delivery;
use crate::mrtr::replay::{self, CallEnd, CallId, Carried, Outcome, Replay};
use crate::protocol::{InputRequiredResult, JsonObject, RequestId};
use crate::routes::handler::Requires;

impl Engine {
    /// The call of a method that may ask: the round input taken out of its params, the
    /// rest read into `P` (moved out of the tree, not copied).
    pub(super) fn call<P: DeserializeOwned>(
        &self,
        id: RequestId,
        mut raw: Value,
        meta: Arc<RequestMeta>,
        delivery: Delivery,
    ) -> Result<Call<P>, Error> {
        let input = match &mut raw {
            Value::Object(params) => {
                RoundInput { responses: params.remove("inputResponses"), state: params.remove("requestState") }
            }
            _ => RoundInput::default(),
        };
        let params = P::deserialize(raw).map_err(|e| Error::invalid_params(format!("Invalid params: {e}")))?;
        let principal = self.principal_of(&delivery);
        let limit = delivery.handler_timeout;
        Ok(Call { id, params, input, meta, delivery, principal, limit })
    }

    /// Refuses with `-32021`, before the handler runs, a call whose client did not declare
    /// a capability the route's asks need: nothing the handler does before its first ask
    /// happens for a client that could never answer it.
    pub(super) fn preflight<P>(call: &Call<P>, requires: &Requires) -> Result<(), Error> {
        capability::missing(&call.meta.client_capabilities, requires.client.iter().copied())
    }

    pub(super) fn ctx<P>(&self, call: &Call<P>, replay: &Arc<Replay>) -> Ctx {
        Ctx::new(
            call.id.clone(),
            call.meta.clone(),
            call.delivery.clone(),
            self.logging,
            replay.clone(),
            self.values.clone(),
        )
    }

    /// What a call's states are bound to.
    pub(super) fn target<'a, P>(
        &'a self,
        call: &'a Call<P>,
        method: &'a str,
        name: &'a str,
        arguments: Option<&'a JsonObject>,
    ) -> Target<'a> {
        let principal = call.principal.as_deref();
        Target::new(Binding { server: &self.info.name, method, target: name, arguments, principal })
    }

    /// What a tool call's states are bound to, digested now, so that it keeps nothing of
    /// `arguments`: the handler can then take them themselves (see `call::Arguments`).
    pub(super) fn target_digested<'a, P>(
        &'a self,
        call: &'a Call<P>,
        method: &'a str,
        name: &'a str,
        arguments: &JsonObject,
    ) -> Target<'a> {
        let principal = call.principal.as_deref();
        let server = &self.info.name;
        let digest = Binding { server, method, target: name, arguments: Some(arguments), principal }.digest();
        Target::digested(Binding { server, method, target: name, arguments: None, principal }, digest)
    }

    /// Reads this round's `inputResponses` and opens its `requestState`, before the handler
    /// runs: a state that does not open fails the request, whatever the handler would do.
    ///
    /// A continued call is counted against whoever started it in the single-use guard,
    /// as its state says (a fresh one, once it seals a state: see `seal`).
    pub(super) fn open_replay(
        &self,
        target: &Target<'_>,
        input: RoundInput,
        trace: &TraceContext,
    ) -> Result<Arc<Replay>, Error> {
        let responses = input_responses(input.responses)?;
        let Some(token) = input.state else {
            let origin = trace.traceparent().map(|parent| parent.as_str().to_owned());
            return Ok(Arc::new(Replay::new_call(responses, origin)));
        };
        let sealer = self.sealer()?;
        let presented = Presented { token: &token, sealer, binding: target.digest(), target: target.binding.target };
        let (mut carried, expires) = presented.open(|payload| serde_json::from_slice::<Carried>(payload).ok())?;
        // When the state was sealed, for a guard that remembers less. A state of an
        // earlier release does not say: it lived `ttl`, so its expiry less that (an
        // endless ttl, its expiry clamped, tells nothing: then it counts as sealed now).
        let issued = carried.sealed_at().unwrap_or_else(|| {
            expires
                .checked_sub(sealer.lifetime())
                .filter(|at| *at > std::time::UNIX_EPOCH)
                .unwrap_or_else(SystemTime::now)
        });
        if let Some(origin) = carried.origin() {
            crate::intake::telemetry::continues_flow(&tracing::Span::current(), origin);
        }
        // No state of a call opens past its end, sealed with its first state, and its
        // claims are kept longer still, while a task made from it may run: a state sealed
        // late in the call (a sibling of a sibling) still meets the claims of steps taken
        // early. A state of an earlier release names no call; it and every state sealed
        // after it are marked so, and take no step (see `SingleUse`).
        let end = carried
            .end(sealer.call_lifetime(), target.horizon)
            .unwrap_or_else(|| CallEnd::new(expires, target.horizon));
        if end.opens_until <= SystemTime::now() {
            tracing::debug!(target = %target.binding.target, "rejected a requestState: its call's lifetime is over");
            return Err(Presented::expired());
        }
        let call = carried.call_or(|| CallId::EARLIER_RELEASE);
        let single_use =
            self.state.guard().map(|guard| SingleUse::new(guard, call.0, carried.owner(), end.kept_until, issued));
        Ok(Arc::new(Replay::opened(carried, responses, single_use)))
    }

    /// Runs a handler that may ask. A modern request gets one round: the complete result,
    /// or the questions with the round's sealed state. A legacy session gets the bridge:
    /// each round's questions go to the client as real requests, and the handler runs
    /// again with the answers until it completes.
    pub(super) async fn rounds<T, P, F, Fut>(
        &self,
        target: &Target<'_>,
        call: &Call<P>,
        input: RoundInput,
        round: F,
    ) -> Result<Body, Error>
    where
        T: Serialize,
        F: Fn(&Arc<Replay>) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let Some(bridge) = &call.delivery.bridge else {
            let replay = self.open_replay(target, input, &call.meta.trace)?;
            return self.run_round(target, &replay, call, round(&replay)).await;
        };
        let caps = &call.meta.client_capabilities;
        let mut replay = Arc::new(Replay::new(None, JsonObject::new()));
        loop {
            match deadline::within(call.limit, replay::drive(&replay, caps, round(&replay))).await? {
                Outcome::Complete(result) => return Ok(Body::Complete(Text::of(&result?)?)),
                Outcome::InputRequired(questions, carried) => {
                    // Without a stream there is no way to ask; an input_required result
                    // would read as final to a legacy client.
                    let outgoing = call.delivery.notifier.as_ref().ok_or_else(|| {
                        Error::internal(
                            "this handler asks for input, which needs a client that accepts text/event-stream",
                        )
                    })?;
                    let shutdown = Box::pin(crate::bounds::shutdown::Draining::of(&call.delivery.extensions));
                    let answers = bridge.ask(outgoing, questions, self.bridge_answer_timeout, shutdown).await?;
                    replay = Arc::new(Replay::new(Some(*carried), answers));
                }
            }
        }
    }

    /// Runs one round of a handler that may ask: its complete result, or the questions
    /// it asked with the sealed state of the round.
    pub(super) async fn run_round<T: Serialize, P>(
        &self,
        target: &Target<'_>,
        replay: &Arc<Replay>,
        call: &Call<P>,
        handler: impl Future<Output = Result<T, Error>>,
    ) -> Result<Body, Error> {
        let outcome =
            deadline::within(call.limit, replay::drive(replay, &call.meta.client_capabilities, handler)).await?;
        self.seal(target, replay, outcome, &call.delivery.extensions)
    }

    /// The body of a round: the complete result, or the questions with the round's
    /// sealed state. `client` is the request's (its extensions): a call's first state is
    /// counted against it.
    pub(super) fn seal<T: Serialize>(
        &self,
        target: &Target<'_>,
        replay: &Replay,
        outcome: Outcome<Result<T, Error>>,
        client: &Extensions,
    ) -> Result<Body, Error> {
        match outcome {
            Outcome::Complete(result) => Ok(Body::Complete(Text::of(&result?)?)),
            Outcome::InputRequired(requests, mut carried) => {
                let now = SystemTime::now();
                let sealer = self.sealer()?;
                // A call's first state is counted against its client, whoever presents it.
                carried
                    .stamp(now, sealer.call_lifetime(), target.horizon, || sealer.owner_of(&ClientId::of(client)))?;
                // Room for a typical state's JSON at once (a form's answers run to a few
                // hundred bytes), rather than growing from serde_json's 128.
                let mut payload = Vec::with_capacity(512);
                serde_json::to_writer(&mut payload, &carried).map_err(|e| Error::internal(e.to_string()))?;
                let state = sealer.seal(target.digest(), &payload, now).map_err(|error| {
                    error.log(target.binding.target);
                    let client = error.to_error();
                    match replay.once_lost() {
                        Some(note) => client.with_note(&note),
                        None => client,
                    }
                })?;
                Ok(Body::InputRequired(Text::of(&InputRequiredResult::new(requests, Some(state)))?))
            }
        }
    }
}
