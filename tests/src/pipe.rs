//! [`Pipe`]: a server on an in-memory stdio pipe, through `Pipe::new`, the same code
//! path `Stdio::new()` runs on the process's stdin and stdout.

use mcp_mrtr::Server;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

use crate::client::TIMEOUT;

/// The client's ends of a served pipe: lines in, lines out.
pub struct Pipe {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    serving: JoinHandle<Result<(), mcp_mrtr::serve::ServeError>>,
}

impl Pipe {
    /// Serves `server` on a new pipe, with a state key of its own unless it was given one.
    pub fn start(server: Server) -> Self {
        let (input, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, output) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(
            mcp_mrtr::testing::with_own_keys(server).serve(mcp_mrtr::stdio::Pipe::new(server_in, server_out)),
        );
        Self { input, output: BufReader::new(output).lines(), serving }
    }

    /// Writes `message` as one line.
    pub async fn send(&mut self, message: &Value) {
        self.input.write_all(format!("{message}\n").as_bytes()).await.expect("the server reads its input");
    }

    /// The next line the server writes, as it wrote it, waiting at most [`TIMEOUT`].
    pub async fn next_line(&mut self) -> String {
        let line = tokio::time::timeout(TIMEOUT, self.output.next_line()).await.expect("a line in time");
        line.expect("readable output").expect("a line")
    }

    /// The next line the server writes, as JSON.
    pub async fn next(&mut self) -> Value {
        serde_json::from_str(&self.next_line().await).expect("a line of JSON")
    }

    /// Sends `message` and returns the next line the server writes.
    pub async fn round(&mut self, message: &Value) -> Value {
        self.send(message).await;
        self.next().await
    }

    /// Closes the input and waits (at most [`TIMEOUT`]) for serving to end without an error.
    pub async fn finish(self) {
        drop(self.input);
        let ended = tokio::time::timeout(TIMEOUT, self.serving).await.expect("serving ends with its input");
        ended.expect("serving did not panic").expect("serving ends without an error");
    }
}
