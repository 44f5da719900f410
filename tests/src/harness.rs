//! A server on 127.0.0.1 for one test, and a builder for modern requests.

use std::future::Future;
use std::net::SocketAddr;

use mcp_mrtr::http::{HttpConfig, ListenerLimits};
use mcp_mrtr::Server;
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::client::{self, HttpResponse};
use crate::schema;

/// The one message of every rejected `requestState`.
pub const REJECTED: &str = "Invalid requestState: it is tampered, expired, or belongs to another request";

/// The message of an authentic state whose `once!` step a state of the same call took.
pub const USED: &str =
    "Invalid requestState: this step of the call was taken already, or may have been; start the call over";

/// The raw bytes of a sealed state after its `version.key id.` prefix (nonce,
/// ciphertext and tag), to look for anything that should not be there.
pub fn state_body(state: &str) -> Vec<u8> {
    use base64::Engine as _;
    let encoded = state.splitn(3, '.').nth(2).expect("a state has three dot-separated parts");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded).expect("the state's body is base64url")
}

/// What the conformance harness declares by default.
pub fn default_caps() -> Value {
    json!({ "sampling": {}, "elicitation": {}, "roots": { "listChanged": true } })
}

/// [`default_caps`] and the tasks extension.
pub fn task_caps() -> Value {
    let mut caps = default_caps();
    caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    caps
}

/// One [`MemoryGuard`](mcp_mrtr::request_state::MemoryGuard) that several servers share,
/// as instances share a Redis: give each a clone.
#[derive(Clone, Default)]
pub struct SharedGuard(pub std::sync::Arc<mcp_mrtr::request_state::MemoryGuard>);

impl mcp_mrtr::request_state::StateGuard for SharedGuard {
    fn consume<'a>(
        &'a self,
        claim: &'a mcp_mrtr::request_state::Claim,
    ) -> futures_util::future::BoxFuture<'a, mcp_mrtr::request_state::Consumed> {
        self.0.consume(claim)
    }
}

