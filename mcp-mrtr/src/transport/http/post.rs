//! A POST, top-down (spec digest §1.3): content type → body size and time → envelope
//! (modern requests read without a JSON tree) → JSON-RPC framing → era → MCP headers →
//! `call`, which runs it. A 2025-11-25 message goes to `legacy`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request as HttpRequest;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::call::{serve_request, Head};
use super::shared::Endpoint;
use super::sse::{error_response, json_response};
use super::{cross_site, headers, legacy, HttpConfig};
use crate::base::error::Error;
use crate::intake::envelope::{classify, names_modern, Era, Incoming, Request, RequestMeta};
use crate::transport::{error_message, read_message};

pub(super) async fn post(endpoint: &Endpoint, request: HttpRequest) -> Response {
    if !cross_site::is_json(request.headers()) {
        let error = Error::invalid_request("Content-Type must be application/json");
        return json_response(415, error_message(None, &error));
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, &endpoint.config).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let head = Head { headers: Arc::new(parts.headers), extensions: Arc::new(parts.extensions) };
    let headers = &*head.headers;
    let header_version = headers::header(headers, headers::PROTOCOL_VERSION);
    // Most traffic: a modern request, its envelope read without a tree. Only tried for a
    // client that names a modern version, so 2025-11-25 traffic is not parsed twice.
    if names_modern(header_version) {
        if let Some((request, meta)) = crate::intake::envelope::read_modern(&bytes) {
            // The request holds what it needs: a call held for its handler's life does
            // not keep its body too.
            drop(bytes);
            return match headers::check(headers, &request, &meta) {
                Err(error) => error_response(Era::Modern, Some(request.id), &error),
                Ok(()) => serve_request(endpoint, &head, request, meta, None).await,
            };
        }
    }
    let message = read_message(&bytes);
    drop(bytes);
    match message {
        // Malformed bodies are 400 in both eras.
        Err((id, error)) => json_response(error.http_status(), error_message(id, &error)),
        // A legacy session's notifications (`notifications/cancelled` among them) go to
        // the session. A 2026-07-28 client has no notification for the server on HTTP:
        // it cancels by closing the stream, so anything else is accepted and ignored.
        Ok(Incoming::Notification { method, params }) if headers.contains_key(headers::SESSION_ID) => {
            legacy::notification(endpoint, &head, &method, params.as_ref())
        }
        Ok(Incoming::Notification { .. }) => StatusCode::ACCEPTED.into_response(),
        Ok(Incoming::Response { id, outcome }) => legacy::deliver(endpoint, &head, &id, outcome),
        // Boxed: the rarer paths (a legacy call, a modern request the fast path did not
        // take) would otherwise size this future, and every future holding it, for
        // themselves: 1.9 KB that the fast path's requests carried and copied.
        Ok(Incoming::Request(request)) => Box::pin(by_era(endpoint, &head, header_version, request)).await,
    }
}

/// A request the fast path did not take, sent where its era says: by its version header
/// and session, or by its body when both are missing.
async fn by_era(endpoint: &Endpoint, head: &Head, header_version: Option<&str>, request: Request) -> Response {
    let headers = &*head.headers;
    match classify(&request, header_version, headers.contains_key(headers::SESSION_ID)) {
        Some(Era::Modern) => match open_envelope(headers, &request) {
            Err(error) => error_response(Era::Modern, Some(request.id), &error),
            Ok(meta) => serve_request(endpoint, head, request, Arc::new(meta), None).await,
        },
        Some(Era::Legacy) => {
            // Read by its first version header too: a repeat is refused here as a modern
            // request's is in `headers::check`.
            let repeated = crate::intake::param_headers::refuse_repeated(
                headers,
                headers::PROTOCOL_VERSION,
                "MCP-Protocol-Version",
            );
            let refused = repeated.err().or_else(|| endpoint.config.lifetime.refuse_session(header_version));
            match refused {
                Some(error) => json_response(400, error_message(Some(request.id), &error)),
                None => legacy::serve(endpoint, head, request).await,
            }
        }
        // No clue either way: answered as a modern request is.
        None => {
            let error = Error::header_mismatch("missing MCP-Protocol-Version header");
            error_response(Era::Modern, Some(request.id), &error)
        }
    }
}

/// Validates a modern request's envelope and MCP headers (its `Mcp-Param-*` headers
/// wait for dispatch, which knows whether the caller may reach the tool).
fn open_envelope(headers: &HeaderMap, request: &Request) -> Result<RequestMeta, Error> {
    let meta = RequestMeta::parse(request.params.as_ref())?;
    headers::check(headers, request, &meta)?;
    Ok(meta)
}

/// Reads the whole body within the config's bounds, or the response refusing it: over
/// `max_body_bytes` (413), still arriving after `body_timeout` (408: a slow sender would
/// otherwise hold its connection and buffer), unreadable (400), or holding more JSON
/// values than `max_json_values` (413).
async fn read_body(body: Body, config: &HttpConfig) -> Result<axum::body::Bytes, Response> {
    let (limit, deadline) = (config.max_body_bytes, config.limits.body_timeout);
    let read = tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await;
    let refused = match read {
        Ok(Ok(bytes)) => {
            return match crate::intake::envelope::size::check(&bytes, config.max_json_values) {
                Ok(()) => Ok(bytes),
                Err(error) => Err(json_response(413, error_message(None, &error))),
            };
        }
        Err(_) => (
            408,
            Error::invalid_request(format!(
                "the request body did not arrive within {}",
                crate::base::deadline::describe(deadline)
            )),
        ),
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(<dyn std::error::Error>::is::<http_body_util::LengthLimitError>);
            if too_large {
                (413, Error::invalid_request(format!("request body exceeds the {limit}-byte limit")))
            } else {
                (400, Error::invalid_request(format!("could not read the request body: {e}")))
            }
        }
    };
    let (status, error) = refused;
    let mut response = json_response(status, error_message(None, &error));
    // The rest of the body is still on its way: this connection cannot carry another request.
    response.headers_mut().insert(header::CONNECTION, axum::http::HeaderValue::from_static("close"));
    Err(response)
}
