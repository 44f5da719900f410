//! The door of the HTTP transport: [`Server::into_router`] and the `serve_http*` entry
//! points make an [`Endpoint`] (the engine, the config, the sessions, the handler slots
//! and the OAuth gate), and [`endpoint_handler`] takes every request it gets: `Host` and
//! `Origin` checked, the client's address noted, the bearer token checked, then a POST
//! goes to `post` and a GET or DELETE (2025-11-25 sessions only) to `legacy`.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request as HttpRequest, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::net::{TcpListener, ToSocketAddrs};

use super::post::post;
use super::serve::{self, App};
use super::sse::json_response;
use super::{legacy, slots, HttpConfig};
use crate::dispatch::Engine;
use crate::fair::ClientAddr;
use crate::transport::error_message;
use crate::{Error, Server};

pub(super) struct Endpoint {
    pub(super) server: Arc<Engine>,
    pub(super) config: HttpConfig,
    /// Sessions of legacy (2025-11-25) clients; modern traffic has none.
    pub(super) sessions: crate::legacy::Sessions,
    /// One per running handler, [`Limits::max_handlers`] in all, a share per client.
    pub(super) slots: slots::Slots,
    /// The resource server checking bearer tokens, when [`HttpConfig::auth`] set one.
    pub(super) gate: Option<Arc<crate::auth::Gate>>,
}

impl Server {
    /// An axum router serving this server at `/mcp`, with the default [`HttpConfig`].
    /// Merge it into an existing app with [`Router::merge`]; middleware the app layers
    /// around it can attach a [`Caller`](crate::Caller) and other extensions that
    /// handlers read.
    ///
    /// ```
    /// use mcp_mrtr::prelude::*;
    ///
    /// /// Says hello.
    /// #[tool]
    /// async fn hello() -> Result<String, ToolError> {
    ///     Ok("hello".into())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // MCP at `/mcp`, beside the app's own routes.
    /// let app = axum::Router::new()
    ///     .route("/health", axum::routing::get(|| async { "ok" }))
    ///     .merge(Server::new("app", "1.0.0").tool(hello).into_router());
    /// # let _ = app;
    /// # }
    /// ```
    ///
    /// Serve it with [`serve_router`](crate::serve_router) to get the listener's
    /// [`Limits`](crate::Limits) too.
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
    /// gracefully (see [`serve_router_with_shutdown`](crate::serve_router_with_shutdown))
    /// and hands back the tasks running here.
    ///
    /// On a loopback address only loopback host names are answered (DNS-rebinding
    /// protection); on any other address every host is, so put a proxy that checks
    /// hosts in front, or use [`Server::into_router_with`]. On every address, browser
    /// requests are answered only from loopback pages. A malformed
    /// `MCP_MRTR_STATE_KEYS` is an error before anything is served.
    ///
    /// ```no_run
    /// use mcp_mrtr::prelude::*;
    ///
    /// /// Says hello.
    /// #[tool]
    /// async fn hello() -> Result<String, ToolError> {
    ///     Ok("hello".into())
    /// }
    ///
    /// #[tokio::main]
    /// async fn main() -> std::io::Result<()> {
    ///     // Returns after SIGTERM or Ctrl-C, once requests in flight are drained.
    ///     Server::new("hello", "1.0.0").tool(hello).serve_http("127.0.0.1:3000").await
    /// }
    /// ```
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

    /// Serves Streamable HTTP on a bound listener as `config` says, its
    /// [`Limits`](crate::Limits) included, until its
    /// [`shutdown_signal`](HttpConfig::shutdown_signal) (by default SIGTERM or Ctrl-C).
    /// Then it drains (see [`serve_router_with_shutdown`](crate::serve_router_with_shutdown)),
    /// hands back the tasks running here (their handlers stop; a shared task store lets another
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
    /// No middleware rewrites these responses: a listen stream's events may be written
    /// to the socket directly.
    const HANDS_OFF_STREAMS: bool = true;

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

async fn endpoint_handler(State(endpoint): State<Arc<Endpoint>>, request: HttpRequest) -> Response {
    // Every header and body byte is read inside the boundary: a parser's panic costs this
    // request a 500 with a JSON-RPC error, never its connection without an answer.
    crate::transport::contain(answer(&endpoint, request))
        .await
        .unwrap_or_else(|| json_response(500, crate::transport::panicked(&[])))
}

async fn answer(endpoint: &Endpoint, mut request: HttpRequest) -> Response {
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
        Method::POST => post(endpoint, request).await,
        // Only legacy sessions have anything to GET or DELETE.
        Method::GET | Method::DELETE => legacy::session_method(endpoint, &request),
        _ => method_not_allowed(),
    };
    crate::auth::finish(gate, response)
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

pub(super) fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response()
}
