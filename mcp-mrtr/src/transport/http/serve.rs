//! The accept loop: serves an axum app on a listener with the connection bounds of
//! [`Limits`] (header deadline, write stall, connection cap).
//!
//! Entry point: [`serve_router`]. Each connection is one hyper HTTP/1.1 connection whose
//! socket is wrapped in [`WriteDeadline`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

use super::Limits;

/// What a connection past [`Limits::max_connections`] reads before it is closed.
const REFUSAL: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Serves `app` on `listener` until the process ends, bounding connections as `limits`
/// says: headers (and idle keep-alive) within [`Limits::header_timeout`], responses read
/// within [`Limits::write_timeout`] of being written, at most [`Limits::max_connections`]
/// open at once.
///
/// Use it to serve an app that mounts [`Server::into_router_with`](crate::Server::into_router_with)
/// with the same connection bounds as [`Server::serve_http`](crate::Server::serve_http):
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use mcp_mrtr::{HttpConfig, Limits, Server};
///
/// let limits = Limits::default().max_connections(2000);
/// let mcp = Server::new("app", "1.0.0").into_router_with(HttpConfig::default().limits(limits));
/// let app = axum::Router::new().merge(mcp);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// mcp_mrtr::serve_router(listener, app, limits).await
/// # }
/// ```
///
/// A connection past the cap is accepted, answered `503` with `Retry-After: 1` and closed
/// at once: the client learns to back off, rather than waiting in the kernel's backlog
/// for a turn that may never come.
pub async fn serve_router(listener: TcpListener, app: Router, limits: Limits) -> io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                pause_after(&error).await;
                continue;
            }
        };
        match open.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(serve_connection(stream, app.clone(), limits, permit));
            }
            Err(_) => refuse(&stream),
        }
    }
}

/// Serves one connection; its slot is freed when it closes.
async fn serve_connection(stream: TcpStream, app: Router, limits: Limits, _slot: OwnedSemaphorePermit) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(WriteDeadline::new(stream, limits.write_timeout));
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(io, TowerToHyperService::new(app))
        .await;
    if let Err(error) = served {
        tracing::debug!(%error, "connection closed");
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
