//! One call of a method that may ask (`tools/call`, `prompts/get`, `resources/read`): its
//! params, the round input it carries, and what the states it opens and seals are bound to.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::base::error::Error;
use crate::intake::envelope::RequestMeta;
use crate::intake::request_state::{Binding, BindingDigest};
use crate::mrtr::context::Delivery;
use crate::protocol::{JsonObject, RequestId};
use crate::routes::catalog::RequestView;

/// One request to a method that may ask: its typed params, the round input it carries,
/// its envelope, its transport and its caller.
pub(super) struct Call<P> {
    pub(super) id: RequestId,
    pub(super) params: P,
    pub(super) input: RoundInput,
    pub(super) meta: Arc<RequestMeta>,
    pub(super) delivery: Delivery,
    pub(super) principal: Option<String>,
    /// How long one run of the handler may take.
    pub(super) limit: Option<Duration>,
}

impl<P> Call<P> {
    pub(super) fn view(&self) -> RequestView<'_> {
        RequestView::new(&self.meta, &self.delivery)
    }
}

/// What a retry carries for the round it continues, as the client sent it.
#[derive(Default)]
pub(super) struct RoundInput {
    /// `inputResponses`.
    pub(super) responses: Option<Value>,
    /// `requestState`.
    pub(super) state: Option<Value>,
}

/// What a multi-round request is about: the states it opens and seals are bound to this.
pub(super) struct Target<'a> {
    pub(super) binding: Binding<'a>,
    /// The binding's digest, computed once for the open and the seal of a round.
    digest: OnceLock<BindingDigest>,
    /// How long past the call's end a task made from it may take steps: zero unless the
    /// target is a tool that may run as a task (see `Carried::end`).
    pub(super) horizon: Duration,
}

impl<'a> Target<'a> {
    /// Digested when a state is first opened or sealed: calls that do neither never are.
    pub(super) fn new(binding: Binding<'a>) -> Self {
        Self { binding, digest: OnceLock::new(), horizon: Duration::ZERO }
    }

    /// A target whose binding was digested already (with the arguments it no longer
    /// holds).
    pub(super) fn digested(binding: Binding<'a>, digest: BindingDigest) -> Self {
        Self { binding, digest: OnceLock::from(digest), horizon: Duration::ZERO }
    }

    /// The target of a call that may continue as a task living `horizon` past the call.
    pub(super) fn outlived_by(mut self, horizon: Duration) -> Self {
        self.horizon = horizon;
        self
    }

    pub(super) fn digest(&self) -> &BindingDigest {
        self.digest.get_or_init(|| self.binding.digest())
    }
}

/// A tool call's arguments, handed to each run of its handler. The first run takes them
/// as they came, and no copy is kept: a call held for a minute keeps what its handler
/// read, not the whole tree, which holds about 40 times the bytes of its JSON (the fifth
/// audit's D3). A call the 2025-11-25 bridge may run again keeps its arguments as compact
/// JSON, about the size they came in, and each later run reads them back.
pub(super) struct Arguments {
    first: Mutex<Option<JsonObject>>,
    again: Option<Box<str>>,
}

impl Arguments {
    /// `arguments`, kept for later runs if `runs_again`.
    pub(super) fn new(arguments: JsonObject, runs_again: bool) -> Self {
        // A map of JSON values always serializes.
        let again = runs_again.then(|| serde_json::to_string(&arguments).unwrap_or_default().into_boxed_str());
        Self { first: Mutex::new(Some(arguments)), again }
    }

    /// The arguments, for one run of the handler.
    pub(super) fn take(&self) -> JsonObject {
        let first = self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        first.unwrap_or_else(|| {
            self.again.as_deref().and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default()
        })
    }
}

/// `inputResponses`: absent, or an object whose every value is an object (a result).
/// Anything else is malformed input, answered with an error rather than guessed at.
pub(super) fn input_responses(responses: Option<Value>) -> Result<JsonObject, Error> {
    match responses {
        None => Ok(JsonObject::new()),
        Some(Value::Object(responses)) => match responses.iter().find(|(_, v)| !v.is_object()) {
            Some((key, _)) => Err(Error::invalid_params(format!("inputResponses.{key} must be an object (a result)"))),
            None => Ok(responses),
        },
        Some(_) => Err(Error::invalid_params("inputResponses must be an object keyed like inputRequests")),
    }
}
