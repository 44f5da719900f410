#![no_main]
//! stdio: the fuzzer's bytes are everything a client writes to stdin, served by the
//! fixture through `Pipe::new` (lines bounded by `read_line`, then the envelope,
//! the 2025-11-25 session and dispatch). Every line written back is JSON, and no more
//! replies come than lines went in.
//!
//! `transport/stdio.rs`'s `read_line` is private to its module, so the split into lines
//! is checked only through what the server answers.
//!
//! The fixture serves two skills: with them, LeakSanitizer found that a server built with
//! `Server::skills` was never freed (its catalog and the skills held each other; fixed,
//! with a test in `tests/tests/skills.rs`, input in `regressions/stdio/`). Each input
//! builds a server, so a leak like it shows on every input.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use libfuzzer_sys::fuzz_target;
use mcp_mrtr::stdio::Pipe;
use tokio::io::AsyncWrite;

/// Stdout: what the server writes, kept for the checks.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Written {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fuzz_target!(|bytes: &[u8]| {
    let written = Written::default();
    // A runtime per input: serving leaves nothing behind that the next input could meet.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime
        // Owned: serving takes a 'static reader.
        .block_on(mcp_mrtr::fuzzing::server(2).serve(Pipe::new(std::io::Cursor::new(bytes.to_vec()), written.clone())))
        .expect("serving ends without an error when its input does");
    drop(runtime);
    let lines_in = bytes.split(|b| *b == b'\n').filter(|line| !line.iter().all(u8::is_ascii_whitespace)).count();
    let out = written.0.lock().unwrap_or_else(PoisonError::into_inner);
    let mut replies = 0;
    for line in out.split(|b| *b == b'\n').filter(|line| !line.is_empty()) {
        let message: serde_json::Value = serde_json::from_slice(line)
            .unwrap_or_else(|e| panic!("wrote a line that is not JSON ({e}): {}", String::from_utf8_lossy(line)));
        if message.get("result").is_some() || message.get("error").is_some() {
            replies += 1;
        }
    }
    assert!(replies <= lines_in, "{replies} replies to {lines_in} lines");
});
