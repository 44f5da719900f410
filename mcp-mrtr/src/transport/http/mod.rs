//! Streamable HTTP for 2026-07-28: one endpoint, POST only, each request answered with
//! JSON or with an SSE stream of its notifications and its reply.
//!
//! The pipeline of a POST follows spec digest §1.3: host/origin guard → content type →
//! body size → JSON → JSON-RPC framing → envelope (`_meta`) → MCP headers → dispatch.

mod connections;
mod guard;
mod headers;
mod legacy;
mod limits;
mod open_files;
mod serve;
mod slots;
mod sse;
mod status;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request as HttpRequest, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::FutureExt;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::mpsc;

use self::guard::{Guard, HostPolicy};
pub use self::limits::Limits;
use self::serve::App;
pub use self::serve::{serve_router, serve_router_with_shutdown};
use self::sse::{error_response, json_response, respond};
use super::{error_message, read_message};
use crate::context::Transport;
use crate::dispatch::Engine;
use crate::dispatch::Reply;
use crate::envelope::{classify, names_modern, Era, Incoming, Request, RequestMeta};
use crate::fair::{ClientAddr, ClientId};
use crate::{Error, Server};

/// How the HTTP endpoint is mounted and guarded.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    path: String,
    max_body_bytes: usize,
    guard: Guard,
    limits: Limits,
    auth: Option<crate::auth::ResourceServer>,
    /// When `serve_http*` stops; `None`: on SIGTERM or Ctrl-C.
    shutdown: Option<crate::shutdown::Signal>,
    /// Whether a client's address is the last one in `X-Forwarded-For`.
    trust_forwarded_for: bool,
}

impl Default for HttpConfig {
    /// `/mcp`, 1 MiB bodies, only `localhost`, `127.0.0.1` and `[::1]` as hosts,
    /// browser requests only from pages on those hosts, and the default [`Limits`].
    fn default() -> Self {
        Self {
            path: "/mcp".into(),
            max_body_bytes: 1024 * 1024,
            guard: Guard::default(),
            limits: Limits::default(),
            auth: None,
            shutdown: None,
            trust_forwarded_for: false,
        }
    }
}

impl HttpConfig {
    /// The endpoint's path (default `/mcp`).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The largest request body accepted (default 1 MiB); larger ones get HTTP 413.
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// Answers only requests whose `Host` names one of these hosts (without port), and
    /// browser requests from pages on them, protecting local servers from DNS
    /// rebinding. The default allows the loopback names only.
    pub fn allowed_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.guard.hosts = HostPolicy::Only(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Answers any `Host`: for servers behind a proxy that checks it, or reached by names
    /// not known in advance. `Origin` is still checked: browser requests are answered
    /// only from loopback pages and [`allowed_origins`](Self::allowed_origins).
    pub fn allow_any_host(mut self) -> Self {
        self.guard.hosts = HostPolicy::Any;
        self
    }

    /// The bounds on connections, bodies and handlers (see [`Limits`] for the defaults).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Also answers browser requests from pages of these origins, written as the browser
    /// sends them: `https://app.example.com`, or with a port, `http://intranet:8080`.
    /// Any other `Origin` gets 403, whatever the `Host` settings. Default: none beyond
    /// the loopback hosts and [`allowed_hosts`](Self::allowed_hosts).
    pub fn allowed_origins<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        let origins = origins.into_iter().map(|o| o.into().trim_end_matches('/').to_ascii_lowercase());
        self.guard.origins.extend(origins);
        self
    }

    /// The configuration `serve_http` uses on `local`: loopback hosts only on a loopback
    /// address; any host elsewhere (the names a LAN or container address is reached by
    /// are not known), with the `Origin` check kept.
    fn for_address(local: SocketAddr) -> Self {
        if local.ip().is_loopback() {
            Self::default()
        } else {
            Self::default().allow_any_host()
        }
    }

    /// Makes [`Server::serve_http_with`] shut down gracefully when `signal` resolves,
    /// instead of on SIGTERM or Ctrl-C (the default): for an application that decides
    /// itself when to stop. `std::future::pending()` serves until the process ends.
    /// Routers ([`Server::into_router_with`]) do not read it; see
    /// [`serve_router_with_shutdown`] for them.
    ///
    /// ```
    /// use mcp_mrtr::HttpConfig;
    ///
    /// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    /// let config = HttpConfig::default().shutdown_signal(async move {
    ///     let _ = stopped.await;
    /// });
    /// # drop((stop, config));
    /// ```
    pub fn shutdown_signal(mut self, signal: impl std::future::Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(crate::shutdown::Signal::new(signal));
        self
    }

