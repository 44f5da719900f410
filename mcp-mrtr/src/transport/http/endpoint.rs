//! The door of the HTTP transport: [`Server::into_router`] and the [`Http`] transport
//! make an [`Endpoint`] (the engine, the config, the sessions, the handler slots
//! and the OAuth gate), and [`endpoint_handler`] takes every request it gets: `Host` and
//! `Origin` checked, the client's address noted, the bearer token checked, then a POST
//! goes to `post` and a GET or DELETE (2025-11-25 sessions only) to `legacy`.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request as HttpRequest, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::future::BoxFuture;
use tokio::net::TcpListener;

use super::post::post;
use super::serve::{self, App};
use super::shared::{method_not_allowed, Endpoint};
use super::sse::json_response;
use super::{legacy, slots, HttpConfig, ListenerLimits};
use crate::base::error::Error;
use crate::bounds::fair::ClientAddr;
use crate::bounds::shutdown::{Draining, LeftWith, Signal};
use crate::server::Server;
use crate::transport::error_message;
use crate::transport::serve::sealed::Sealed;
use crate::transport::serve_error::ServeError;

/// How long one run of a handler may take over HTTP unless
/// [`Server::handler_timeout`](crate::Server::handler_timeout) says otherwise: the request
/// timeout common clients use.
const HTTP_HANDLER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The same in a function (AWS Lambda): below API Gateway's integration timeout (29 s for a
/// REST API, 30 s for an HTTP API), so a long call fails with an answer the client reads,
/// not a gateway's 504 while the function goes on.
const FUNCTION_HANDLER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(25);

