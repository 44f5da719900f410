//! A listen stream leaves hyper once it is acknowledged: its connection's task writes
//! the events to the socket itself, and hyper's connection (its 8 KiB write buffer, its
//! read buffer of 8 to 16 KiB, its dispatcher) is dropped. A `subscriptions/listen`
//! stream idles for hours and carries nothing back from the client, so those buffers
//! were most of what each one cost (about 28 KiB, of which 24 were hyper's).
//!
//! The order matters, since hyper must have sent every byte it owes first:
//!
//! 1. the SSE body of a listen request, finding nothing to send, gives its stream to the
//!    connection's [`Handoff`] and tells hyper it is pending (forever);
//! 2. hyper, in the same turn, flushes what it holds (the head, the acknowledgement) and
//!    then flushes the socket, which [`Flushed`] sees: the handoff is ready;
//! 3. the connection's task takes the socket back from hyper (`into_parts`) and writes
//!    each later event as an HTTP/1.1 chunk, then the last chunk when the stream ends.
//!
//! Offered only where the framing is known to be ours: HTTP/1.1 (chunked) requests on
//! `Http`, whose responses no middleware rewrites. Elsewhere (an app's
//! own router, HTTP/1.0) listen streams stay in hyper as any response does.

use std::any::Any;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::Notify;

/// The events of a stream handed off, with what must live as long as it does.
pub(super) struct Events {
    stream: Pin<Box<dyn Stream<Item = Bytes> + Send>>,
    /// Guards that count the response as in flight and its connection as busy.
    keep: Vec<Box<dyn Any + Send>>,
}

/// One connection's handoff: where its listen stream's body leaves its events, and the
/// signal that hyper has flushed everything before them.
#[derive(Default)]
pub(super) struct Handoff {
    events: Mutex<Option<Events>>,
    /// The body gave its stream: the next flush of the socket completes the handoff.
    given: AtomicBool,
    ready: Notify,
}

impl Handoff {
    /// The body's side: from now on the connection's task writes `stream`.
    pub(super) fn give(&self, stream: Pin<Box<dyn Stream<Item = Bytes> + Send>>) {
        *self.lock() = Some(Events { stream, keep: Vec::new() });
        self.given.store(true, Ordering::Release);
    }

    /// Whether a body gave its stream.
    pub(super) fn is_given(&self) -> bool {
        self.given.load(Ordering::Acquire)
    }

    /// Keeps `guard` alive as long as the stream handed off.
    pub(super) fn keep(&self, guard: Box<dyn Any + Send>) {
        if let Some(events) = self.lock().as_mut() {
            events.keep.push(guard);
        }
    }

    /// Resolves once the stream is given and hyper has flushed all it held.
    pub(super) async fn ready(&self) {
        self.ready.notified().await;
    }

    /// The events to write from here on.
    pub(super) fn take(&self) -> Option<Events> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Events>> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The socket as hyper sees it: a flush that completes after a body gave its stream means
/// hyper's buffer is empty (hyper flushes the socket only then), so the handoff is ready.
pub(super) struct Flushed<IO> {
    io: IO,
    handoff: Arc<Handoff>,
}

impl<IO> Flushed<IO> {
    pub(super) fn new(io: IO, handoff: Arc<Handoff>) -> Self {
        Self { io, handoff }
    }

    pub(super) fn into_inner(self) -> IO {
        self.io
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Flushed<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Flushed<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flush = Pin::new(&mut self.io).poll_flush(cx);
        if matches!(flush, Poll::Ready(Ok(()))) && self.handoff.is_given() {
            self.handoff.ready.notify_one();
        }
        flush
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Writes `events` to `socket` as the rest of a chunked HTTP/1.1 body, until the stream
/// ends (then the last chunk) or the client goes away (it closes the socket, or sends
/// anything: a listen stream's client has nothing more to say on this connection).
pub(super) async fn write<S: AsyncRead + AsyncWrite + Unpin>(mut socket: S, events: Events) {
    let Events { mut stream, keep } = events;
    let mut heard = [0u8; 1];
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = socket.read(&mut heard) => break,
        };
        let Some(event) = event else {
            let _ = socket.write_all(b"0\r\n\r\n").await;
            break;
        };
        if event.is_empty() {
            continue;
        }
        let chunk = [format!("{:x}\r\n", event.len()).as_bytes(), &event, b"\r\n"].concat();
        if socket.write_all(&chunk).await.is_err() {
            break;
        }
    }
    let _ = socket.shutdown().await;
    drop((stream, keep));
}

/// A response body's stream that, the first time it has nothing to send, gives itself to
/// the connection's [`Handoff`] and stays pending for hyper from then on.
pub(super) struct GiveWhenIdle<S> {
    stream: Option<S>,
    handoff: Arc<Handoff>,
}

impl<S> GiveWhenIdle<S> {
    pub(super) fn new(stream: S, handoff: Arc<Handoff>) -> Self {
        Self { stream: Some(stream), handoff }
    }
}

impl<S> Stream for GiveWhenIdle<S>
where
    S: Stream<Item = Result<Bytes, Infallible>> + Send + Unpin + 'static,
{
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(stream) = self.stream.as_mut() else { return Poll::Pending };
        let next = stream.poll_next_unpin(cx);
        if next.is_pending() {
            if let Some(stream) = self.stream.take() {
                self.handoff.give(Box::pin(stream.map(|event| event.unwrap_or_else(|never| match never {}))));
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use futures_util::stream;
    use tokio::io::AsyncReadExt;

    use super::*;

    fn events(items: Vec<&'static str>) -> Events {
        let stream = stream::iter(items.into_iter().map(|item| Bytes::from_static(item.as_bytes())));
        Events { stream: Box::pin(stream), keep: Vec::new() }
    }

    #[tokio::test]
    async fn events_are_written_as_chunks_then_the_last_chunk() {
        let (server, mut client) = tokio::io::duplex(1024);
        write(server, events(vec!["data: 1\n\n", "", "data: two\n\n"])).await;
        let mut written = String::new();
        client.read_to_string(&mut written).await.unwrap();
        assert_eq!(written, "9\r\ndata: 1\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n");
    }

    #[tokio::test]
    async fn a_client_that_goes_away_ends_the_stream() {
        let (server, client) = tokio::io::duplex(1024);
        let never = Events { stream: Box::pin(stream::pending()), keep: Vec::new() };
        drop(client);
        tokio::time::timeout(std::time::Duration::from_secs(5), write(server, never)).await.expect("ended");
    }

    #[tokio::test]
    async fn a_body_gives_its_stream_the_first_time_it_waits() {
        let handoff = Arc::new(Handoff::default());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<Bytes, Infallible>>();
        tx.send(Ok(Bytes::from_static(b"ack"))).unwrap();
        let mut body = GiveWhenIdle::new(stream::poll_fn(move |cx| rx.poll_recv(cx)), handoff.clone());
        assert_eq!(body.next().await.unwrap().unwrap(), "ack", "what is ready goes through hyper");
        assert!(!handoff.is_given());
        let waker = futures_util::task::noop_waker();
        let polled = Pin::new(&mut body).poll_next(&mut Context::from_waker(&waker));
        assert!(polled.is_pending() && handoff.is_given(), "waiting, it is given");
        tx.send(Ok(Bytes::from_static(b"later"))).unwrap();
        let polled = Pin::new(&mut body).poll_next(&mut Context::from_waker(&waker));
        assert!(polled.is_pending(), "hyper's side stays pending for good");
        let mut taken = handoff.take().expect("the stream");
        assert_eq!(taken.stream.next().await.unwrap(), "later", "the connection's task writes the rest");
    }
}
