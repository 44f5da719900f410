//! Legacy (2025-11-25) sessions over Streamable HTTP: `initialize` opens one and names it
//! in `Mcp-Session-Id` (or, for a client opening sessions too fast, gets 429 with
//! `Retry-After`); later requests carry it; `GET` opens its stream of changes; `DELETE`
//! ends it; the client's answers to the bridge's requests arrive as POSTed JSON-RPC responses.

use std::sync::Arc;

use axum::extract::Request as HttpRequest;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::call::{serve_request, Head};
use super::headers;
use super::shared::{method_not_allowed, Endpoint};
use super::sse::{error_response, json_response};
use crate::base::error::Error;
use crate::bounds::fair::ClientId;
use crate::bounds::shutdown::Draining;
use crate::intake::envelope::{Era, Request};
use crate::mrtr::context::Delivery;
use crate::protocol::{Method as McpMethod, Outgoing, RequestId, ResultJson};
use crate::routes::catalog::RequestView;
use crate::transport::error_message;
use crate::transport::legacy::{self, Opener, Session};

/// Serves one request of the legacy era.
pub(super) async fn serve(endpoint: &Endpoint, head: &Head, request: Request) -> Response {
    if request.known == Some(McpMethod::Initialize) {
        let opener = Opener { owner: head.principal(&endpoint.server), client: ClientId::of(&head.extensions) };
        return match legacy::initialize_by(&endpoint.server, &endpoint.sessions, &request, opener) {
            Ok((session_id, result)) => {
                let mut response =
                    json_response(200, Outgoing::Result { id: request.id, result: ResultJson::from_value(&result) });
                if let Ok(value) = HeaderValue::from_str(&session_id) {
                    response.headers_mut().insert(headers::SESSION_ID, value);
                }
                response
            }
            Err(error) if error.http_status() == 429 => too_many_sessions(request.id, &error),
            Err(error) => error_response(Era::Legacy, Some(request.id), &error),
        };
    }
    let session = match session_of(endpoint, head) {
        Ok(session) => session,
        Err((status, error)) => return json_response(status, error_message(Some(request.id), &error)),
    };
    session.mark_used();
    let delivery =
        Delivery { headers: Some(head.headers.clone()), extensions: head.extensions.clone(), ..Delivery::default() };
    if let Some(outcome) = legacy::utility(&endpoint.server, &endpoint.sessions, &session, &request, &delivery) {
        return match outcome {
            Ok(result) => {
                json_response(200, Outgoing::Result { id: request.id, result: ResultJson::from_value(&result) })
            }
            Err(error) => error_response(Era::Legacy, Some(request.id), &error),
        };
    }
    let meta = Arc::new(legacy::meta(&session, &request));
    serve_request(endpoint, head, request, meta, Some(session)).await
}

