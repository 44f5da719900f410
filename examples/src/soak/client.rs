//! A small async HTTP/1.1 client over tokio, as `once_load` and `listen_load` use: one
//! connection per request (`Connection: close`, so consecutive requests can go to
//! different instances) from a loopback source address of the caller's choosing, bodies
//! framed by `Content-Length`, chunked or read to the end, and SSE read message by
//! message. Only 127.0.0.1 is ever connected to.

use std::fmt;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};

/// How a request failed below HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Nothing was sent: the connection was refused or could not be made.
    Connect(String),
    /// The request may have arrived, but the connection broke before the answer ended.
    Broken(String),
    /// No answer (or no next message) within the deadline.
    Timeout,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(why) => write!(f, "connect: {why}"),
            Self::Broken(why) => write!(f, "broken: {why}"),
            Self::Timeout => write!(f, "timeout"),
        }
    }
}

fn broken(error: &std::io::Error) -> Transport {
    Transport::Broken(error.kind().to_string())
}

/// An HTTP request to `/mcp`.
pub(crate) struct Request {
    pub(crate) method: &'static str,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
}

impl Request {
    fn bytes(&self, port: u16) -> Vec<u8> {
        let mut head = format!("{} /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n", self.method);
        for (name, value) in &self.headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        let _ = write!(head, "Content-Length: {}\r\n\r\n", self.body.len());
        [head.as_bytes(), self.body.as_bytes()].concat()
    }
}

/// The status line and headers of a response.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn is_sse(&self) -> bool {
        self.header("content-type").is_some_and(|t| t.starts_with("text/event-stream"))
    }
}

enum Framing {
    Length(usize),
    Chunked,
    ToEnd,
}

/// A response body, read piece by piece.
pub(crate) struct Body {
    reader: BufReader<TcpStream>,
    framing: Framing,
    done: bool,
}

impl Body {
    /// The next piece of the body, `None` at its end.
    async fn piece(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        match self.framing {
            Framing::Length(left) => {
                if left == 0 {
                    self.done = true;
                    return Ok(None);
                }
                let mut buf = vec![0; left.min(16 * 1024)];
                let n = self.reader.read(&mut buf).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                buf.truncate(n);
                self.framing = Framing::Length(left - n);
                Ok(Some(buf))
            }
            Framing::Chunked => {
                let mut line = String::new();
                if self.reader.read_line(&mut line).await? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("").trim(), 16)
                    .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
                if size == 0 {
                    // Trailers, then the empty line that ends the body.
                    loop {
                        line.clear();
                        if self.reader.read_line(&mut line).await? == 0 || line.trim().is_empty() {
                            break;
                        }
                    }
                    self.done = true;
                    return Ok(None);
                }
                let mut buf = vec![0; size + 2];
                self.reader.read_exact(&mut buf).await?;
                buf.truncate(size);
                Ok(Some(buf))
            }
            Framing::ToEnd => {
                let mut buf = vec![0; 16 * 1024];
                let n = self.reader.read(&mut buf).await?;
                if n == 0 {
                    self.done = true;
                    return Ok(None);
                }
                buf.truncate(n);
                Ok(Some(buf))
            }
        }
    }

    async fn read_all(&mut self) -> std::io::Result<Vec<u8>> {
        let mut all = Vec::new();
        while let Some(piece) = self.piece().await? {
            all.extend_from_slice(&piece);
        }
        Ok(all)
    }
}

/// Connects to `to` from the loopback address `from`.
pub(crate) async fn connect(from: IpAddr, to: SocketAddr) -> Result<TcpStream, Transport> {
    let connect = async {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(from, 0))?;
        let stream = socket.connect(to).await?;
        stream.set_nodelay(true)?;
        Ok::<_, std::io::Error>(stream)
    };
    match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(error)) => Err(Transport::Connect(error.kind().to_string())),
        Err(_) => Err(Transport::Connect("connect timed out".into())),
    }
}

