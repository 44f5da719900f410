//! stdio: one JSON-RPC message per line on stdin, answers and notifications one per line
//! on stdout. No headers, so the envelope is all there is; cancellation is
//! `notifications/cancelled`. A client that starts with `initialize` gets a legacy
//! (2025-11-25) session, and the bridge's requests go out on stdout too.
//!
//! Requests for a handler run at most `max_requests` at once, each holding a slot; a
//! line is read before it takes one, so what needs no handler (the client's answers to
//! the bridge's questions, cancellations, `ping`) is served even when every slot is
//! taken, and a request read then waits for a slot while the reading goes on up to the
//! next request (see `StdioSession::read_until`).
//!
//! Serving ends when stdin closes or the shutdown signal comes: requests still running
//! get a bound to finish (listen streams end with their result at once), the rest are
//! cut, and the tasks running here are handed back.

mod lines;
#[cfg(unix)]
mod piped;
mod session;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, BufReader};

use self::lines::Input;
use self::session::StdioSession;
use super::serve::sealed::Sealed;
use super::serve_error::ServeError;
use crate::bounds::shutdown::{self, Signal};
use crate::intake::envelope::size::MAX_JSON_VALUES;
use crate::server::Server;

/// The process's stdin and stdout, one JSON-RPC message per line: how desktop and CLI
/// hosts (Claude Code, Claude Desktop, editors) launch a server. Serve with
/// `server.serve(Stdio::new())`; [`Pipe::new`] serves any other byte stream the same way.
///
/// Serving ends when stdin closes or on SIGTERM or Ctrl-C (or the signal given to
/// [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown)). Then
/// requests still running get 10 s to finish (`subscriptions/listen` streams end at once
/// with their result), the rest are cut, and the tasks running here are handed back.
/// At most [`max_requests`](Self::max_requests) requests run a handler at once (64 by
/// default). At the bound the next request waits for one to finish and stdin is read on
/// only up to the request after it, so a client that sends faster than it reads the
/// answers is held back by its own pipe, and the server's memory stays bounded; the
/// client's answers to the server's questions, `notifications/cancelled` and `ping` never
/// wait for a slot.
/// Unless [`Server::handler_timeout`](crate::Server::handler_timeout) says otherwise, one
/// run of a handler may take 5 minutes ([`STDIO_HANDLER_TIMEOUT`]).
/// Logs must go to stderr: stdout is the protocol's. Stdin and stdout each have a thread
/// of their own, and one client is served best on Tokio's current-thread runtime (the
/// guide's serving chapter, "One thread for stdio", has the figures).
///
/// ```no_run
/// use mcp_mrtr::{serve::ServeError, stdio::Stdio, Server};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), ServeError> {
///     Server::new("hello", "1.0.0").serve(Stdio::new()).await
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Stdio {
    settings: Settings,
}

/// What bounds one stdio connection.
#[derive(Clone, Copy, Debug)]
struct Settings {
    max_requests: usize,
    max_json_values: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self { max_requests: MAX_REQUESTS, max_json_values: MAX_JSON_VALUES }
    }
}

/// The default of [`Stdio::max_requests`]: an HTTP client's share of the handler slots.
pub const MAX_REQUESTS: usize = 64;

/// How long one run of a handler may take over stdio unless
/// [`Server::handler_timeout`](crate::Server::handler_timeout) says otherwise: longer than
/// any host waits on a tool call it made (a longer job belongs in a task), short enough
/// that a stuck handler does not hold its place and memory for good.
pub const STDIO_HANDLER_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for Stdio {
    fn default() -> Self {
        Self::new()
    }
}

impl Stdio {
    /// The process's stdin and stdout.
    pub fn new() -> Self {
        Self { settings: Settings::default() }
    }

    /// How many requests may run a handler at once (default [`MAX_REQUESTS`], at least 1).
    /// At the bound, one more request waits for a slot while the lines after it are still
    /// read (answers to the server's own questions, cancellations, `ping` and the other
    /// requests answered without a handler); a second request read meanwhile stops the
    /// reading until the first runs. A host waiting on the server's questions in every
    /// slot is still heard, unless it sends two more calls before it answers.
    pub fn max_requests(mut self, max: usize) -> Self {
        self.settings.max_requests = max.max(1);
        self
    }

    /// How many JSON values one line may hold (default [`MAX_JSON_VALUES`]): a value
    /// takes 72 bytes once parsed however few it took on the line, so a line of `[0,0,…]`
    /// would parse to 36 times its size. A line past it is answered `-32600`, unparsed.
    pub fn max_json_values(mut self, max: usize) -> Self {
        self.settings.max_json_values = max;
        self
    }
}

/// A byte stream pair served as stdio: [`Pipe::new`].
pub struct Pipe<R, W> {
    reader: R,
    writer: W,
    settings: Settings,
}

