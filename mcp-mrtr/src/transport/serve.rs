//! The one way to serve: [`Server::serve`] takes a [`Transport`] (stdio, any byte stream,
//! Streamable HTTP) and returns a [`Serve`]: a future, which graceful shutdown modifies
//! before it starts.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::bounds::shutdown::Signal;
use crate::routes::catalog::CatalogHandle;
use crate::server::Server;
use crate::transport::serve_error::ServeError;

/// Where a server is served; pass one to [`Server::serve`]:
///
/// - [`Stdio`](crate::stdio::Stdio): the process's stdin and stdout, for a host that
///   starts the server as a subprocess;
/// - [`Pipe`](crate::stdio::Pipe): the same protocol on any byte stream pair;
/// - [`Http`](crate::http::Http): Streamable HTTP on a socket;
/// - [`Lambda`](crate::lambda::Lambda) (the `lambda` feature): an AWS Lambda function;
/// - [`Worker`](crate::tasks::Worker): no requests, only the tasks of a shared store.
///
/// The trait is sealed: the transports are the crate's. To serve MCP inside an axum app,
/// mount [`Server::into_router`] instead.
pub trait Transport: sealed::Sealed + Send + Unpin + 'static {}

impl<T: sealed::Sealed + Send + Unpin + 'static> Transport for T {}

pub(crate) mod sealed {
    use super::{Future, ServeError, Server, Signal};

    /// Only the crate's transports are [`Transport`](super::Transport)s.
    pub trait Sealed {
        /// The serving future. `Send` for every transport but a Lambda function's: AWS's
        /// runtime is not, and serving it where `main` awaits it spares a thread (and, on
        /// a current-thread runtime, every thread) at each cold start.
        type Serving: Future<Output = Result<(), ServeError>> + Unpin + 'static;

        /// What serving runs, until the transport ends or `shutdown` resolves (`None`:
        /// the transport's own default).
        fn serve(self, server: Server, shutdown: Option<Signal>) -> Self::Serving;
    }
}

/// A server served on a transport: a future that serves until the transport ends or the
/// shutdown signal comes, then drains, hands back the tasks running here, and returns.
/// Made by [`Server::serve`]; nothing starts until it is first polled (awaited, or given
/// to `tokio::spawn`). It is `Send` for every transport but
/// [`Lambda`](crate::lambda::Lambda), whose serving runs on the task that awaits it.
///
/// Misconfiguration (a registration the builder refused, such as a name taken twice or a
/// form type that cannot be a form; a handler taking a `State<T>` the server was not
/// given; malformed `MCP_MRTR_STATE_KEYS`; an auth setup without a verifier) is the awaited
/// [`ServeError::Misconfigured`], with every problem, and a socket that cannot be bound
/// [`ServeError::Io`], before anything is served: the builder itself never panics on them.
#[must_use = "a Serve does nothing until it is awaited"]
pub struct Serve<T: Transport> {
    starting: Starting<(Server, T), T::Serving>,
    shutdown: Option<Signal>,
    handle: CatalogHandle,
}

impl<T: Transport> Serve<T> {
    pub(crate) fn new(server: Server, transport: T) -> Self {
        let handle = server.catalog();
        Self { starting: Starting::new((server, transport)), shutdown: None, handle }
    }

    /// The handle to the server being served: change its tools, prompts and resources
    /// while it runs, from any task (see [`CatalogHandle`]).
    ///
    /// ```no_run
    /// use mcp_mrtr::{http::Http, protocol::Tool, Server, ToolError};
    ///
    /// # async fn run() -> Result<(), mcp_mrtr::serve::ServeError> {
    /// let serving = Server::new("app", "1.0.0").serve(Http::bind("127.0.0.1:3000"));
    /// let handle = serving.catalog();
    /// let running = tokio::spawn(serving);
    /// let late = Tool::new("late").description("Registered once serving started");
    /// handle
    ///     .tools().add(late.handler(|_ctx, _args: serde_json::Map<String, serde_json::Value>| async {
    ///         Ok::<_, ToolError>("here")
    ///     }))
    ///     .expect("no tool of that name yet");
    /// running.await.expect("serving did not panic")
    /// # }
    /// ```
    pub fn catalog(&self) -> CatalogHandle {
        self.handle.clone()
    }

