//! The accept loop: serves an [`App`] (an axum app, or the MCP endpoint alone) on a
//! listener with the connection bounds of [`ListenerLimits`] (header deadline, write stall,
//! connection cap), until a shutdown signal; then the drain (no new connections, requests
//! in flight get a bound to finish), and what the endpoints left for after it.
//!
//! Entry points: [`serve_router`] for apps, and `serve_app` for the [`Http`](super::Http)
//! transport. Each connection is one hyper HTTP/1.1
//! connection whose socket is wrapped in [`WriteDeadline`]; each request carries the
//! server's [`Draining`] in its extensions and is counted until its response has been
//! sent in full.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use axum::Router;
use futures_util::future::BoxFuture;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};

use super::connections::{Activity, Busy, Connections, Listening, Place};
use super::handoff::{self, Flushed, Handoff};
use super::ListenerLimits;
use crate::bounds::fair::ClientId;
use crate::bounds::shutdown::{Drain, Draining};
use crate::transport::serve::Starting;

/// What a connection past [`ListenerLimits::max_connections`] reads before it is closed.
const REFUSAL: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Serves an axum app (one that mounts [`Server::into_router`](crate::Server::into_router),
/// say) on `listener` when awaited, bounding connections as [`ListenerLimits`] says (the
/// defaults, or those given to [`limits`](ServeRouter::limits)): headers (and idle
/// keep-alive) within a deadline, responses read within a deadline of being written, a cap
/// on open connections. It serves until SIGTERM or Ctrl-C, as `server.serve(Http…)` does,
/// then shuts down gracefully (the steps are under
/// [`with_graceful_shutdown`](ServeRouter::with_graceful_shutdown), which stops on a signal
/// of your own instead) and hands back the tasks running on every MCP endpoint of the app
/// that answered a request through it, so another instance takes them over at once.
///
/// A connection past the cap is accepted, answered `503` with `Retry-After: 1` and closed
/// at once: the client learns to back off, rather than waiting in the kernel's backlog
/// for a turn that may never come.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use mcp_mrtr::http::{self, HttpConfig, ListenerLimits};
/// use mcp_mrtr::Server;
///
/// let mcp = Server::new("app", "1.0.0").into_router(HttpConfig::default())?;
/// let app = axum::Router::new().merge(mcp);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// // Until SIGTERM or Ctrl-C; then it drains and hands the server's tasks back.
/// http::serve_router(listener, app).limits(ListenerLimits::default().max_connections(2000)).await?;
/// # Ok(())
/// # }
/// ```
pub fn serve_router(listener: TcpListener, app: Router) -> ServeRouter {
    ServeRouter { starting: Starting::new((listener, app)), limits: ListenerLimits::default(), shutdown: None }
}

/// An app served on a listener, a future: see [`serve_router`]. Nothing starts until it
/// is first polled.
#[must_use = "a ServeRouter does nothing until it is awaited"]
pub struct ServeRouter {
    starting: Starting<(TcpListener, Router), BoxFuture<'static, io::Result<()>>>,
    limits: ListenerLimits,
    shutdown: Option<BoxFuture<'static, ()>>,
}

impl ServeRouter {
    /// The bounds on connections (see [`ListenerLimits`] for the defaults).
    pub fn limits(mut self, limits: ListenerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Serves until `signal` resolves, then shuts down gracefully and returns:
    ///
    /// 1. the listener closes, so new connections are refused (a load balancer moves them
    ///    to other instances);
    /// 2. idle keep-alive connections close, busy ones after their current response;
    ///    `subscriptions/listen` streams end at once with their result, and 2025-11-25 calls
    ///    waiting for their client's answer end with an error;
    /// 3. requests still running get [`ListenerLimits::shutdown_timeout`] to finish; past it
    ///    their connections are closed and their handlers dropped;
    /// 4. the tasks running on the app's MCP endpoints are handed back (see
    ///    [`Server::hand_back_tasks`](crate::Server::hand_back_tasks)).
    pub fn with_graceful_shutdown(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }
}

impl Future for ServeRouter {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let (shutdown, limits) = (&mut this.shutdown, this.limits);
        this.starting.poll(cx, |(listener, app)| {
            // SIGTERM or Ctrl-C unless told otherwise: installed here, at the first poll,
            // before the first connection is accepted.
            let shutdown = shutdown.take().unwrap_or_else(|| Box::pin(crate::bounds::shutdown::shutdown_signal()));
            Box::pin(serve_app(listener, app, limits, shutdown))
        })
    }
}

impl std::fmt::Debug for ServeRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeRouter").field("limits", &self.limits).finish_non_exhaustive()
    }
}

