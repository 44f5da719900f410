//! A 2025-11-25 client over real HTTP: `initialize`, then requests on its session, with
//! an SSE reader for the bridge's requests. Every message it reads is checked against the
//! 2025-11-25 schema.

use std::net::{IpAddr, SocketAddr};

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::client::{self, HttpResponse, TIMEOUT};
use crate::schema;

/// A legacy client with an open session.
pub struct Legacy {
    /// The server's address.
    pub addr: SocketAddr,
    /// The `Mcp-Session-Id` the server issued.
    pub session: String,
}

impl Legacy {
    /// Initializes a session declaring `capabilities`; returns the client and the
    /// `initialize` result.
    pub async fn connect(addr: SocketAddr, capabilities: Value) -> (Self, Value) {
        Self::connect_from(None, addr, capabilities).await
    }

    /// [`connect`](Self::connect) from the loopback address `source`, when given (see
    /// [`client::connect_from`]).
    pub async fn connect_from(source: Option<IpAddr>, addr: SocketAddr, capabilities: Value) -> (Self, Value) {
        let response = Self::initialize_from(source, addr, capabilities).await;
        assert_eq!(response.status, 200, "{}", response.body);
        let session = response.header("mcp-session-id").expect("a session id").to_owned();
        assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{session}");
        let reply = response.reply();
        schema::assert_valid_legacy_message("initialize", &reply);
        (Self { addr, session }, reply["result"].clone())
    }

    /// Sends `initialize` from `source` and returns the raw answer, refused or not.
    pub async fn initialize_from(source: Option<IpAddr>, addr: SocketAddr, capabilities: Value) -> HttpResponse {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "legacy-test", "version": "1"}}});
        let headers = [("content-type", "application/json")];
        match source {
            Some(source) => client::send_from(source, addr, "POST", &headers, init.to_string().as_bytes()).await,
            None => client::send(addr, "POST", &headers, init.to_string().as_bytes()).await,
        }
    }

    /// The headers of a request on this session.
    pub fn headers<'a>(&'a self, accept: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![
            ("content-type", "application/json"),
            ("accept", accept),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-session-id", &self.session),
        ]
    }

    /// Sends a request accepting JSON and SSE, and reads the whole answer.
    pub async fn send(&self, id: i64, method: &str, params: Value) -> HttpResponse {
        self.send_from(None, id, method, params).await
    }

    /// [`send`](Self::send) from `source`, when given.
    pub async fn send_from(&self, source: Option<IpAddr>, id: i64, method: &str, params: Value) -> HttpResponse {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let headers = self.headers("application/json, text/event-stream");
        let response = match source {
            Some(source) => client::send_from(source, self.addr, "POST", &headers, body.to_string().as_bytes()).await,
            None => client::send(self.addr, "POST", &headers, body.to_string().as_bytes()).await,
        };
        for message in response.messages() {
            schema::assert_valid_legacy_message(method, &message);
        }
        response
    }

    /// Sends a request, expects HTTP 200, and returns the JSON-RPC reply.
    pub async fn call(&self, id: i64, method: &str, params: Value) -> Value {
        let response = self.send(id, method, params).await;
        assert_eq!(response.status, 200, "{}", response.body);
        response.reply()
    }

    /// POSTs a notification or a response (an answer to the bridge) on the session.
    pub async fn post(&self, message: &Value) -> HttpResponse {
        self.post_from(None, message).await
    }

    /// [`post`](Self::post) from `source`, when given.
    pub async fn post_from(&self, source: Option<IpAddr>, message: &Value) -> HttpResponse {
        let headers = self.headers("application/json");
        match source {
            Some(source) => {
                client::send_from(source, self.addr, "POST", &headers, message.to_string().as_bytes()).await
            }
            None => client::send(self.addr, "POST", &headers, message.to_string().as_bytes()).await,
        }
    }

    /// POSTs `notifications/cancelled` for request `id`.
    pub async fn cancel(&self, id: i64) -> HttpResponse {
        self.post(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "timed out"}}))
            .await
    }

    /// Answers the bridge's request `asked` with `result`; expects 202.
    pub async fn answer(&self, asked: &Value, result: Value) {
        self.answer_from(None, asked, result).await;
    }

    /// [`answer`](Self::answer) from `source`, when given.
    pub async fn answer_from(&self, source: Option<IpAddr>, asked: &Value, result: Value) {
        let posted = self.post_from(source, &json!({"jsonrpc": "2.0", "id": asked["id"], "result": result})).await;
        assert_eq!(posted.status, 202, "{}", posted.body);
    }

    /// Opens the session's `GET` stream, where it hears of changes, and reads its head.
    pub async fn changes(&self) -> (Stream, String) {
        let headers = self.headers("text/event-stream");
        let socket = client::open_request(None, self.addr, "GET", &headers[1..], b"").await;
        let mut stream = Stream { socket, method: "GET".to_owned(), seen: String::new(), read: 0 };
        let head = stream.head().await;
        (stream, head)
    }

    /// Opens a request's SSE stream, to read its messages one by one.
    pub async fn open(&self, id: i64, method: &str, params: Value) -> Stream {
        self.open_from(None, id, method, params).await
    }

    /// [`open`](Self::open) from `source`, when given.
    pub async fn open_from(&self, source: Option<IpAddr>, id: i64, method: &str, params: Value) -> Stream {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let accept = "application/json, text/event-stream";
        let socket = client::open_from(source, self.addr, &self.headers(accept), body.to_string().as_bytes()).await;
        Stream { socket, method: method.to_owned(), seen: String::new(), read: 0 }
    }
}

