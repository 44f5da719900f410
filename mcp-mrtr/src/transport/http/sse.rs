//! Writing a request's reply: one JSON body when the handler sent nothing else first, or
//! an SSE stream of its notifications (and, on legacy sessions, the bridge's requests)
//! followed by the reply.
//!
//! The stream owns the handler's future, so a client that closes the stream drops the
//! handler: closing the stream is how HTTP clients cancel. An idle stream gets an SSE
//! comment line now and then, so proxies keep it open and a client that went away is
//! noticed when the write fails (a `subscriptions/listen` stream is idle most of its life).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio::time::{Interval, MissedTickBehavior};

use super::handoff::{GiveWhenIdle, Handoff};
use super::status;
use crate::base::error::Error;
use crate::dispatch::Reply;
use crate::intake::envelope::Era;
use crate::protocol::{Outgoing, RequestId};
use crate::transport::error_message;

/// Answers with JSON if the reply is ready before any notification, else with SSE.
/// Without `notes` (the request can have no notifications) the reply is always JSON.
///
/// `reply` resolves to `None` when the request was cancelled (`notifications/cancelled`
/// on a legacy session): nothing more is sent for it, and its stream ends.
///
/// With a `handoff` (a listen stream on `Http`), a stream that goes idle leaves
/// hyper for its connection's task (see `handoff`).
pub(super) async fn respond(
    era: Era,
    mut reply: BoxFuture<'static, Option<Reply>>,
    notes: Option<mpsc::Receiver<Box<Outgoing>>>,
    keep_alive: Duration,
    handoff: Option<Arc<Handoff>>,
) -> Response {
    let Some(mut notes) = notes else {
        return match reply.await {
            Some(reply) => json_reply(era, reply),
            // Cancelled: nothing more is sent.
            None => sse(SseReply::ended(keep_alive)),
        };
    };
    let stream =
        |notes, reply, last, early| SseReply { notes, reply, last, early, ended: false, idle: idle_timer(keep_alive) };
    tokio::select! {
        biased;
        reply = &mut reply => match reply {
            None => sse(SseReply::ended(keep_alive)),
            Some(reply) => {
                let early: Vec<_> = std::iter::from_fn(|| notes.try_recv().ok().map(|note| *note)).collect();
                if early.is_empty() {
                    return json_reply(era, reply);
                }
                sse(stream(notes, None, Some(reply), early))
            }
        },
        Some(first) = notes.recv() => {
            let stream = stream(notes, Some(reply), None, vec![*first]);
            match handoff {
                Some(handoff) => handed_off(GiveWhenIdle::new(stream, handoff)),
                None => sse(stream),
            }
        }
    }
}

/// A stream of notifications alone (a 2025-11-25 session's `GET`): SSE at once, the
/// notifications `run` sends on `notes` as they come, until `run` ends. With a `handoff`
/// it leaves hyper as soon as it idles, as a listen stream does (see `handoff`).
pub(super) fn stream(
    notes: mpsc::Receiver<Box<Outgoing>>,
    run: BoxFuture<'static, ()>,
    keep_alive: Duration,
    handoff: Option<Arc<Handoff>>,
) -> Response {
    let reply = Box::pin(async move {
        run.await;
        None
    });
    let stream = SseReply {
        notes,
        reply: Some(reply),
        last: None,
        early: Vec::new(),
        ended: false,
        idle: idle_timer(keep_alive),
    };
    match handoff {
        Some(handoff) => handed_off(GiveWhenIdle::new(stream, handoff)),
        None => sse(stream),
    }
}

/// The SSE response of a stream that leaves hyper: its connection closes when it ends,
/// since its socket left hyper and no request can follow on it.
fn handed_off(stream: GiveWhenIdle<SseReply>) -> Response {
    let mut response = sse(stream);
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn idle_timer(every: Duration) -> Interval {
    let every = every.max(Duration::from_millis(10));
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
    timer
}

pub(super) fn json_reply(era: Era, reply: Reply) -> Response {
    match reply.outcome {
        Ok(result) => json_response(200, Outgoing::Result { id: reply.id, result }),
        Err(error) => {
            let mut response = error_response(era, Some(reply.id), &error);
            crate::ext::auth::mark(&mut response, &error);
            response
        }
    }
}

/// A JSON-RPC error as the whole body, on the status its era gives it.
pub(super) fn error_response(era: Era, id: Option<RequestId>, error: &Error) -> Response {
    json_response(status::of_error(era, error), error_message(id, error))
}

/// Built by hand, not through `IntoResponse` for a tuple: that would give the body
/// `text/plain` first and then replace it, two header writes on every reply.
pub(super) fn json_response(status: u16, message: Outgoing) -> Response {
    let mut response = Response::new(Body::from(message.into_json()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn sse<S>(stream: S) -> Response
where
    S: Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
{
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no")),
    ];
    (StatusCode::OK, headers, Body::from_stream(stream)).into_response()
}

/// The SSE body: notifications as they come, then the reply, then the end.
struct SseReply {
    notes: mpsc::Receiver<Box<Outgoing>>,
    reply: Option<BoxFuture<'static, Option<Reply>>>,
    last: Option<Reply>,
    /// Notifications already taken off the channel, sent first.
    early: Vec<Outgoing>,
    /// The reply went out, or the request was cancelled: nothing follows.
    ended: bool,
    /// Ticks while the stream waits, for keep-alive comments.
    idle: Interval,
}

impl SseReply {
    /// A stream with nothing to send.
    fn ended(keep_alive: Duration) -> Self {
        let (_, notes) = mpsc::channel(1);
        Self { notes, reply: None, last: None, early: Vec::new(), ended: true, idle: idle_timer(keep_alive) }
    }
}

impl Stream for SseReply {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        if !this.early.is_empty() {
            let note = this.early.remove(0);
            if this.early.is_empty() {
                // A listen stream would keep the room for its acknowledgement for hours.
                this.early = Vec::new();
            }
            return Poll::Ready(Some(Ok(event(note))));
        }
        // The reply first: a request cancelled meanwhile must send nothing more, not
        // even what its handler had queued.
        if let Some(reply) = this.reply.as_mut() {
            if let Poll::Ready(reply) = reply.as_mut().poll(cx) {
                this.reply = None;
                if reply.is_none() {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                this.last = reply;
            }
        }
        if let Poll::Ready(Some(note)) = this.notes.poll_recv(cx) {
            return Poll::Ready(Some(Ok(event(*note))));
        }
        if this.reply.is_some() {
            if this.idle.poll_tick(cx).is_ready() {
                return Poll::Ready(Some(Ok(Bytes::from_static(b": keep-alive\n\n"))));
            }
            return Poll::Pending;
        }
        // Nothing may follow the reply: it goes once every notification sent before it has.
        this.ended = true;
        Poll::Ready(this.last.take().map(|reply| Ok(event(reply.into_outgoing()))))
    }
}

/// One SSE event: a single `data:` line of compact JSON.
fn event(message: Outgoing) -> Bytes {
    Bytes::from(format!("event: message\ndata: {}\n\n", message.into_json()))
}