/// A server serving HTTP on an OS-chosen loopback port; stopped when dropped.
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl TestServer {
    /// Serves `server` on 127.0.0.1, with a state key of its own unless it was given one
    /// (so `MCP_MRTR_STATE_KEYS` in the shell changes nothing).
    pub async fn start(server: Server) -> Self {
        let server = mcp_mrtr::testing::with_own_keys(server);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            server.serve(mcp_mrtr::http::Http::listener(listener)).await.expect("serve");
        });
        Self { addr, task }
    }

    /// Serves `server` on 127.0.0.1 as `config` says (small limits, say).
    pub async fn start_with(server: Server, config: HttpConfig) -> Self {
        Self::start_listening(server, config, ListenerLimits::default()).await
    }

    /// Serves `server` on 127.0.0.1 as `config` says, its connections bounded by `limits`.
    pub async fn start_listening(server: Server, config: HttpConfig, limits: ListenerLimits) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            server.serve(mcp_mrtr::http::Http::listener(listener).config(config).limits(limits)).await.expect("serve");
        });
        Self { addr, task }
    }

    /// Serves an app of one's own through `serve_router` on 127.0.0.1 until `stop`
    /// resolves; [`stopped`](Self::stopped) waits for its graceful shutdown to end.
    pub async fn start_router(app: axum::Router, stop: impl Future<Output = ()> + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let serving = mcp_mrtr::http::serve_router(listener, app).with_graceful_shutdown(stop);
        let task = tokio::spawn(async move { serving.await.expect("serve") });
        Self { addr, task }
    }

    /// Waits, at most 30 s, for serving to end after its shutdown signal.
    pub async fn stopped(&mut self) {
        let ended = tokio::time::timeout(std::time::Duration::from_secs(30), &mut self.task).await;
        ended.expect("serving ended within 30 s").expect("serving did not panic");
    }

    /// Serves the `everything` conformance fixture.
    pub async fn everything() -> Self {
        Self::start(mcp_mrtr_examples::everything::server()).await
    }

    /// Its MCP endpoint's URL, for a client.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Sends `rpc` and checks every message of the answer against the schema.
    pub async fn send(&self, rpc: &Rpc) -> HttpResponse {
        let headers = rpc.headers();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let response = client::send(self.addr, "POST", &headers, &rpc.body()).await;
        for message in response.messages() {
            schema::assert_valid_message(&rpc.method, &message);
        }
        response
    }

    /// Sends `rpc` from the loopback address `source` (127.0.0.2, say: a client of its own
    /// for the server's per-client shares), expects HTTP 200, and returns the reply.
    pub async fn call_from(&self, source: std::net::IpAddr, rpc: &Rpc) -> Value {
        let headers = rpc.headers();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let response = client::send_from(source, self.addr, "POST", &headers, &rpc.body()).await;
        assert_eq!(response.status, 200, "{}", response.body);
        response.reply()
    }

    /// Sends `rpc`, expects HTTP 200, and returns the JSON-RPC reply.
    pub async fn call(&self, rpc: &Rpc) -> Value {
        let response = self.send(rpc).await;
        assert_eq!(response.status, 200, "{}", response.body);
        response.reply()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A modern (2026-07-28) request with the headers a conforming client sends.
#[derive(Clone, Debug)]
pub struct Rpc {
    /// The JSON-RPC method.
    pub method: String,
    id: Value,
    params: Map<String, Value>,
    meta: Option<Value>,
    header_overrides: Vec<(String, Option<String>)>,
}

impl Rpc {
    /// A request for `method`, id 1, no params, the harness's default capabilities.
    pub fn new(method: &str) -> Self {
        Self {
            method: method.into(),
            id: json!(1),
            params: Map::new(),
            meta: Some(meta(default_caps())),
            header_overrides: Vec::new(),
        }
    }

    /// `tools/call` of `name` with `arguments`.
    pub fn call_tool(name: &str, arguments: Value) -> Self {
        Self::new("tools/call").param("name", json!(name)).param("arguments", arguments)
    }

    /// Sets the id.
    pub fn id(mut self, id: Value) -> Self {
        self.id = id;
        self
    }

    /// Sets one param (besides `_meta`).
    pub fn param(mut self, key: &str, value: Value) -> Self {
        self.params.insert(key.into(), value);
        self
    }

    /// Declares these client capabilities.
    pub fn caps(self, caps: Value) -> Self {
        self.meta_value(meta(caps))
    }

    /// Sets one `_meta` key.
    pub fn meta_key(mut self, key: &str, value: Value) -> Self {
        if let Some(Value::Object(meta)) = &mut self.meta {
            meta.insert(key.into(), value);
        }
        self
    }

    /// Replaces `_meta` wholesale; `Value::Null` leaves it out.
    pub fn meta_value(mut self, meta: Value) -> Self {
        self.meta = (!meta.is_null()).then_some(meta);
        self
    }

    /// Overrides a header; `None` leaves it out.
    pub fn header(mut self, name: &str, value: Option<&str>) -> Self {
        self.header_overrides.push((name.to_ascii_lowercase(), value.map(str::to_owned)));
        self
    }

    /// The JSON body.
    pub fn body(&self) -> Vec<u8> {
        let mut params = self.params.clone();
        if let Some(meta) = &self.meta {
            params.insert("_meta".into(), meta.clone());
        }
        json!({ "jsonrpc": "2.0", "id": self.id, "method": self.method, "params": params }).to_string().into_bytes()
    }

    /// The headers, defaults first, then overrides applied.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers: Vec<(String, String)> = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
            ("mcp-protocol-version".into(), mcp_mrtr::protocol::PROTOCOL_VERSION.into()),
            ("mcp-method".into(), self.method.clone()),
        ];
        let name = match self.method.as_str() {
            "tools/call" | "prompts/get" => self.params.get("name"),
            "resources/read" => self.params.get("uri"),
            "tasks/get" | "tasks/update" | "tasks/cancel" => self.params.get("taskId"),
            _ => None,
        };
        if let Some(Value::String(name)) = name {
            headers.push(("mcp-name".into(), name.clone()));
        }
        for (name, value) in &self.header_overrides {
            headers.retain(|(n, _)| n != name);
            if let Some(value) = value {
                headers.push((name.clone(), value.clone()));
            }
        }
        headers
    }
}

/// A `_meta` envelope for 2026-07-28 with these capabilities.
/// Why serving refuses to start `server`, built with a mistake: the `Err` of `into_router`.
pub fn refusal(server: mcp_mrtr::Server) -> String {
    let refused = server.into_router(mcp_mrtr::http::HttpConfig::default()).expect_err("serving must refuse");
    refused.to_string()
}

pub fn meta(caps: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": mcp_mrtr::protocol::PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "mcp-mrtr-tests", "version": "0" },
    });
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    meta
}

/// An application's own authentication, as a test needs it: `Authorization: Bearer <name>`
/// names the caller (a real app verifies a token here); no header, no caller.
pub async fn bearer_names_caller(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let name = request.headers().get("authorization").and_then(|v| v.to_str().ok());
    if let Some(name) = name.and_then(|v| v.strip_prefix("Bearer ")) {
        let caller = mcp_mrtr::Caller::new(name);
        request.extensions_mut().insert(caller);
    }
    next.run(request).await
}
