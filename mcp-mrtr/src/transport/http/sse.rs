//! Writing a request's reply: one JSON body when the handler sent nothing else first, or
//! an SSE stream of its notifications (and, on legacy sessions, the bridge's requests)
//! followed by the reply.
//!
//! The stream owns the handler's future, so a client that closes the stream drops the
//! handler: closing the stream is how HTTP clients cancel.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use futures_util::Stream;
use tokio::sync::mpsc;

use crate::dispatch::Reply;
use crate::protocol::Outgoing;

/// Answers with JSON if the reply is ready before any notification, else with SSE.
pub(super) async fn respond(mut reply: BoxFuture<'static, Reply>, mut notes: mpsc::Receiver<Outgoing>) -> Response {
    tokio::select! {
        biased;
        reply = &mut reply => {
            let early: Vec<_> = std::iter::from_fn(|| notes.try_recv().ok()).collect();
            if early.is_empty() {
                return json_reply(&reply);
            }
            sse(SseReply { notes, reply: None, last: Some(reply), early })
        }
        Some(first) = notes.recv() => sse(SseReply { notes, reply: Some(reply), last: None, early: vec![first] }),
    }
}

pub(super) fn json_reply(reply: &Reply) -> Response {
    let status = reply.outcome.as_ref().err().map_or(200, crate::Error::http_status);
    json_response(status, &reply.to_outgoing())
}

pub(super) fn json_response(status: u16, message: &Outgoing) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], message.to_json()).into_response()
}

fn sse(stream: SseReply) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no")),
    ];
    (StatusCode::OK, headers, Body::from_stream(stream)).into_response()
}

/// The SSE body: notifications as they come, then the reply, then the end.
struct SseReply {
    notes: mpsc::Receiver<Outgoing>,
    reply: Option<BoxFuture<'static, Reply>>,
    last: Option<Reply>,
    /// Notifications already taken off the channel, sent first.
    early: Vec<Outgoing>,
}

impl Stream for SseReply {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if !this.early.is_empty() {
            return Poll::Ready(Some(Ok(event(&this.early.remove(0)))));
        }
        loop {
            if let Poll::Ready(Some(note)) = this.notes.poll_recv(cx) {
                return Poll::Ready(Some(Ok(event(&note))));
            }
            if let Some(reply) = this.reply.as_mut() {
                // Once the reply is ready, loop once more to flush notifications sent
                // just before it: nothing may follow the reply.
                this.last = Some(std::task::ready!(reply.as_mut().poll(cx)));
                this.reply = None;
                continue;
            }
            return Poll::Ready(this.last.take().map(|reply| Ok(event(&reply.to_outgoing()))));
        }
    }
}

/// One SSE event: a single `data:` line of compact JSON.
fn event(message: &Outgoing) -> Bytes {
    Bytes::from(format!("event: message\ndata: {}\n\n", message.to_json()))
}
