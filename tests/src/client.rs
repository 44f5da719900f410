//! A deliberately small HTTP/1.1 client over a raw TCP socket, so tests can send exactly
//! the bytes they mean (malformed bodies, odd headers) and drop a connection mid-stream.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every network operation in the tests is bounded by this.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A response read to its end.
#[derive(Clone, Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lower-cased) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The decoded body.
    pub body: String,
}

impl HttpResponse {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.header("content-type").is_some_and(|t| t.starts_with("text/event-stream"))
    }

    /// The JSON-RPC messages in the body: one for JSON, one per `data:` line for SSE.
    pub fn messages(&self) -> Vec<Value> {
        if self.is_sse() {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| serde_json::from_str(d.trim()).expect("SSE data is one line of JSON"))
                .collect()
        } else if self.body.is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&self.body).expect("the body is JSON")]
        }
    }

    /// The last message: the response to the request.
    pub fn reply(&self) -> Value {
        self.messages().pop().expect("the body holds a JSON-RPC message")
    }
}

/// Sends one request to `/mcp` and reads the response to its end.
pub async fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
    send_to(addr, method, "/mcp", headers, body).await
}

/// Sends one request to `path` and reads the response to its end.
pub async fn send_to(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    send_from_to(None, addr, method, path, headers, body).await
}

/// Sends one request to `/mcp` from the loopback address `source` (127.0.0.2, say: a
/// client of its own for the server's per-client shares) and reads the response.
pub async fn send_from(
    source: IpAddr,
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    send_from_to(Some(source), addr, method, "/mcp", headers, body).await
}

async fn send_from_to(
    source: Option<IpAddr>,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    tokio::time::timeout(TIMEOUT, async {
        let mut stream = connect_from(source, addr).await;
        stream.write_all(&request_head(addr, method, path, headers, body.len())).await.expect("write head");
        stream.write_all(body).await.expect("write body");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("read response");
        parse_response(&raw)
    })
    .await
    .expect("the server answered in time")
}

/// A connection to `addr`, from `source` when given (any loopback address: 127.0.0.2 and
/// 127.0.0.3 are clients of their own to the server).
pub async fn connect_from(source: Option<IpAddr>, addr: SocketAddr) -> TcpStream {
    let Some(source) = source else { return TcpStream::connect(addr).await.expect("connect") };
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(source, 0)).expect("bind the source address");
    socket.connect(addr).await.expect("connect")
}

/// Writes a request and returns the open socket, to read part of the answer and drop it.
pub async fn open(addr: SocketAddr, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
    open_from(None, addr, headers, body).await
}

/// [`open`] from `source` (see [`connect_from`]).
pub async fn open_from(source: Option<IpAddr>, addr: SocketAddr, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
    open_request(source, addr, "POST", headers, body).await
}

/// Writes a request of `method` to `/mcp` from `source` and returns the open socket.
pub async fn open_request(
    source: Option<IpAddr>,
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> TcpStream {
    let mut stream = connect_from(source, addr).await;
    stream.write_all(&request_head(addr, method, "/mcp", headers, body.len())).await.expect("write head");
    stream.write_all(body).await.expect("write body");
    stream
}

/// Like [`open`], from a socket with a receive buffer of a few kB: for a client that
/// stops reading, whose server's writes then block soon.
pub async fn open_small_window(addr: SocketAddr, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("receive buffer size");
    let mut stream = socket.connect(addr).await.expect("connect");
    stream.write_all(&request_head(addr, "POST", "/mcp", headers, body.len())).await.expect("write head");
    stream.write_all(body).await.expect("write body");
    stream
}

fn request_head(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], len: usize) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {len}\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        let _ = write!(head, "Host: localhost:{}\r\n", addr.port());
    }
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

fn parse_response(raw: &[u8]) -> HttpResponse {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("response has a head");
    let head = std::str::from_utf8(&raw[..split]).expect("head is text");
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = &raw[split + 4..];
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_vec() };
    HttpResponse { status, headers, body: String::from_utf8(body).expect("body is UTF-8") }
}

/// Decodes a chunked body, tolerating a stream cut short.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..eol]).ok().and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let Some(size) = size.filter(|s| *s > 0) else { break };
        let start = eol + 2;
        let end = (start + size).min(raw.len());
        out.extend_from_slice(&raw[start..end]);
        raw = raw.get(end + 2..).unwrap_or_default();
    }
    out
}