/// The refusal of an `initialize` from a client that opens sessions too fast: HTTP 429
/// with `Retry-After`, which HTTP clients and proxies know to wait out, and the JSON-RPC
/// error naming the wait.
fn too_many_sessions(id: RequestId, error: &Error) -> Response {
    let mut response = json_response(429, error_message(Some(id), error));
    let seconds = error.data().and_then(|data| data.get("retryAfterSeconds")).and_then(Value::as_u64).unwrap_or(1);
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// A notification on a session: `notifications/cancelled` stops the request it names
/// (which then sends nothing more); a cancellation of an unknown or finished request, and
/// every other notification (`initialized`, `roots/list_changed`), is accepted and ignored.
pub(super) fn notification(endpoint: &Endpoint, head: &Head, method: &str, params: Option<&Value>) -> Response {
    // A notification does not count as using the session: a client that sends only
    // `notifications/initialized` is as fresh as one that sent nothing.
    let session = match session_of(endpoint, head) {
        Ok(session) => session,
        Err((status, error)) => return json_response(status, error_message(None, &error)),
    };
    if method == "notifications/cancelled" {
        let id = params.and_then(|p| p.get("requestId")).and_then(RequestId::from_value);
        if !id.is_some_and(|id| session.in_flight.cancel(&id)) {
            tracing::debug!("a cancellation for no running request (unknown, or already answered)");
        }
    }
    StatusCode::ACCEPTED.into_response()
}

/// A client's answer to one of the bridge's requests.
pub(super) fn deliver(endpoint: &Endpoint, head: &Head, id: &RequestId, outcome: Result<Value, Value>) -> Response {
    if !head.headers.contains_key(headers::SESSION_ID) {
        let error =
            Error::invalid_request("a JSON-RPC response answers nothing here: only legacy sessions get requests");
        return json_response(400, error_message(Some(id.clone()), &error));
    }
    match session_of(endpoint, head) {
        Ok(session) => {
            session.mark_used();
            if !session.deliver(id, outcome) {
                tracing::debug!(%id, "a response nobody waits for (answered late, or never asked)");
            }
            StatusCode::ACCEPTED.into_response()
        }
        Err((status, error)) => json_response(status, error_message(Some(id.clone()), &error)),
    }
}

/// `GET` and `DELETE`: with a live session of the request's caller, the session's stream
/// of changes (see [`changes`]) and the end of the session; with an unknown one, or
/// another caller's, 404 so the client starts over (as for a POST: see [`session_of`]);
/// else 405.
pub(super) fn session_method(endpoint: &Endpoint, request: HttpRequest) -> Response {
    let Some(id) = headers::header(request.headers(), headers::SESSION_ID) else { return method_not_allowed() };
    let principal = endpoint.server.principal_from(Some(request.headers()), request.extensions());
    let Some(session) = owned_session(endpoint, id, principal.as_deref()) else {
        return json_response(404, error_message(None, &session_not_found()));
    };
    if request.method() == Method::DELETE {
        endpoint.sessions.close(&session.id);
        return StatusCode::OK.into_response();
    }
    changes(endpoint, &session, request)
}

/// The session's `GET` stream: the changes it hears (`legacy::relay`) as SSE, until the
/// session ends, a newer `GET` of it opens, the server shuts down or the stream reaches
/// its lifetime; 405 where the server serves no changes.
///
/// A session holds one place among the streams: its older `GET` ends, and hands its place
/// back, before the newer is admitted. A client reconnecting after a network failure,
/// its old stream still thought alive, then takes over that place even at its share
/// (streams of all the clients behind one NAT count together) instead of getting `503`.
/// Streams of distinct sessions still count one each.
fn changes(endpoint: &Endpoint, session: &Arc<Session>, request: HttpRequest) -> Response {
    let (parts, _) = request.into_parts();
    if !super::call::accepts_event_stream(&parts.headers) {
        let error = Error::invalid_request("the session's GET stream is text/event-stream: accept it");
        return json_response(406, error_message(None, &error));
    }
    let server = endpoint.server.clone();
    session.end_stream();
    let hearing = match server.hear(&ClientId::of(&parts.extensions)) {
        Ok(Some(hearing)) => hearing,
        Ok(None) => return method_not_allowed(),
        Err(error) => return json_response(503, error_message(None, &error)),
    };
    session.mark_used();
    let (notifier, notes) = tokio::sync::mpsc::channel(32);
    let (session, keep_alive) = (session.clone(), server.keep_alive());
    let (listening, handoff) = super::serve::Connection::listening(&parts.extensions);
    let delivery = Delivery {
        headers: Some(super::call::owned(&parts.headers)),
        extensions: Arc::new(parts.extensions),
        ..Delivery::default()
    };
    let ended = session.open_stream(hearing.release_early());
    let stream = async move {
        let _listening = listening;
        let meta = legacy::stream_meta(&session);
        let view = RequestView::new(&meta, &delivery);
        let stop = async {
            tokio::select! { () = ended => {}, () = Draining::of(&delivery.extensions) => {} }
        };
        legacy::relay(&server, &session, &view, hearing, &notifier, stop, legacy::Carrier::Get).await;
    };
    super::sse::stream(notes, Box::pin(stream), keep_alive, handoff)
}

/// The session a message names, if it exists and belongs to the request's caller: a
/// session opened by one caller is unknown to every other (404, as if it did not exist).
/// Requests, and answers to the bridge, then mark it used; notifications do not.
fn session_of(endpoint: &Endpoint, head: &Head) -> Result<Arc<Session>, (u16, Error)> {
    let id = headers::header(&head.headers, headers::SESSION_ID).ok_or_else(|| {
        (400, Error::invalid_request("missing Mcp-Session-Id header: send initialize first (or use 2026-07-28)"))
    })?;
    owned_session(endpoint, id, head.principal(&endpoint.server).as_deref()).ok_or_else(|| (404, session_not_found()))
}

/// The session `id` names, if it exists and `principal` opened it.
fn owned_session(endpoint: &Endpoint, id: &str, principal: Option<&str>) -> Option<Arc<Session>> {
    let session = endpoint.sessions.find(id)?;
    if session.owner.as_deref() != principal {
        tracing::debug!("a session named by a caller other than the one who opened it");
        return None;
    }
    Some(session)
}

fn session_not_found() -> Error {
    Error::invalid_request("session not found: it ended or never existed; send initialize again")
}
