//! The process's stdin and stdout served on the runtime itself when they are pipes or
//! sockets, as every host that spawns a server makes them: read and written without
//! blocking, woken by the runtime's poller, so a call crosses no thread. On the threads of
//! `lines`, each call crossed three (stdin's, the runtime's, stdout's), and waking a
//! thread cost more than the call itself. Anything else (a terminal, a file) keeps those
//! threads.
//!
//! Blocking or not is a property of a pipe's open description, which fds 0 and 1 share
//! with the duplicates used here. It is changed only when stdin, stdout and stderr are
//! three different files: after `2>&1`, a non-blocking stderr would make `eprintln!` fail
//! on a full pipe instead of waiting. It is changed back when serving ends. The files are
//! read and written directly, past `std::io::stdin()`'s and `stdout()`'s buffers, which a
//! server serving on them leaves empty.

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;
use tokio::net::UnixStream;

/// Stdin to read and stdout to write on the runtime, or `None` when they stay on threads.
pub(super) fn open() -> Option<(Piped, Piped)> {
    // Only where the runtime can poll (it was built with I/O): a pipe is made
    // non-blocking before it is registered, and a failed registration would leave the
    // threads a non-blocking pipe.
    drop(pipe::pipe().ok()?);
    let stdin = Standard::of(io::stdin().as_fd())?;
    let stdout = Standard::of(io::stdout().as_fd())?;
    let apart = match Standard::of(io::stderr().as_fd()) {
        Some(stderr) => stdin.id() != stdout.id() && stderr.id() != stdin.id() && stderr.id() != stdout.id(),
        // No stderr (closed): nothing else writes where stdout does.
        None => stdin.id() != stdout.id(),
    };
    if !apart {
        return None;
    }
    // A reader made before a writer that cannot be is dropped, blocking again.
    let reader = stdin.reader()?;
    Some((reader, stdout.writer()?))
}

/// A duplicate of a standard stream, and what it is.
struct Standard {
    file: File,
    meta: Metadata,
}

impl Standard {
    fn of(fd: BorrowedFd<'_>) -> Option<Self> {
        let file = File::from(fd.try_clone_to_owned().ok()?);
        let meta = file.metadata().ok()?;
        Some(Self { file, meta })
    }

    /// The file it is, whichever descriptor reaches it.
    fn id(&self) -> (u64, u64) {
        (self.meta.dev(), self.meta.ino())
    }

    fn reader(self) -> Option<Piped> {
        if self.meta.file_type().is_fifo() {
            // Checks that it reads a pipe and makes it non-blocking.
            return pipe::Receiver::from_file(self.file).ok().map(|pipe| Piped(Some(End::Reader(pipe))));
        }
        self.socket()
    }

    fn writer(self) -> Option<Piped> {
        if self.meta.file_type().is_fifo() {
            return pipe::Sender::from_file(self.file).ok().map(|pipe| Piped(Some(End::Writer(pipe))));
        }
        self.socket()
    }

    /// A socket (a Node host's stdio is a socket pair), made non-blocking through a
    /// duplicate kept to make it blocking again, then registered with the runtime.
    fn socket(self) -> Option<Piped> {
        if !self.meta.file_type().is_socket() {
            return None;
        }
        let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(self.file));
        let blocking = socket.try_clone().ok()?;
        blocking.set_nonblocking(true).ok()?;
        if let Ok(socket) = UnixStream::from_std(socket) {
            return Some(Piped(Some(End::Socket { socket, blocking })));
        }
        let _ = blocking.set_nonblocking(false);
        None
    }
}

/// Stdin or stdout, non-blocking until dropped.
pub(super) struct Piped(Option<End>);

enum End {
    Reader(pipe::Receiver),
    Writer(pipe::Sender),
    Socket { socket: UnixStream, blocking: std::os::unix::net::UnixStream },
}

impl Drop for Piped {
    fn drop(&mut self) {
        // Blocking again for whatever reads or writes the stream after serving. Dropping
        // the duplicate closes it alone; fds 0 and 1 stay open.
        let _ = match self.0.take() {
            Some(End::Reader(pipe)) => pipe.into_blocking_fd().map(drop),
            Some(End::Writer(pipe)) => pipe.into_blocking_fd().map(drop),
            Some(End::Socket { blocking, .. }) => blocking.set_nonblocking(false),
            None => Ok(()),
        };
    }
}

impl AsyncRead for Piped {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.0.as_mut() {
            Some(End::Reader(pipe)) => Pin::new(pipe).poll_read(cx, buf),
            Some(End::Socket { socket, .. }) => Pin::new(socket).poll_read(cx, buf),
            _ => Poll::Ready(Err(io::Error::other("stdout is not read"))),
        }
    }
}

impl AsyncWrite for Piped {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.0.as_mut() {
            Some(End::Writer(pipe)) => Pin::new(pipe).poll_write(cx, buf),
            Some(End::Socket { socket, .. }) => Pin::new(socket).poll_write(cx, buf),
            _ => Poll::Ready(Err(io::Error::other("stdin is not written"))),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Pipes and sockets hold nothing back.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Stdout stays open for the process; it closes at exit.
        Poll::Ready(Ok(()))
    }
}