/// Sends `request` on `stream` and reads the response head.
async fn exchange(stream: TcpStream, port: u16, request: &Request) -> Result<(Head, Body), Transport> {
    let mut reader = BufReader::new(stream);
    reader.get_mut().write_all(&request.bytes(port)).await.map_err(|e| broken(&e))?;
    let mut status_line = String::new();
    if reader.read_line(&mut status_line).await.map_err(|e| broken(&e))? == 0 {
        return Err(Transport::Broken("closed before answering".into()));
    }
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Transport::Broken(format!("bad status line {status_line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.map_err(|e| broken(&e))? == 0 {
            return Err(Transport::Broken("closed in the head".into()));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let head = Head { status, headers };
    let framing = if head.header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        Framing::Chunked
    } else if let Some(length) = head.header("content-length").and_then(|l| l.parse().ok()) {
        Framing::Length(length)
    } else {
        Framing::ToEnd
    };
    Ok((head, Body { reader, framing, done: false }))
}

/// One whole exchange within `deadline`: the head, and every JSON-RPC message of the body
/// (one JSON body, or each SSE `data:` line).
pub(crate) async fn send(
    from: IpAddr,
    to: SocketAddr,
    request: &Request,
    deadline: Duration,
) -> Result<(Head, Vec<Value>), Transport> {
    let whole = async {
        let stream = connect(from, to).await?;
        let (head, mut body) = exchange(stream, to.port(), request).await?;
        let bytes = body.read_all().await.map_err(|e| broken(&e))?;
        let messages = if head.is_sse() { sse_messages(&bytes) } else { json_message(&bytes) };
        Ok((head, messages))
    };
    tokio::time::timeout(deadline, whole).await.unwrap_or(Err(Transport::Timeout))
}

fn json_message(bytes: &[u8]) -> Vec<Value> {
    serde_json::from_slice(bytes).map(|v| vec![v]).unwrap_or_default()
}

fn sse_messages(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// A response read message by message: an SSE stream, or a JSON body as one message.
pub(crate) struct Stream {
    pub(crate) head: Head,
    body: Body,
    buf: Vec<u8>,
}

/// Opens a request whose answer is read as it arrives; the head must come within `deadline`.
pub(crate) async fn open(
    from: IpAddr,
    to: SocketAddr,
    request: &Request,
    deadline: Duration,
    receive_buffer: Option<u32>,
) -> Result<Stream, Transport> {
    let opened = async {
        let stream = match receive_buffer {
            None => connect(from, to).await?,
            Some(size) => connect_small(from, to, size).await?,
        };
        let (head, body) = exchange(stream, to.port(), request).await?;
        Ok(Stream { head, body, buf: Vec::new() })
    };
    tokio::time::timeout(deadline, opened).await.unwrap_or(Err(Transport::Timeout))
}

/// [`connect`] with a small receive buffer: for a client that stops reading.
async fn connect_small(from: IpAddr, to: SocketAddr, size: u32) -> Result<TcpStream, Transport> {
    let connect = async {
        let socket = TcpSocket::new_v4()?;
        socket.set_recv_buffer_size(size)?;
        socket.bind(SocketAddr::new(from, 0))?;
        socket.connect(to).await
    };
    match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(error)) => Err(Transport::Connect(error.kind().to_string())),
        Err(_) => Err(Transport::Connect("connect timed out".into())),
    }
}

impl Stream {
    /// The next JSON-RPC message within `wait`: `Ok(None)` once the server ended the
    /// stream cleanly, `Err(Timeout)` when nothing came in time.
    pub(crate) async fn next(&mut self, wait: Duration) -> Result<Option<Value>, Transport> {
        tokio::time::timeout(wait, self.next_message()).await.unwrap_or(Err(Transport::Timeout))
    }

    async fn next_message(&mut self) -> Result<Option<Value>, Transport> {
        loop {
            if self.head.is_sse() {
                while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = self.buf.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line);
                    if let Some(data) = line.strip_prefix("data:") {
                        if let Ok(message) = serde_json::from_str(data.trim()) {
                            return Ok(Some(message));
                        }
                    }
                }
            }
            match self.body.piece().await.map_err(|e| broken(&e))? {
                Some(piece) => self.buf.extend_from_slice(&piece),
                None if self.head.is_sse() => return Ok(None),
                None => {
                    let body = std::mem::take(&mut self.buf);
                    return Ok(json_message(&body).pop());
                }
            }
        }
    }
}
