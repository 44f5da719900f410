//! One request through dispatch: a handler slot (a share per client, `slots`), JSON or
//! SSE, the request's `Delivery` (a legacy call's with its bridge), then
//! [`Engine::handle`](crate::dispatch::Engine), its reply framed by `sse`. Modern POSTs
//! come here from `post`, 2025-11-25 ones from `legacy`.

use std::future::Future;
use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::shared::Endpoint;
use super::sse::{error_response, json_response, respond};
use super::{handoff, slots};
use crate::base::error::Error;
use crate::bounds::fair::{ClientId, Held};
use crate::dispatch::{Engine, Reply};
use crate::intake::envelope::{Era, Request, RequestMeta};
use crate::mrtr::context::{Bridge, Delivery};
use crate::protocol::{Method, RequestId};
use crate::transport::error_message;
use crate::transport::legacy::{HandlerSlot, Session, SessionBridge, SlotLease, WaitBounds};

/// Runs a request through dispatch and answers it, if one of the
/// [`HttpLimits::max_handlers`] slots is free: a modern one as it stands, a legacy one (with
/// its session) as a request of that session that `notifications/cancelled` can stop.
pub(super) async fn serve_request(
    endpoint: &Endpoint,
    head: &Head,
    request: Request,
    meta: Arc<RequestMeta>,
    session: Option<Arc<Session>>,
) -> Response {
    let listen = request.known == Some(Method::Listen);
    if let Some(error) = endpoint.config.lifetime.refuse_listen().filter(|_| listen) {
        return error_response(Era::Modern, Some(request.id), &error);
    }
    let Admission { held, place, bridge } = match Admission::take(endpoint, head, &request, session.as_ref()).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    // A client that cannot read SSE gets JSON, and so no notifications; nor does a modern
    // call that asked for neither progress nor logs, which has none to get.
    let may_notify = session.is_some() || listen || meta.progress_token.is_some() || meta.log_level.is_some();
    let (notifier, notes) = if may_notify && accepts_event_stream(&head.headers) {
        let (tx, rx) = mpsc::channel(32);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let delivery = Delivery {
        notifier,
        headers: Some(if listen { owned(&head.headers) } else { head.headers.clone() }),
        extensions: head.extensions.clone(),
        bridge,
        handler_timeout: endpoint.handler_timeout,
    };
    let server = endpoint.server.clone();
    let keep_alive = server.keep_alive();
    if listen && session.is_none() {
        let (reply, handoff) = listen_reply(head, server, request, meta, delivery);
        return respond(Era::Modern, reply, notes, keep_alive, handoff).await;
    }
    let id = request.id.clone();
    let reply = run(server, request, meta, delivery, held, place);
    match session {
        None => respond(Era::Modern, Box::pin(reply.map(Some)), notes, keep_alive, None).await,
        Some(session) => {
            respond(Era::Legacy, Box::pin(session.in_flight.track(id, reply)), notes, keep_alive, None).await
        }
    }
}

/// What a request holds while it runs, once admitted.
struct Admission {
    /// Its handler slot, or for a legacy call the lease its bridge shares (the bridge
    /// gives the slot back while the client answers); freed when the call ends.
    held: (Option<OwnedSemaphorePermit>, Option<SlotLease>),
    /// Where a modern request learns it must give way to another client's (see `slots`).
    place: Option<Held>,
    /// A legacy call's way to ask its client.
    bridge: Option<Arc<dyn Bridge>>,
}

impl Admission {
    /// Admits a request: within its session's bound on calls, and with a handler slot
    /// unless it is a listen stream, which idles for hours and so holds a connection
    /// (bounded by `max_connections`), not one of the slots meant for work. The refusal is
    /// the response to send.
    async fn take(
        endpoint: &Endpoint,
        head: &Head,
        request: &Request,
        session: Option<&Arc<Session>>,
    ) -> Result<Self, Response> {
        if session.is_some_and(|session| session.in_flight.len() >= endpoint.sessions.limits().max_calls) {
            let error = Error::internal("too many requests running on this session; wait for one to finish");
            return Err(error_response(Era::Legacy, Some(request.id.clone()), &error));
        }
        let slot = if request.known == Some(Method::Listen) {
            None
        } else {
            let taken = endpoint.slots.take(&ClientId::of(&head.extensions), session.is_some()).await;
            Some(taken.map_err(|error| busy(request.id.clone(), session.is_some(), &error))?)
        };
        let (permit, place) = slot.map_or((None, None), |slots::Slot { permit, place }| (Some(permit), place));
        Ok(match session {
            Some(session) => {
                let (bridge, lease) = bridge(endpoint, head, session, permit);
                Self { held: (None, lease), place, bridge: Some(bridge as Arc<dyn Bridge>) }
            }
            None => Self { held: (permit, None), place, bridge: None },
        })
    }
}

/// The bridge of a legacy call, and the lease on its handler slot (if it holds one).
///
/// The slot is shared with the bridge, which gives it back while the call waits for the
/// client's answers and takes one again to run the next round: a wait holds a place among
/// the endpoint's bridge waits (with its share per client) instead of a handler slot.
fn bridge(
    endpoint: &Endpoint,
    head: &Head,
    session: &Arc<Session>,
    permit: Option<OwnedSemaphorePermit>,
) -> (Arc<SessionBridge>, Option<SlotLease>) {
    let slot = permit.map(|permit| HandlerSlot::new(endpoint.slots.total().clone(), permit));
    let bounds = WaitBounds {
        pool: endpoint.sessions.bridge_waits().clone(),
        client: ClientId::of(&head.extensions),
        slot: slot.clone(),
    };
    (Arc::new(SessionBridge::new(session.clone()).bounded(bounds)), slot.map(SlotLease::new))
}

/// Runs the request's handler holding what it was admitted with; a modern one ends with
/// a "make room" error if it must give way.
async fn run(
    server: Arc<Engine>,
    request: Request,
    meta: Arc<RequestMeta>,
    delivery: Delivery,
    held: (Option<OwnedSemaphorePermit>, Option<SlotLease>),
    place: Option<Held>,
) -> Reply {
    let id = request.id.clone();
    let handled = run_holding(held, server.handle(request, meta, delivery));
    match place {
        Some(place) => unless_giving_way(id, handled, &place).await,
        None => handled.await,
    }
}

/// The reply of `handled`, or a "make room" error if `place` must be given way first.
/// Biased: a reply that is ready wins (a handler that has finished is answered, however
/// late the pool asked), and no random number is drawn to order the two on every poll.
async fn unless_giving_way(id: RequestId, handled: impl Future<Output = Reply>, place: &Held) -> Reply {
    tokio::select! {
        biased;
        reply = handled => reply,
        () = place.give_way() => Reply { id, outcome: Err(slots::gave_way()) },
    }
}

/// A listen stream's reply: the smallest future that runs it (the stream holds it for
/// hours; it takes no handler slot, so has none to give way), marking its connection as
/// listening, which may then be closed for room when its client holds the most
/// connections (see `connections`). Served by `Http`, the stream leaves hyper
/// once acknowledged, through the returned handoff (see `handoff`).
fn listen_reply(
    head: &Head,
    server: Arc<Engine>,
    request: Request,
    meta: Arc<RequestMeta>,
    delivery: Delivery,
) -> (BoxFuture<'static, Option<Reply>>, Option<Arc<handoff::Handoff>>) {
    let (listening, handoff) = super::serve::Connection::listening(&head.extensions);
    let reply = async move {
        let _listening = listening;
        Some(server.handle(request, meta, delivery).await)
    };
    (Box::pin(reply), handoff)
}

/// A POST's head, shared by everything that serves it: the headers, and the extensions
/// the application's middleware set (the authenticated caller among them).
pub(super) struct Head {
    pub(super) headers: Arc<HeaderMap>,
    pub(super) extensions: Arc<axum::http::Extensions>,
}

impl Head {
    /// Who the request's state and session are bound to.
    pub(super) fn principal(&self, server: &Engine) -> Option<String> {
        server.principal_from(Some(&self.headers), &self.extensions)
    }
}

/// A copy of `headers` that shares no memory with them. Hyper's header values (and the
/// names it does not know) are views of the connection's read buffer (16 KiB once
/// grown), which a listen stream would otherwise keep for its whole life, long after
/// hyper let go of the connection.
pub(super) fn owned(headers: &HeaderMap) -> Arc<HeaderMap> {
    let mut copy = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let mut fresh = HeaderValue::from_bytes(value.as_bytes()).unwrap_or_else(|_| value.clone());
        fresh.set_sensitive(value.is_sensitive());
        let name = HeaderName::from_bytes(name.as_str().as_bytes()).unwrap_or_else(|_| name.clone());
        copy.append(name, fresh);
    }
    Arc::new(copy)
}