/// What each connection serves.
pub(super) trait App: Clone + Send + Sync + 'static {
    /// Whether a listen stream may leave hyper once acknowledged (see `handoff`): only
    /// when nothing between the endpoint and hyper rewrites the body.
    const HANDS_OFF_STREAMS: bool = false;

    /// The response to one request (by value: the future must own what it uses).
    fn respond(self, request: hyper::Request<Incoming>) -> impl Future<Output = Response> + Send + 'static;
}

impl App for Router {
    fn respond(self, request: hyper::Request<Incoming>) -> impl Future<Output = Response> + Send + 'static {
        let response = TowerToHyperService::new(self).call(request);
        async move { response.await.unwrap_or_else(|never| match never {}) }
    }
}

/// [`serve_router`] with a shutdown signal, for any [`App`].
pub(super) async fn serve_app(
    listener: TcpListener,
    app: impl App,
    limits: ListenerLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let drain = Drain::new();
    // Shared: each connection's task holds a pointer, not a copy of the limits.
    let serving = Arc::new(Serving { app, limits, draining: drain.watch(), requests: Requests::default() });
    let mut connections = JoinSet::new();
    accept_until(listener, shutdown, &serving, &mut connections).await;
    drain.start();
    finish(connections, &serving.requests, limits.shutdown_timeout).await;
    drain.run_afterwards().await;
    Ok(())
}

/// What a request knows of its connection, in its extensions: one entry, not one per
/// fact (each entry is an allocation of every request).
#[derive(Clone)]
pub(super) struct Connection {
    /// The TCP peer.
    pub(super) peer: SocketAddr,
    /// What the connection is doing: the endpoint marks a listen stream on it.
    pub(super) activity: Arc<Activity>,
    /// HTTP/1.1 only: where a listen stream leaves hyper once acknowledged. Weak: the
    /// stream handed off holds its request's extensions.
    pub(super) handoff: Option<Weak<Handoff>>,
}

impl Connection {
    /// For a listen stream answering a request with these `extensions`: the guard that
    /// marks its connection as listening, and the handoff it leaves hyper through. Both
    /// `None` for a connection not served by `serve_*` (one axum serves, say).
    pub(super) fn listening(extensions: &axum::http::Extensions) -> (Option<Listening>, Option<Arc<Handoff>>) {
        match extensions.get::<Self>() {
            Some(connection) => {
                (Some(connection.activity.listening()), connection.handoff.as_ref().and_then(Weak::upgrade))
            }
            None => (None, None),
        }
    }
}

/// What every connection is served with.
struct Serving<A> {
    app: A,
    limits: ListenerLimits,
    draining: Draining,
    requests: Requests,
}

/// Accepts connections until `shutdown` resolves, then closes the listener.
async fn accept_until<A: App>(
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
    serving: &Arc<Serving<A>>,
    connections: &mut JoinSet<()>,
) {
    let open = Connections::new(serving.limits.connection_cap());
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => return,
            // Reaps closed connections, so a long-running server does not collect them.
            Some(_) = connections.join_next() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    pause_after(&error).await;
                    continue;
                }
            },
        };
        match open.admit(ClientId::address(peer.ip())) {
            Some(place) => {
                connections.spawn(serve_connection(stream, peer, serving.clone(), place));
            }
            None => refuse(&stream),
        }
    }
}

