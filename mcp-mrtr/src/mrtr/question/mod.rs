//! Asking: the questions a handler can ask with `ask!` (typed builders for the three
//! embedded requests, and how each decodes the client's answer), and [`Ask`], the future
//! of one.
//!
//! Reach for them directly in a helper that several handlers share: `ask!(elicit …)`
//! is [`Ctx::ask`](crate::Ctx::ask) with an [`Elicit`] under a key.
//!
//! ```
//! use mcp_mrtr::question::Elicit;
//! use mcp_mrtr::prelude::*;
//! use mcp_mrtr::testing::{answer, TestClient};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Approval { approve: bool }
//!
//! /// Asks for sign-off; any tool can call it with its context.
//! async fn sign_off(ctx: &Ctx, what: &str) -> Result<bool, ToolError> {
//!     let approval: Approval = ctx.ask("approval", Elicit::new(format!("Approve {what}?"))).await?;
//!     Ok(approval.approve)
//! }
//!
//! /// Publishes the draft once approved.
//! #[tool(forms = [Approval])] // checked at registration, as its own asks would be
//! async fn publish(ctx: &Ctx) -> Result<String, ToolError> {
//!     Ok(if sign_off(ctx, "publishing").await? { "published" } else { "kept as draft" }.into())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = TestClient::new(Server::new("blog", "1.0.0").tool(publish));
//! let mut call = client.call_tool("publish", serde_json::json!({}));
//! assert_eq!(call.start().await.kinds()["approval"], "elicitation/create");
//! let done = call.answer([("approval", answer::accept(serde_json::json!({ "approve": true })))]).await;
//! assert_eq!(done.text().as_deref(), Some("published"));
//! # }
//! ```
//!
//! | ask | request | answer |
//! |---|---|---|
//! | [`Elicit<T>`] | `elicitation/create`, form from `T` | `Result<T, Declined>` |
//! | [`ElicitUrl`] | `elicitation/create`, url mode | `Result<(), Declined>` |
//! | [`Sample`] | `sampling/createMessage` | `Result<`[`CreateMessageResult`](crate::protocol::CreateMessageResult)`, `[`Refused`]`>` |
//! | [`Roots`] | `roots/list` | `Vec<Root>` |
//!
//! A form that does not decode (content not matching `T`) counts as no answer: the
//! question is asked again. A sampling request the client refused (the user rejected it:
//! a JSON-RPC error in answer to the request, on either revision) is a value, [`Refused`],
//! so the handler can run its fallback; an answer that is neither a result nor a refusal
//! fails the call (`-32602`) rather than being asked again round after round. An answer that decodes is kept (sealed into
//! the request state) as the question normalized it: fields the question does not know
//! are dropped, so a client cannot make the state carry its junk.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::base::error::Error;
use crate::protocol::{InputRequest, JsonObject, ListRootsResult, Root};

mod ask;
pub use self::ask::Ask;

/// A question a handler can ask the client.
pub trait Question {
    /// What the handler gets back.
    type Output;

    /// The request embedded in `inputRequests`.
    fn request(&self) -> Result<InputRequest, Error>;

    /// Decodes the client's answer into what the handler gets and the answer worth
    /// keeping for later rounds (without fields the question does not know); `None` when
    /// it is malformed (the question is asked again). Decoding the kept answer again must
    /// give the same output.
    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)>;

    /// Whether an answer that does not decode is asked again (a form: the person may
    /// still fill it in), rather than failing the call with `-32602` naming the key.
    fn asks_again_when_malformed(&self) -> bool {
        true
    }

    /// Decodes an answer this question kept in an earlier round (the second half of what
    /// [`decode`](Question::decode) returned): every later round reads it again. By
    /// default `decode` on a copy; a question can read it in place.
    fn decode_kept(&self, kept: &Value) -> Option<Self::Output> {
        self.decode(kept.clone()).map(|(output, _)| output)
    }

    /// What answers are pinned to: equal for equal questions, different whenever the
    /// request would differ. By default a digest of the request as JSON; a question can
    /// give one that is cheaper to compute (every round computes it).
    fn digest(&self) -> Result<String, Error> {
        Ok(request_digest(&self.request()?))
    }
}

/// The digest of `request` as JSON: what an answer to it is pinned to, for questions
/// without a cheaper digest of their own and for requests built by hand.
pub(crate) fn request_digest(request: &InputRequest) -> String {
    hex_digest(Sha256::digest(serde_json::to_vec(request).unwrap_or_default()))
}

/// The first half of a SHA-256, in hex: what answers and asked questions are pinned to.
fn hex_digest(hash: impl AsRef<[u8]>) -> String {
    crate::base::hex::encode(&hash.as_ref()[..16])
}

pub use crate::base::error::Declined;

mod elicit;
mod sample;

pub use self::elicit::{Elicit, ElicitForm, ElicitUrl};
pub use self::sample::{Refused, Sample};

/// `roots/list`: the client's roots.
///
/// **Deprecated in 2026-07-28** (SEP-2577), still served: clients may stop offering
/// `roots`. For new tools, take the paths as arguments, or ask for them with [`Elicit`].
pub struct Roots;

impl Question for Roots {
    type Output = Vec<Root>;

    fn request(&self) -> Result<InputRequest, Error> {
        Ok(InputRequest::ListRoots(JsonObject::new()))
    }

    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)> {
        let result: ListRootsResult = serde_json::from_value(answer).ok()?;
        let kept = kept(&result);
        Some((result.roots, kept))
    }
}

/// A decoded answer as JSON again. Our protocol types always serialize.
fn kept<T: serde::Serialize>(answer: &T) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}