    /// Shuts down gracefully once `signal` resolves, instead of on the transport's
    /// default: SIGTERM or Ctrl-C ([`shutdown_signal`](crate::serve::shutdown_signal)) for
    /// HTTP and the process's stdio, the end of the stream for any other byte stream
    /// (which still ends serving whenever it comes).
    ///
    /// ```no_run
    /// use mcp_mrtr::{http::Http, Server};
    ///
    /// # async fn run() -> Result<(), mcp_mrtr::serve::ServeError> {
    /// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    /// # let _keep = stop;
    /// Server::new("app", "1.0.0")
    ///     .serve(Http::bind("127.0.0.1:3000"))
    ///     .with_graceful_shutdown(async move {
    ///         let _ = stopped.await;
    ///     })
    ///     .await
    /// # }
    /// ```
    pub fn with_graceful_shutdown(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Signal::new(signal));
        self
    }
}

impl<T: Transport> Future for Serve<T> {
    type Output = Result<(), ServeError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ServeError>> {
        let this = self.get_mut();
        let shutdown = &mut this.shutdown;
        this.starting.poll(cx, |(server, transport)| sealed::Sealed::serve(transport, server, shutdown.take()))
    }
}

impl<T: Transport> fmt::Debug for Serve<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serve").field("started", &self.starting.started()).finish_non_exhaustive()
    }
}

/// What a serving future holds: what serving takes until the first poll, then the
/// serving itself. Nothing starts before that poll, so modifiers such as graceful
/// shutdown can still change what starts.
pub(crate) struct Starting<R, F> {
    ready: Option<R>,
    running: Option<F>,
}

impl<R, E: From<io::Error>, F: Future<Output = Result<(), E>> + Unpin> Starting<R, F> {
    pub(crate) fn new(ready: R) -> Self {
        Self { ready: Some(ready), running: None }
    }

    pub(crate) fn started(&self) -> bool {
        self.ready.is_none()
    }

    /// Polls the serving, which `start` makes from what it takes at the first poll.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, start: impl FnOnce(R) -> F) -> Poll<Result<(), E>> {
        if let Some(ready) = self.ready.take() {
            self.running = Some(start(ready));
        }
        match &mut self.running {
            Some(running) => Pin::new(running).poll(cx),
            // Unreachable: `ready` is only taken to start `running`.
            None => Poll::Ready(Err(io::Error::other("served already").into())),
        }
    }
}

impl Server {
    /// Serves this server on `transport` when awaited: stdio for a desktop or CLI host,
    /// Streamable HTTP for everything else.
    ///
    /// ```no_run
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::{http::Http, stdio::Stdio};
    ///
    /// /// Says hello.
    /// #[tool]
    /// async fn hello() -> Result<String, ToolError> {
    ///     Ok("hello".into())
    /// }
    ///
    /// # async fn run(over_http: bool) -> Result<(), ServeError> {
    /// let server = Server::new("hello", "1.0.0").tool(hello);
    /// if over_http {
    ///     // Until SIGTERM or Ctrl-C, then requests in flight are drained.
    ///     server.serve(Http::bind("127.0.0.1:3000")).await
    /// } else {
    ///     // Until the host closes stdin (or SIGTERM, Ctrl-C).
    ///     server.serve(Stdio::new()).await
    /// }
    /// # }
    /// ```
    ///
    /// Add [`with_graceful_shutdown`](Serve::with_graceful_shutdown) to stop on a signal
    /// of the application's own.
    pub fn serve<T: Transport>(self, transport: T) -> Serve<T> {
        Serve::new(self, transport)
    }
}
