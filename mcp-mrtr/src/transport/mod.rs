//! Transports: newline-delimited JSON over stdio, and Streamable HTTP (with the
//! 2025-11-25 sessions and bridge, `legacy`); the in-process test client (`testing`).
//!
//! Both read a message with [`read_message`], validate its envelope, then hand it to
//! the one dispatch path (`dispatch::Engine::handle`). Everything they do with a
//! message's bytes runs inside [`contain`], the unwind boundary of the transports.

// Entry points for `mcp-mrtr/fuzz`: they drive parsers of every layer, transports included.
#[cfg(fuzzing)]
pub mod fuzzing;
pub(crate) mod http;
#[cfg(feature = "lambda")]
pub(crate) mod lambda;
pub(crate) mod legacy;
pub(crate) mod serve;
pub(crate) mod serve_error;
pub(crate) mod stdio;
pub mod testing;
mod worker;

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;

use crate::base::error::Error;
use crate::dispatch::Reply;
use crate::intake::envelope::Incoming;
use crate::protocol::{Outgoing, RequestId};

/// Parses one message's bytes into a request or notification.
pub(crate) fn read_message(bytes: &[u8]) -> Result<Incoming, (Option<RequestId>, Error)> {
    let value = serde_json::from_slice(bytes).map_err(|e| (None, Error::parse_error(e)))?;
    Incoming::from_value(value)
}

/// Runs what a transport does with one message, from its first byte to its dispatch.
///
/// `Engine::handle` catches a handler's panic and answers its request, but the bytes are
/// read before that: the envelope, `_meta`, MCP headers, a bearer token, a 2025-11-25
/// session's utilities. A bug in any of those parsers must cost the one message an error
/// answer (audit C1: a `traceparent` that panicked its parser ended a stdio server), so
/// each transport reads every message inside this boundary. `None` means `work`
/// panicked: the transport answers with [`panicked`] and goes on serving.
///
/// Not an `async fn`: one would hold `work` twice over (as its argument, and as the
/// future it awaits), and this wraps the whole of a request's handling.
pub(crate) fn contain<T>(work: impl Future<Output = T>) -> impl Future<Output = Option<T>> {
    AssertUnwindSafe(work).catch_unwind().map(|outcome| {
        if outcome.is_err() {
            // The message is client data: not logged, not even in part.
            tracing::error!("reading a message panicked the server; the message was answered with an internal error");
        }
        outcome.ok()
    })
}

/// The answer to a message whose reading panicked: an internal error, to the request's id
/// when one can still be read from `bytes`.
pub(crate) fn panicked(bytes: &[u8]) -> Outgoing {
    /// Only the id: a parser for one field, of serde_json's own.
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<serde_json::Value>,
    }
    let id = serde_json::from_slice::<Id>(bytes)
        .ok()
        .and_then(|message| message.id)
        .as_ref()
        .and_then(RequestId::from_value);
    error_message(id, &Error::internal("the server failed while reading this message; it goes on serving"))
}

impl Reply {
    pub(crate) fn into_outgoing(self) -> Outgoing {
        match self.outcome {
            Ok(result) => Outgoing::Result { id: self.id, result },
            Err(error) => error_message(Some(self.id), &error),
        }
    }
}

pub(crate) fn error_message(id: Option<RequestId>, error: &Error) -> Outgoing {
    error.to_message(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_while_reading_is_contained_and_answered_to_the_id_when_it_can_be_read() {
        let read = contain::<()>(async { panic!("a parser bug") }).await;
        assert!(read.is_none());
        assert_eq!(contain(async { 7 }).await, Some(7));
        let answer = |bytes: &[u8]| serde_json::from_str::<serde_json::Value>(&panicked(bytes).into_json()).unwrap();
        let with_id = answer(br#"{"jsonrpc":"2.0","id":"r-7","method":"tools/list"}"#);
        assert_eq!(with_id["id"], "r-7");
        assert_eq!(with_id["error"]["code"], -32603);
        for unreadable in [&b"{\"id\": {\"nested\": 1}}"[..], b"not json", b"[1,2]", b""] {
            assert_eq!(answer(unreadable)["id"], serde_json::Value::Null, "{unreadable:?}");
        }
    }
}