/// Waits up to `bound` for the connections to close, then closes the rest.
async fn finish(mut connections: JoinSet<()>, requests: &Requests, bound: Duration) {
    let started = Instant::now();
    let in_flight = requests.count();
    tracing::info!(
        requests = in_flight,
        connections = connections.len(),
        timeout_ms = bound.as_millis(),
        "shutting down: no new connections; waiting for requests in flight"
    );
    let closed = tokio::time::timeout(bound, async { while connections.join_next().await.is_some() {} }).await;
    let cut = if closed.is_ok() { 0 } else { requests.count() };
    connections.shutdown().await;
    tracing::info!(
        drained = in_flight.saturating_sub(cut),
        cut,
        elapsed_ms = started.elapsed().as_millis(),
        "HTTP connections closed"
    );
}

/// Serves one connection until it closes, or until it finishes its current response
/// once the drain starts, or until it must make room for another (it is closed at once:
/// only connections doing no work, or the heaviest client's listen streams, are asked
/// to); its place is freed when it closes.
async fn serve_connection<A: App>(stream: TcpStream, peer: SocketAddr, serving: Arc<Serving<A>>, place: Place) {
    let _ = stream.set_nodelay(true);
    let handoff = Arc::new(Handoff::default());
    let io = TokioIo::new(Flushed::new(WriteDeadline::new(stream, serving.limits.write_timeout), handoff.clone()));
    let offered = A::HANDS_OFF_STREAMS.then_some(&handoff);
    // Boxed, so that a stream handed off keeps none of it: the task is sized for the
    // larger of its two lives, and hyper's connection is the larger by far.
    let mut connection = Box::new(
        http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(serving.limits.header_timeout)
            .serve_connection(io, serving.service(peer, &place.activity, offered)),
    );
    let served = tokio::select! {
        served = &mut *connection => served,
        () = place.closed_for_room() => return,
        () = serving.draining.started() => {
            Pin::new(&mut *connection).graceful_shutdown();
            // A stream given away while hyper winds down is written to its end here.
            tokio::select! {
                served = &mut *connection => served,
                () = handoff.ready() => return handed_off(socket_of(connection), &handoff, &place).await,
            }
        }
        () = handoff.ready() => return handed_off(socket_of(connection), &handoff, &place).await,
    };
    if let Err(error) = served {
        tracing::debug!(%error, "connection closed");
    }
}

/// Writes the stream handed off (hyper flushed all it owed: the socket is the stream's
/// alone) until it ends, or its connection must make room for another.
async fn handed_off(socket: WriteDeadline<TcpStream>, handoff: &Handoff, place: &Place) {
    let Some(events) = handoff.take() else { return };
    tokio::select! {
        () = handoff::write(socket, events) => {}
        () = place.closed_for_room() => {}
    }
}

/// The socket under a hyper connection. The box is taken by value, so that it is freed
/// here, not when the caller's scope ends (hours later, for a listen stream).
#[allow(clippy::boxed_local, reason = "taking the box is the point: it is freed on return")]
fn socket_of<S>(
    connection: Box<http1::Connection<TokioIo<Flushed<WriteDeadline<TcpStream>>>, S>>,
) -> WriteDeadline<TcpStream>
where
    S: hyper::service::HttpService<Incoming, ResBody = Body, Error = Infallible>,
{
    connection.into_parts().io.into_inner().into_inner()
}