/// The SSE answer to one request, read as it arrives.
pub struct Stream {
    socket: TcpStream,
    method: String,
    /// Everything received so far (chunk-size lines included: they are not `data:` lines).
    seen: String,
    /// How much of `seen` has been handed out.
    read: usize,
}

impl Stream {
    /// The next JSON-RPC message, or `None` once the server ended the stream.
    pub async fn next(&mut self) -> Option<Value> {
        tokio::time::timeout(TIMEOUT, async {
            let mut buf = [0u8; 4096];
            loop {
                if let Some(message) = self.take_line() {
                    schema::assert_valid_legacy_message(&self.method, &message);
                    return Some(message);
                }
                let n = self.socket.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    return self.take_json_body();
                }
                self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
        .await
        .expect("the stream said something, or ended, in time")
    }

    /// The response's head (status line and headers), once it has all come.
    pub async fn head(&mut self) -> String {
        tokio::time::timeout(TIMEOUT, async {
            let mut buf = [0u8; 4096];
            while !self.seen.contains("\r\n\r\n") {
                let n = self.socket.read(&mut buf).await.unwrap_or(0);
                assert!(n > 0, "the connection ended before the head: {}", self.seen);
                self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
        .await
        .expect("the head in time");
        let (head, _) = self.seen.split_once("\r\n\r\n").expect("a whole head");
        head.to_owned()
    }

    /// Every message until the stream ends.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some(message) = self.next().await {
            messages.push(message);
        }
        messages
    }

    /// The answer when it came as one JSON body (a refusal before anything streamed), once.
    fn take_json_body(&mut self) -> Option<Value> {
        let (head, body) = self.seen.split_once("\r\n\r\n")?;
        let is_json = head.lines().any(|line| line.to_ascii_lowercase().starts_with("content-type: application/json"));
        if !is_json || self.read >= self.seen.len() {
            return None;
        }
        let message = serde_json::from_str(body.trim()).expect("a JSON answer is one JSON-RPC message");
        self.read = self.seen.len();
        schema::assert_valid_legacy_message(&self.method, &message);
        Some(message)
    }

    fn take_line(&mut self) -> Option<Value> {
        while let Some(end) = self.seen[self.read..].find('\n') {
            let line = &self.seen[self.read..self.read + end];
            self.read += end + 1;
            if let Some(data) = line.strip_prefix("data:") {
                return Some(serde_json::from_str(data.trim()).expect("SSE data is one line of JSON"));
            }
        }
        None
    }
}