    /// Takes a client's address from the last entry of `X-Forwarded-For` (the one the
    /// proxy in front of this server appended) instead of the TCP peer. Off by default:
    /// only turn it on behind a proxy that always sets the header, since a client that
    /// reaches the server directly could otherwise claim any address.
    ///
    /// The address is who a client is for every per-client share of [`Limits`] when the
    /// request has no authenticated [`Caller`](crate::Caller). Behind a proxy without this,
    /// every client shares the proxy's address, so the per-client shares act as totals.
    pub fn trust_forwarded_for(mut self) -> Self {
        self.trust_forwarded_for = true;
        self
    }

    /// Protects the endpoint as an OAuth 2.1 resource server: every request needs a
    /// bearer token the server's verifier accepts, and the protected resource metadata
    /// is served at its well-known URI. See [`crate::auth`].
    pub fn auth(mut self, resource_server: crate::auth::ResourceServer) -> Self {
        self.auth = Some(resource_server);
        self
    }
}

struct Endpoint {
    server: Arc<Engine>,
    config: HttpConfig,
    /// Sessions of legacy (2025-11-25) clients; modern traffic has none.
    sessions: crate::legacy::Sessions,
    /// One per running handler, [`Limits::max_handlers`] in all, a share per client.
    slots: slots::Slots,
    /// The resource server checking bearer tokens, when [`HttpConfig::auth`] set one.
    gate: Option<Arc<crate::auth::Gate>>,
}

impl Server {
    /// An axum router serving this server at `/mcp`, with the default [`HttpConfig`].
    /// Merge it into an existing app with [`Router::merge`]; middleware the app layers
    /// around it can attach a [`Caller`](crate::Caller) and other extensions that
    /// handlers read.
    ///
    /// # Panics
    ///
    /// As [`Server::into_router_with`].
    pub fn into_router(self) -> Router {
        self.into_router_with(HttpConfig::default())
    }

    /// An axum router serving this server as `config` says.
    ///
    /// # Panics
    ///
    /// If the server is misconfigured: a handler takes `State<T>` and the server was given
    /// no `T` (see [`Server::with_state`]), `MCP_MRTR_STATE_KEYS` is malformed (and no
    /// [`StateConfig`](crate::StateConfig) was given), or the [`HttpConfig::auth`] resource
    /// server has no verifier. Found before the first request, never on a client's call;
    /// [`Server::try_into_router_with`] returns it instead.
    pub fn into_router_with(self, config: HttpConfig) -> Router {
        self.try_into_router_with(config).unwrap_or_else(|error| panic!("cannot serve MCP over HTTP: {error}"))
    }

    /// An axum router serving this server as `config` says, or what is misconfigured (see
    /// [`Server::into_router_with`]).
    pub fn try_into_router_with(self, config: HttpConfig) -> io::Result<Router> {
        let endpoint = self.into_endpoint(config)?;
        let router = Router::new().route(&endpoint.config.path, axum::routing::any(endpoint_handler));
        let router = match &endpoint.gate {
            // The metadata is public: it is how a client without a token learns where to get one.
            Some(gate) => router.route(
                gate.metadata_path(),
                axum::routing::any(|State(endpoint): State<Arc<Endpoint>>, method: Method| async move {
                    metadata(&endpoint, &method)
                }),
            ),
            None => router,
        };
        Ok(router.with_state(endpoint))
    }

    /// The endpoint `config` describes, checked.
    fn into_endpoint(self, config: HttpConfig) -> io::Result<Arc<Endpoint>> {
        let engine = self.into_engine();
        engine.check_ready()?;
        let path = config.path.clone();
        let slots = slots::Slots::new(config.limits.max_handlers, config.limits.handler_share());
        let sessions = crate::legacy::Sessions::new(config.limits.sessions);
        if let Some(auth) = config.auth.as_ref().filter(|auth| !auth.resource().trim_end_matches('/').ends_with(&path))
        {
            // Clients derive the metadata's URI from the resource; a mismatch usually
            // means a proxy rewrites paths, or a typo that breaks discovery.
            tracing::warn!(resource = auth.resource(), %path, "the resource URI does not end with the MCP path");
        }
        let gate =
            config.auth.as_ref().map(crate::auth::Gate::new).transpose().map_err(io::Error::other)?.map(Arc::new);
        // Every HTTP door comes through here: from now on this instance takes over the
        // tasks of instances that died, before any request reaches it.
        engine.start();
        Ok(Arc::new(Endpoint { server: Arc::new(engine), config, sessions, slots, gate }))
    }