impl Server {
    /// An axum router serving this server as `config` says (at `/mcp` by default), to
    /// merge into an app of your own with [`Router::merge`]. Middleware the app layers
    /// around it can attach a [`Caller`](crate::Caller) and other extensions that handlers
    /// read. A misconfigured server is the `Err`, before anything is served: the builder
    /// refused a registration (a name taken, a form type that cannot be a form), a handler
    /// takes `State<T>` and the server was given no `T` (see [`Server::with_state`]),
    /// `MCP_MRTR_STATE_KEYS` is malformed, or the [`HttpConfig::auth`] resource server has
    /// no verifier.
    ///
    /// ```
    /// use mcp_mrtr::http::HttpConfig;
    /// use mcp_mrtr::prelude::*;
    ///
    /// /// Says hello.
    /// #[tool]
    /// async fn hello() -> Result<String, ToolError> {
    ///     Ok("hello".into())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ServeError> {
    /// // MCP at `/mcp`, beside the app's own routes.
    /// let mcp = Server::new("app", "1.0.0").tool(hello).into_router(HttpConfig::default())?;
    /// let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" })).merge(mcp);
    /// # let _ = app;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Serve the app with [`serve_router`](crate::http::serve_router) for the listener's
    /// [`ListenerLimits`](crate::http::ListenerLimits) and a graceful shutdown that hands
    /// back the tasks running here. Served another way (`axum::serve`), keep a clone of the
    /// server to call [`Server::hand_back_tasks`] on once serving ends.
    pub fn into_router(self, config: HttpConfig) -> Result<Router, ServeError> {
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
    fn into_endpoint(self, config: HttpConfig) -> Result<Arc<Endpoint>, ServeError> {
        let engine = self.living(config.lifetime).into_engine();
        engine.check_ready(crate::intake::request_state::Reach::Instances).map_err(ServeError::Misconfigured)?;
        if !config.lifetime.outlives_requests() {
            crate::intake::request_state::warn_if_guard_per_process(&engine.state, "a function's containers");
        }
        let path = config.path.clone();
        let slots = slots::Slots::new(config.limits.max_handlers, config.limits.handler_share());
        let sessions = crate::transport::legacy::Sessions::new(config.limits.sessions);
        if let Some(auth) = config.auth.as_ref().filter(|auth| !auth.resource().trim_end_matches('/').ends_with(&path))
        {
            // Clients derive the metadata's URI from the resource; a mismatch usually
            // means a proxy rewrites paths, or a typo that breaks discovery.
            tracing::warn!(resource = auth.resource(), %path, "the resource URI does not end with the MCP path");
        }
        let gate = config.auth.as_ref().map(crate::ext::auth::Gate::new).transpose();
        let gate = gate.map_err(ServeError::misconfigured)?.map(Arc::new);
        // Every HTTP door comes through here: from now on this instance takes over the
        // tasks of instances that died, before any request reaches it.
        engine.start();
        let handed_back = LeftWith::default();
        // A stuck handler holds a slot many clients share: bounded unless the server says not.
        let unset = if config.lifetime.outlives_requests() { HTTP_HANDLER_TIMEOUT } else { FUNCTION_HANDLER_TIMEOUT };
        let handler_timeout = engine.handler_timeout.resolve(Some(unset));
        Ok(Arc::new(Endpoint { server: Arc::new(engine), config, sessions, slots, gate, handed_back, handler_timeout }))
    }
}

/// Streamable HTTP on a socket: serve with `server.serve(Http::bind("127.0.0.1:3000"))`.
///
/// Serving runs until SIGTERM or Ctrl-C (or the signal given to
/// [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown)), then
/// drains as [`serve_router`](crate::http::serve_router) does, hands back the tasks
/// running here (their handlers stop; a shared task store lets another instance take them
/// over) and returns.
///
/// Without a [`config`](Http::config), a loopback address answers loopback host names only
/// (DNS-rebinding protection), and any other address answers every host (put a proxy that
/// checks hosts in front, or set [`HttpConfig::allowed_hosts`]); on every address,
/// browser requests are answered only from loopback pages.
///
/// ```no_run
/// use mcp_mrtr::http::{Http, HttpConfig, HttpLimits, ListenerLimits};
/// use mcp_mrtr::prelude::*;
///
/// /// Says hello.
/// #[tool]
/// async fn hello() -> Result<String, ToolError> {
///     Ok("hello".into())
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), ServeError> {
///     let config = HttpConfig::default().limits(HttpLimits::default().max_handlers(64));
///     let http = Http::bind("127.0.0.1:3000").config(config).limits(ListenerLimits::default().max_connections(2000));
///     Server::new("hello", "1.0.0").tool(hello).serve(http).await
/// }
/// ```
#[derive(Debug)]
pub struct Http {
    socket: Socket,
    config: Option<HttpConfig>,
    limits: ListenerLimits,
}

#[derive(Debug)]
enum Socket {
    /// The addresses to bind, or why they could not be resolved (reported when served).
    Bind(io::Result<Vec<SocketAddr>>),
    Bound(TcpListener),
}

impl Http {
    /// Binds `addr` when served (`"127.0.0.1:3000"`, a [`SocketAddr`]; port 0 lets the OS
    /// pick one). A name such as `"localhost:3000"` is resolved here.
    pub fn bind(addr: impl std::net::ToSocketAddrs) -> Self {
        Self::on(Socket::Bind(addr.to_socket_addrs().map(Iterator::collect)))
    }

    /// Serves on a listener bound already (to learn its port before serving, say).
    pub fn listener(listener: TcpListener) -> Self {
        Self::on(Socket::Bound(listener))
    }

    /// How the endpoint is mounted and guarded, and its [`HttpLimits`](crate::http::HttpLimits)
    /// (see [`HttpConfig`]; the default depends on the address, as said above).
    pub fn config(mut self, config: HttpConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The bounds on connections (see [`ListenerLimits`] for the defaults).
    pub fn limits(mut self, limits: ListenerLimits) -> Self {
        self.limits = limits;
        self
    }

    fn on(socket: Socket) -> Self {
        Self { socket, config: None, limits: ListenerLimits::default() }
    }

    async fn bound(socket: Socket) -> io::Result<TcpListener> {
        match socket {
            Socket::Bound(listener) => Ok(listener),
            Socket::Bind(addrs) => TcpListener::bind(&addrs?[..]).await,
        }
    }
}

impl Sealed for Http {
    type Serving = BoxFuture<'static, Result<(), ServeError>>;

    fn serve(self, server: Server, shutdown: Option<Signal>) -> Self::Serving {
        // Installed before the first connection is accepted, so a SIGTERM sent to a server
        // that answers is always a graceful shutdown.
        let shutdown = shutdown.unwrap_or_else(|| Signal::new(crate::bounds::shutdown::shutdown_signal()));
        Box::pin(async move {
            let listener = Self::bound(self.socket).await?;
            let local: SocketAddr = listener.local_addr()?;
            // No config and the default config are one: the bound address decides the hosts.
            let config = self.config.unwrap_or_default().for_address(local);
            let path = config.path.clone();
            // Served without a router: two paths need no routing table, nor its per-request layers.
            let endpoint = server.into_endpoint(config)?;
            let engine = endpoint.server.clone();
            if !local.ip().is_loopback() {
                crate::intake::request_state::warn_if_guard_per_process(&engine.state, "instances behind a balancer");
            }
            tracing::info!(%local, %path, "serving MCP over HTTP");
            serve::serve_app(listener, endpoint, self.limits, shutdown.received()).await?;
            // Also when no request came (tasks taken over from instances that died).
            engine.hand_back_tasks().await;
            tracing::info!(%local, "shut down: tasks running here handed back");
            Ok(())
        })
    }
}

/// [`Http`] routes as the router of [`Server::into_router`] does: the MCP
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
    let declared = crate::ext::auth::declared_scopes(&endpoint.server);
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
    if let Err(reason) = endpoint.config.cross_site.check(request.headers()) {
        return json_response(403, error_message(None, &Error::invalid_request(format!("Forbidden: {reason}"))));
    }
    if let Some(address) = client_address(&endpoint.config, &request) {
        request.extensions_mut().insert(ClientAddr(address));
    }
    if let Some(draining) = request.extensions().get::<Draining>() {
        // Served by `serve_router`: the tasks running here are handed back after its drain.
        let engine = &endpoint.server;
        draining.after_drain(&endpoint.handed_back, || {
            let engine = engine.clone();
            Box::pin(async move { engine.hand_back_tasks().await })
        });
    }
    let gate = endpoint.gate.as_deref();
    if let Some(gate) = gate {
        if let Err(refusal) = gate.admit(&mut request).await {
            return refusal;
        }
    }
    let response = match *request.method() {
        Method::POST => post(endpoint, request).await,
        // Only legacy sessions have anything to GET or DELETE: where nothing outlives a
        // request, there are none.
        Method::GET | Method::DELETE if !endpoint.config.lifetime.outlives_requests() => method_not_allowed(),
        Method::GET | Method::DELETE => legacy::session_method(endpoint, request),
        _ => method_not_allowed(),
    };
    crate::ext::auth::finish(gate, response)
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
        .get::<serve::Connection>()
        .map(|connection| connection.peer.ip())
        .or_else(|| extensions.get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bounds::lifetime::Lifetime;

    fn timeout(server: Server, lifetime: Lifetime) -> Option<Duration> {
        server.into_endpoint(HttpConfig::default().living(lifetime)).expect("an endpoint").handler_timeout
    }

    #[test]
    fn a_function_s_handlers_stop_before_api_gateway_gives_up() {
        let server = || {
            Server::new("t", "1").request_state(crate::intake::request_state::StateConfig::new(
                crate::intake::request_state::KeyRing::new(crate::intake::request_state::StateKey::random()),
            ))
        };
        assert_eq!(timeout(server(), Lifetime::Process), Some(HTTP_HANDLER_TIMEOUT));
        assert_eq!(timeout(server(), Lifetime::Request), Some(FUNCTION_HANDLER_TIMEOUT));
        assert!(FUNCTION_HANDLER_TIMEOUT < Duration::from_secs(29), "API Gateway's REST integration timeout");
        let chosen = Some(Duration::from_secs(90));
        assert_eq!(timeout(server().handler_timeout(chosen), Lifetime::Request), chosen, "the server's own setting");
    }
}
