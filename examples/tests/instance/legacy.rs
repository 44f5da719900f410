//! A 2025 session over the blocking client: `initialize` opens it, and each request that
//! names it (`Mcp-Session-Id`) goes on a connection of its own.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};

use serde_json::{json, Value};

use super::TIMEOUT;

/// A session of the 2025 era on an instance.
pub(crate) struct LegacySession {
    addr: SocketAddr,
    /// Its `Mcp-Session-Id`.
    id: String,
    /// The revision `initialize` asked for, sent as `MCP-Protocol-Version` after it.
    version: &'static str,
}

impl LegacySession {
    /// Opens a session on `addr` with `initialize`, asking for `version`.
    pub(crate) fn open(addr: SocketAddr, version: &'static str) -> Self {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}});
        let (head, _) = exchange(send(addr, None, "POST", &init.to_string()));
        let header = head.lines().find(|line| line.to_ascii_lowercase().starts_with("mcp-session-id:"));
        let (_, id) = header.and_then(|line| line.split_once(':')).unwrap_or_else(|| panic!("a session id: {head}"));
        Self { addr, id: id.trim().to_owned(), version }
    }

    /// Sends `method` (`POST`, `GET`) with `body` on the session: the socket, to read the
    /// answer as it arrives.
    pub(crate) fn send(&self, method: &str, body: &str) -> TcpStream {
        send(self.addr, Some((&self.id, self.version)), method, body)
    }

    /// Sends `method` with `body` on the session and reads the whole answer: (head, body).
    pub(crate) fn exchange(&self, method: &str, body: &str) -> (String, String) {
        exchange(self.send(method, body))
    }

    /// The JSON-RPC request `method` with `params` on the session: its reply, and the
    /// HTTP status it came with.
    pub(crate) fn call(&self, id: u64, method: &str, params: &Value) -> (u16, Value) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (head, body) = self.exchange("POST", &request.to_string());
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {head}"));
        let reply = super::messages(&head, &body).pop().unwrap_or_else(|| panic!("no reply: {head}\n{body}"));
        (status, reply)
    }
}

fn send(addr: SocketAddr, session: Option<(&str, &str)>, method: &str, body: &str) -> TcpStream {
    let session = session.map(|(id, version)| format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: {version}\r\n"));
    let head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n",
        addr.port(),
        session.unwrap_or_default(),
        body.len()
    );
    let mut socket = TcpStream::connect(addr).expect("connect");
    socket.set_read_timeout(Some(TIMEOUT)).unwrap();
    socket.write_all(format!("{head}{body}").as_bytes()).expect("send");
    socket
}

fn exchange(mut socket: TcpStream) -> (String, String) {
    let mut seen = String::new();
    socket.read_to_string(&mut seen).expect("the answer");
    let (head, body) = seen.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head: {seen}"));
    (head.to_owned(), body.to_owned())
}
