//! An open `subscriptions/listen` stream, read message by message: one reader for every
//! test that listens (live lists, fairness, authorization).

use std::net::{IpAddr, SocketAddr};

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::client::{self, TIMEOUT};
use crate::harness::Rpc;
use crate::schema;

/// One open listen stream and what it has sent so far.
pub struct ListenStream {
    stream: TcpStream,
    buffer: String,
}

impl ListenStream {
    /// Sends `rpc` (a `subscriptions/listen` request) to `addr`, from `source` when given
    /// (see [`client::connect_from`]), and keeps the stream open.
    pub async fn open(addr: SocketAddr, source: Option<IpAddr>, rpc: &Rpc) -> Self {
        let headers = rpc.headers();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        Self { stream: client::open_from(source, addr, &headers, &rpc.body()).await, buffer: String::new() }
    }

    /// The next JSON-RPC message (keep-alive comments skipped), schema-checked; panics if
    /// the stream ends first or nothing comes within [`TIMEOUT`].
    pub async fn next(&mut self) -> Value {
        tokio::time::timeout(TIMEOUT, async {
            loop {
                if let Some(message) = self.take_message() {
                    schema::assert_valid_message("subscriptions/listen", &message);
                    return message;
                }
                assert!(self.read_more().await, "the stream ended; so far: {}", self.buffer);
            }
        })
        .await
        .expect("a message in time")
    }

    /// Reads until `text` has arrived (`true`), or the stream ended first (`false`);
    /// panics if neither happens within [`TIMEOUT`].
    pub async fn read_until(&mut self, text: &str) -> bool {
        tokio::time::timeout(TIMEOUT, async {
            while !self.buffer.contains(text) {
                if !self.read_more().await {
                    return false;
                }
            }
            true
        })
        .await
        .expect("the stream said something in time")
    }

    /// Everything received and not yet taken by [`next`](Self::next), as text.
    pub fn seen(&self) -> &str {
        &self.buffer
    }

    /// Appends what the socket has; `false` when it has ended.
    async fn read_more(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).await.unwrap_or(0);
        self.buffer.push_str(&String::from_utf8_lossy(&chunk[..n]));
        n > 0
    }

    /// A `data:` line already received, if a whole one is there.
    fn take_message(&mut self) -> Option<Value> {
        let start = self.buffer.find("data: ")?;
        let end = start + self.buffer[start..].find('\n')?;
        let message = serde_json::from_str(&self.buffer[start + 6..end]).expect("one line of JSON");
        self.buffer.drain(..=end);
        Some(message)
    }
}