    /// Serves Streamable HTTP on `addr` until SIGTERM or Ctrl-C, then shuts down
    /// gracefully (see [`serve_router_with_shutdown`]) and hands back the tasks running
    /// here.
    ///
    /// On a loopback address only loopback host names are answered (DNS-rebinding
    /// protection); on any other address every host is, so put a proxy that checks
    /// hosts in front, or use [`Server::into_router_with`]. On every address, browser
    /// requests are answered only from loopback pages. A malformed
    /// `MCP_MRTR_STATE_KEYS` is an error before anything is served.
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> io::Result<()> {
        self.serve_http_listener(TcpListener::bind(addr).await?).await
    }

    /// Serves Streamable HTTP on a bound listener (bind port 0 to let the OS pick one),
    /// as [`Server::serve_http`] does.
    pub async fn serve_http_listener(self, listener: TcpListener) -> io::Result<()> {
        let local: SocketAddr = listener.local_addr()?;
        let config = HttpConfig::for_address(local);
        if !local.ip().is_loopback() {
            tracing::warn!(%local, path = %config.path, "serving MCP over HTTP on a non-loopback address: any Host is answered (Origin is still checked)");
        }
        self.serve_http_with(listener, config).await
    }

    /// Serves Streamable HTTP on a bound listener as `config` says, its [`Limits`]
    /// included, until its [`shutdown_signal`](HttpConfig::shutdown_signal) (by default
    /// SIGTERM or Ctrl-C). Then it drains (see [`serve_router_with_shutdown`]), hands back
    /// the tasks running here (their handlers stop; a shared task store lets another
    /// instance take them over) and returns. A misconfigured server is an error before
    /// anything is served.
    pub async fn serve_http_with(self, listener: TcpListener, mut config: HttpConfig) -> io::Result<()> {
        let local: SocketAddr = listener.local_addr()?;
        let limits = config.limits;
        // Installed before the first connection is accepted, so a SIGTERM sent to a server
        // that answers is always a graceful shutdown.
        let shutdown = config.shutdown.take().unwrap_or_else(|| crate::shutdown::Signal::new(crate::shutdown_signal()));
        let path = config.path.clone();
        // Served without a router: two paths need no routing table, nor its per-request layers.
        let endpoint = self.into_endpoint(config)?;
        let engine = endpoint.server.clone();
        tracing::info!(%local, %path, "serving MCP over HTTP");
        serve::serve_app(listener, endpoint, limits, shutdown.received()).await?;
        engine.hand_back_tasks().await;
        tracing::info!(%local, "shut down: tasks running here handed back");
        Ok(())
    }
}

/// `serve_http*` routes as the router of [`Server::try_into_router_with`] does: the MCP
/// path, the protected resource metadata when auth is on, and 404 for anything else.
impl App for Arc<Endpoint> {
    async fn respond(self, request: hyper::Request<hyper::body::Incoming>) -> Response {
        let path = request.uri().path();
        if path == self.config.path {
            endpoint_handler(State(self), request.map(axum::body::Body::new)).await
        } else if self.gate.as_ref().is_some_and(|gate| gate.metadata_path() == path) {
            metadata(&self, request.method())
        } else {
            StatusCode::NOT_FOUND.into_response()
        }
    }
}

/// The protected resource metadata (public: it is how a client without a token learns
/// where to get one).
fn metadata(endpoint: &Endpoint, method: &Method) -> Response {
    let declared = crate::auth::declared_scopes(&endpoint.server);
    endpoint.gate.as_ref().map_or_else(method_not_allowed, |gate| gate.metadata(method, &declared))
}

async fn endpoint_handler(State(endpoint): State<Arc<Endpoint>>, mut request: HttpRequest) -> Response {
    if let Err(reason) = endpoint.config.guard.check(request.headers()) {
        return json_response(403, error_message(None, &Error::invalid_request(format!("Forbidden: {reason}"))));
    }
    if let Some(address) = client_address(&endpoint.config, &request) {
        request.extensions_mut().insert(ClientAddr(address));
    }
    let gate = endpoint.gate.as_deref();
    if let Some(gate) = gate {
        if let Err(refusal) = gate.admit(&mut request).await {
            return refusal;
        }
    }
    let response = match *request.method() {
        Method::POST => post(&endpoint, request).await,
        // Only legacy sessions have anything to GET or DELETE.
        Method::GET | Method::DELETE => legacy::session_method(&endpoint, &request),
        _ => method_not_allowed(),
    };
    crate::auth::finish(gate, response)
}