/// Runs `handler` holding its slot: the slot frees when the handler ends or is dropped.
async fn run_holding<S: Send, T>(_slot: S, handler: impl std::future::Future<Output = T>) -> T {
    handler.await
}

/// Every handler slot is taken. Modern clients get HTTP 503 with `Retry-After`; legacy
/// sessions, where request errors travel on HTTP 200, a JSON-RPC error.
fn busy(id: crate::protocol::RequestId, legacy: bool, error: &Error) -> Response {
    let status = if legacy { 200 } else { 503 };
    let mut response = json_response(status, error_message(Some(id), error));
    if !legacy {
        response.headers_mut().insert(header::RETRY_AFTER, axum::http::HeaderValue::from_static("1"));
    }
    response
}

pub(super) fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| matches!(t.split(';').next().map(str::trim), Some("text/event-stream" | "*/*" | "text/*")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::fair::FairPool;
    use crate::protocol::ResultJson;

    /// A place asked to give way ends a handler still running, never one that has
    /// finished: its reply goes out.
    #[tokio::test]
    async fn a_finished_reply_wins_over_giving_way_and_a_running_one_gives_way() {
        let pool = FairPool::new(2, 2);
        let heavy = ClientId::loopback(1);
        let (oldest, _newer) = (pool.admit(&heavy).unwrap(), pool.admit(&heavy).unwrap());
        let _light = pool.admit(&ClientId::loopback(2)).expect("the heaviest client gives way");
        for _ in 0..32 {
            let ready =
                std::future::ready(Reply { id: RequestId::from(1), outcome: Ok(ResultJson::from_text("{}".into())) });
            let reply = unless_giving_way(RequestId::from(1), ready, &oldest).await;
            assert!(reply.outcome.is_ok(), "a finished handler was answered with {:?}", reply.outcome.err());
        }
        let running = std::future::pending::<Reply>();
        let reply = unless_giving_way(RequestId::from(2), running, &oldest).await;
        assert_eq!(reply.id, RequestId::from(2));
        assert_eq!(reply.outcome.unwrap_err().message(), slots::gave_way().message());
    }
}