impl<R, W> Pipe<R, W> {
    /// Newline-delimited JSON-RPC on any byte stream pair (a pipe, a socket, an in-memory
    /// duplex in a test), served as [`Stdio`] is, until the reader ends. Nothing stops it on a
    /// signal unless [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown)
    /// says so.
    ///
    /// ```
    /// use mcp_mrtr::{stdio::Pipe, Server};
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcp_mrtr::serve::ServeError> {
    /// let (client, server_side) = tokio::io::duplex(64 * 1024);
    /// let (reader, writer) = tokio::io::split(server_side);
    /// let server = Server::new("hello", "1.0.0");
    /// let serving = tokio::spawn(async move { server.serve(Pipe::new(reader, writer)).await });
    ///
    /// let (client_reader, mut client_writer) = tokio::io::split(client);
    /// client_writer.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await?;
    /// let mut answer = String::new();
    /// BufReader::new(client_reader).read_line(&mut answer).await?;
    /// assert!(answer.contains("\"id\":1"));
    /// drop(client_writer); // the server's reader ends: serving ends
    /// serving.await.expect("no panic")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self { reader, writer, settings: Settings::default() }
    }

    /// How many requests may run at once: see [`Stdio::max_requests`].
    pub fn max_requests(mut self, max: usize) -> Self {
        self.settings.max_requests = max.max(1);
        self
    }

    /// How many JSON values one line may hold: see [`Stdio::max_json_values`].
    pub fn max_json_values(mut self, max: usize) -> Self {
        self.settings.max_json_values = max;
        self
    }
}

impl<R, W> std::fmt::Debug for Pipe<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pipe(..)")
    }
}

/// What the process's stdin is read through when it is read on the runtime.
#[cfg(unix)]
type ProcessStdin = BufReader<piped::Piped>;
#[cfg(not(unix))]
type ProcessStdin = tokio::io::Empty;

impl Sealed for Stdio {
    type Serving = BoxFuture<'static, Result<(), ServeError>>;

    fn serve(self, server: Server, shutdown: Option<Signal>) -> Self::Serving {
        // Installed now, before the first line is read, so a signal is never missed.
        let shutdown = shutdown.unwrap_or_else(|| Signal::new(crate::bounds::shutdown::shutdown_signal()));
        let open = || {
            // Pipes and sockets on the runtime; a terminal or a file on threads of its own.
            #[cfg(unix)]
            if let Some((stdin, stdout)) = piped::open() {
                return Ok((Input::stream(BufReader::new(stdin)), lines::stream_output(stdout)));
            }
            Ok((Input::<ProcessStdin>::Thread(lines::stdin_thread()?), lines::stdout_thread()?))
        };
        let settings = self.settings;
        Box::pin(async move { serve_lines(server, open, shutdown.received(), settings).await })
    }
}

impl<R, W> Sealed for Pipe<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Serving = BoxFuture<'static, Result<(), ServeError>>;

    fn serve(self, server: Server, shutdown: Option<Signal>) -> Self::Serving {
        let settings = self.settings;
        let open = move || Ok((Input::stream(BufReader::new(self.reader)), lines::stream_output(self.writer)));
        Box::pin(async move {
            match shutdown {
                Some(signal) => serve_lines(server, open, signal.received(), settings).await,
                None => serve_lines(server, open, std::future::pending(), settings).await,
            }
        })
    }
}

/// Serves newline-delimited JSON-RPC on the lines `open` opens until the input ends or
/// `shutdown` resolves, then drains and hands back the tasks running here.
async fn serve_lines<R: AsyncBufRead + Unpin>(
    server: Server,
    open: impl FnOnce() -> io::Result<(Input<R>, lines::Output)>,
    shutdown: impl Future<Output = ()>,
    settings: Settings,
) -> Result<(), ServeError> {
    // Misconfiguration (a missing State<T>, malformed keys) fails here, before any request
    // and before anything is read.
    let engine = Arc::new(server.into_engine());
    engine.check_ready(crate::intake::request_state::Reach::ThisProcess).map_err(ServeError::Misconfigured)?;
    let (input, (out, written)) = open()?;
    // From now on this instance takes over the tasks of instances that died.
    engine.start();
    let mut session = StdioSession::new(engine.clone(), out, settings);
    let read = session.read_until(input, shutdown).await;
    session.finish(shutdown::DEFAULT_TIMEOUT).await;
    engine.hand_back_tasks().await;
    read?;
    // Every sender is gone now: the writer ends once it wrote what was queued.
    Ok(written.await.unwrap_or(Ok(()))?)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::{json, Map, Value};
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::base::error::ToolError;
    use crate::protocol::Tool;

    /// Sets its flag when dropped.
    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_end_of_input_a_request_past_the_bound_is_cut_and_serving_ends() {
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        let endless = Tool::new("endless").handler(move |_ctx, _args: Map<String, Value>| {
            let flag = Flag(flag.clone());
            async move {
                let _flag = flag;
                std::future::pending::<Result<String, ToolError>>().await
            }
        });
        let server = crate::transport::testing::with_own_keys(Server::new("cut", "0").tool(endless));
        let (mut input, server_in) = tokio::io::duplex(4096);
        let (server_out, _output) = tokio::io::duplex(4096);
        let serving = tokio::spawn(async move { server.serve(Pipe::new(server_in, server_out)).await });
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": crate::protocol::PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {} });
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "endless", "_meta": meta } });
        input.write_all(format!("{call}\n").as_bytes()).await.unwrap();
        drop(input);
        let started = tokio::time::Instant::now();
        serving.await.unwrap().unwrap();
        // Virtual time: the wait is exactly the bound, not a measurement.
        let waited = started.elapsed();
        assert!(waited >= shutdown::DEFAULT_TIMEOUT && waited < shutdown::DEFAULT_TIMEOUT * 2, "{waited:?}");
        assert!(dropped.load(Ordering::SeqCst), "the handler still runs");
    }
}