async fn post(endpoint: &Endpoint, request: HttpRequest) -> Response {
    if !guard::is_json(request.headers()) {
        let error = Error::invalid_request("Content-Type must be application/json");
        return json_response(415, error_message(None, &error));
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, endpoint.config.max_body_bytes, endpoint.config.limits.body_timeout).await {
        Ok(bytes) => bytes,
        Err((status, error)) => {
            let mut response = json_response(status, error_message(None, &error));
            // The rest of the body is still on its way: this connection cannot carry another request.
            response.headers_mut().insert(header::CONNECTION, axum::http::HeaderValue::from_static("close"));
            return response;
        }
    };
    let head = Head { headers: Arc::new(parts.headers), extensions: Arc::new(parts.extensions) };
    let headers = &*head.headers;
    let header_version = headers::header(headers, headers::PROTOCOL_VERSION);
    // Most traffic: a modern request, its envelope read without a tree. Only tried for a
    // client that names a modern version, so 2025-11-25 traffic is not parsed twice.
    if names_modern(header_version) {
        if let Some((request, meta)) = crate::envelope::read_modern(&bytes) {
            return match headers::check(headers, &request, &meta) {
                Err(error) => error_response(Era::Modern, Some(request.id), &error),
                Ok(()) => serve_request(endpoint, &head, request, meta, None).await,
            };
        }
    }
    match read_message(&bytes) {
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
        Ok(Incoming::Request(request)) => {
            match classify(&request, header_version, headers.contains_key(headers::SESSION_ID)) {
                Era::Modern => match open_envelope(headers, &request) {
                    Err(error) => error_response(Era::Modern, Some(request.id), &error),
                    Ok(meta) => serve_request(endpoint, &head, request, Arc::new(meta), None).await,
                },
                // A 2025-11-25 request is read by its first version header too: a repeat
                // is refused here as a modern request's is in `headers::check`.
                Era::Legacy => {
                    match crate::param_headers::refuse_repeated(
                        headers,
                        headers::PROTOCOL_VERSION,
                        "MCP-Protocol-Version",
                    ) {
                        Err(error) => json_response(400, error_message(Some(request.id), &error)),
                        Ok(()) => legacy::serve(endpoint, &head, request).await,
                    }
                }
                Era::Unknown => {
                    let error = Error::header_mismatch("missing MCP-Protocol-Version header");
                    error_response(Era::Unknown, Some(request.id), &error)
                }
            }
        }
    }
}