impl<A: App> Serving<A> {
    /// The app, each request of which carries the drain and is counted until its
    /// response (an SSE stream, say) has been sent in full or dropped.
    ///
    /// Each request also carries its connection's peer and [`Activity`], and keeps the
    /// connection busy (not to be closed for room) until its response is sent.
    /// With a `handoff`, HTTP/1.1 requests carry it too, for a listen stream to leave
    /// hyper once acknowledged.
    fn service(
        &self,
        peer: SocketAddr,
        activity: &Arc<Activity>,
        handoff: Option<&Arc<Handoff>>,
    ) -> impl hyper::service::Service<hyper::Request<Incoming>, Response = Response, Error = Infallible, Future: Send>
    {
        let app = self.app.clone();
        // The connection's own: what each of its requests clones is counted on this
        // connection alone (see `Draining::own`).
        let (draining, requests, activity) = (self.draining.own(), Arc::new(self.requests.clone()), activity.clone());
        let handoff = handoff.cloned();
        hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let busy = activity.begin();
            // Only chunked framing is written by hand.
            let handoff = handoff.clone().filter(|_| request.version() == hyper::Version::HTTP_11);
            let extensions = request.extensions_mut();
            extensions.insert(draining.clone());
            extensions.insert(Connection {
                peer,
                activity: activity.clone(),
                handoff: handoff.as_ref().map(Arc::downgrade),
            });
            let (counted, app) = (requests.enter(), app.clone());
            // Boxed: hyper keeps a slot the size of this future for the whole life of the
            // connection (about 7 KiB, the largest path through dispatch), idle or holding
            // a listen stream; boxed, the slot is a pointer and the future lives only until
            // the response head is out. The app's future is made inside the box: made
            // outside and awaited in it, it was held twice over, 14 KiB copied per request.
            let response: BoxFuture<'static, Result<Response, Infallible>> = Box::pin(async move {
                let response = app.respond(request).await;
                Ok(response.map(|body| Body::new(Counted { body, guards: Some((counted, busy)), handoff })))
            });
            response
        })
    }
}

/// Requests whose response has not been sent in full yet.
#[derive(Clone, Default)]
struct Requests(Arc<AtomicUsize>);

impl Requests {
    /// `self` is a connection's copy: the guard holds that, so its request touches the
    /// shared count only to add and take away one.
    fn enter(self: &Arc<Self>) -> Entered {
        self.0.fetch_add(1, Ordering::Relaxed);
        Entered(self.clone())
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One request counted in [`Requests`], until dropped.
struct Entered(Arc<Requests>);

impl Drop for Entered {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body that keeps its request counted, and its connection busy, until hyper
/// drops it, or until its stream is handed off (the guards go with the stream).
struct Counted {
    body: Body,
    guards: Option<(Entered, Busy)>,
    handoff: Option<Arc<Handoff>>,
}

impl HttpBody for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if frame.is_pending() && self.handoff.as_ref().is_some_and(|handoff| handoff.is_given()) {
            if let (Some(guards), Some(handoff)) = (self.guards.take(), &self.handoff) {
                handoff.keep(Box::new(guards));
            }
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Best effort, never waiting: a full socket buffer just means no 503 text.
fn refuse(stream: &TcpStream) {
    tracing::debug!("refusing a connection: max_connections reached");
    let _ = stream.try_write(REFUSAL);
}

/// Out of descriptors (or memory), accepting again at once would spin: wait a little
/// for connections to close. Errors of one connection need no pause.
async fn pause_after(error: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if !matches!(error.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        tracing::warn!(%error, "accept failed; pausing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A socket whose writes fail once they have been blocked (the client not reading) for
/// longer than the limit, so hyper closes the connection and drops the response.
struct WriteDeadline<IO> {
    io: IO,
    limit: Duration,
    /// Running while the socket refuses writes.
    blocked: Option<Pin<Box<Sleep>>>,
}

impl<IO> WriteDeadline<IO> {
    fn new(io: IO, limit: Duration) -> Self {
        Self { io, limit, blocked: None }
    }

    fn watch<T>(&mut self, cx: &mut Context<'_>, write: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if write.is_ready() {
            self.blocked = None;
            return write;
        }
        let limit = self.limit;
        let blocked = self.blocked.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match blocked.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading"))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for WriteDeadline<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let write = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, write)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let write = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, write)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flush = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, flush)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_write_blocked_past_the_limit_fails() {
        // A pipe of 8 bytes nobody reads: the ninth byte blocks.
        let (client, _reader) = tokio::io::duplex(8);
        let mut socket = WriteDeadline::new(client, Duration::from_secs(5));
        socket.write_all(b"12345678").await.expect("fits in the buffer");
        let error = socket.write_all(b"9").await.expect_err("blocked past the limit");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }
}
