//! What every request to one endpoint shares ([`Endpoint`]), and the answers every HTTP
//! method's path may give. A leaf of the HTTP rooms: the door (`endpoint`) makes the
//! `Endpoint`; `post`, `legacy` and `call` read it.

use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{slots, HttpConfig};
use crate::bounds::shutdown::LeftWith;
use crate::dispatch::Engine;

/// One endpoint: the engine, the config, the sessions, the handler slots and the OAuth
/// gate.
pub(super) struct Endpoint {
    pub(super) server: Arc<Engine>,
    pub(super) config: HttpConfig,
    /// Sessions of legacy (2025-11-25) clients; modern traffic has none.
    pub(super) sessions: crate::transport::legacy::Sessions,
    /// One per running handler, [`HttpLimits::max_handlers`] in all, a share per client.
    pub(super) slots: slots::Slots,
    /// The resource server checking bearer tokens, when [`HttpConfig::auth`] set one.
    pub(super) gate: Option<Arc<crate::ext::auth::Gate>>,
    /// The drain of `serve_router` this endpoint's tasks are handed back after.
    pub(super) handed_back: LeftWith,
    /// How long one run of a handler may take here, resolved once (60 s unless the server
    /// says otherwise).
    pub(super) handler_timeout: Option<std::time::Duration>,
}

/// A GET or DELETE where only a POST is served.
pub(super) fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response()
}