/// Runs a request through dispatch and answers it, if one of the
/// [`Limits::max_handlers`] slots is free: a modern one as it stands, a legacy one (with
/// its session) as a request of that session that `notifications/cancelled` can stop.
async fn serve_request(
    endpoint: &Endpoint,
    head: &Head,
    request: Request,
    meta: Arc<RequestMeta>,
    session: Option<Arc<crate::legacy::Session>>,
) -> Response {
    if session.as_ref().is_some_and(|session| session.in_flight.len() >= endpoint.sessions.limits().max_calls) {
        let error = Error::internal("too many requests running on this session; wait for one to finish");
        return error_response(Era::Legacy, Some(request.id), &error);
    }
    // A `subscriptions/listen` stream idles for hours: it holds a connection (bounded by
    // `max_connections`), not one of the handler slots meant for work.
    let slot = if request.method == "subscriptions/listen" {
        None
    } else {
        match endpoint.slots.take(&ClientId::of(&head.extensions), session.is_some()).await {
            Ok(slot) => Some(slot),
            Err(error) => return busy(request.id, session.is_some(), &error),
        }
    };
    // A modern request may be asked to give way to another client's (see `slots`).
    let (slot, place) = match slot {
        Some(slots::Slot { permit, place }) => (Some(permit), place),
        None => (None, None),
    };
    // A client that cannot read SSE gets JSON, and so no notifications; nor does a modern
    // call that asked for neither progress nor logs, which has none to get.
    let may_notify = session.is_some()
        || request.method == "subscriptions/listen"
        || meta.progress_token.is_some()
        || meta.log_level.is_some();
    let (notifier, notes) = if may_notify && accepts_event_stream(&head.headers) {
        let (tx, rx) = mpsc::channel(32);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    // A legacy call shares its slot with its bridge, which gives it back while the client
    // answers (see `legacy::bridge`); the lease frees it when the call ends.
    let (slot, lease, bridge) = match &session {
        Some(session) => {
            let (bridge, lease) = legacy::bridge(endpoint, head, session, slot);
            (None, lease, Some(bridge))
        }
        None => (slot, None, None),
    };
    let handler_timeout = endpoint.config.limits.handler_timeout;
    let transport = Transport {
        notifier,
        headers: Some(head.headers.clone()),
        extensions: head.extensions.clone(),
        bridge: bridge.map(|bridge| bridge as Arc<dyn crate::context::Bridge>),
        handler_timeout,
    };
    let id = request.id.clone();
    let server = endpoint.server.clone();
    let keep_alive = server.keep_alive();
    // A listen stream marks its connection, which may then be closed for room when its
    // client holds the most connections (see `connections`).
    let listening = (request.method == "subscriptions/listen")
        .then(|| head.extensions.get::<Arc<connections::Activity>>().map(connections::Activity::listening))
        .flatten();
    let reply_id = id.clone();
    let reply = async move {
        let _listening = listening;
        let handled = run_holding((slot, lease), server.handle(request, meta, transport));
        let Some(place) = place else { return handled.await };
        tokio::select! {
            reply = handled => reply,
            () = place.give_way() => Reply { id: reply_id, outcome: Err(slots::gave_way()) },
        }
    };
    match session {
        None => respond(Era::Modern, Box::pin(reply.map(Some)), notes, keep_alive).await,
        Some(session) => respond(Era::Legacy, Box::pin(session.in_flight.track(id, reply)), notes, keep_alive).await,
    }
}

/// A POST's head, shared by everything that serves it: the headers, and the extensions
/// the application's middleware set (the authenticated caller among them).
struct Head {
    headers: Arc<HeaderMap>,
    extensions: Arc<axum::http::Extensions>,
}

impl Head {
    /// Who the request's state and session are bound to.
    fn principal(&self, server: &Engine) -> Option<String> {
        server.principal_from(Some(&self.headers), &self.extensions)
    }
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

/// Validates a modern request's envelope and MCP headers (its `Mcp-Param-*` headers
/// wait for dispatch, which knows whether the caller may reach the tool).
fn open_envelope(headers: &HeaderMap, request: &Request) -> Result<RequestMeta, Error> {
    let meta = RequestMeta::parse(request.params.as_ref())?;
    headers::check(headers, request, &meta)?;
    Ok(meta)
}

/// The client's address: the TCP peer (as `serve_*` or axum's `ConnectInfo` recorded it),
/// or a trusted proxy's forwarded one.
fn client_address(config: &HttpConfig, request: &HttpRequest) -> Option<IpAddr> {
    if config.trust_forwarded_for {
        let forwarded = request.headers().get_all("x-forwarded-for").iter().next_back();
        let last = forwarded.and_then(|value| value.to_str().ok()).and_then(|list| list.rsplit(',').next());
        if let Some(address) = last.and_then(|entry| entry.trim().parse().ok()) {
            return Some(address);
        }
    }
    let extensions = request.extensions();
    extensions
        .get::<serve::Peer>()
        .map(|peer| peer.0.ip())
        .or_else(|| extensions.get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip()))
}

fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response()
}

/// Reads the whole body, refusing one over `limit` bytes (413) or still arriving after
/// `deadline` (408: a slow sender would otherwise hold its connection and buffer).
async fn read_body(body: Body, limit: usize, deadline: Duration) -> Result<axum::body::Bytes, (u16, Error)> {
    let read = tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await.map_err(|_| {
        (
            408,
            Error::invalid_request(format!(
                "the request body did not arrive within {}",
                crate::deadline::describe(deadline)
            )),
        )
    })?;
    read.map_err(|e| {
        let too_large =
            std::error::Error::source(&e).is_some_and(<dyn std::error::Error>::is::<http_body_util::LengthLimitError>);
        if too_large {
            (413, Error::invalid_request(format!("request body exceeds the {limit}-byte limit")))
        } else {
            (400, Error::invalid_request(format!("could not read the request body: {e}")))
        }
    })
}

fn accepts_event_stream(headers: &HeaderMap) -> bool {
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

    #[test]
    fn only_loopback_addresses_check_hosts_and_every_address_checks_origins() {
        let loopback = HttpConfig::for_address("127.0.0.1:3000".parse().unwrap());
        assert_eq!(loopback.guard, Guard::default());
        for address in ["0.0.0.0:3000", "192.168.1.5:3000", "[::]:3000"] {
            let config = HttpConfig::for_address(address.parse().unwrap());
            assert_eq!(config.guard.hosts, HostPolicy::Any, "{address}");
            let mut foreign = HeaderMap::new();
            foreign.insert(header::HOST, "attacker.example".parse().unwrap());
            foreign.insert(header::ORIGIN, "http://attacker.example".parse().unwrap());
            assert_eq!(config.guard.check(&foreign), Err("Origin not allowed"), "{address}");
        }
    }
}
