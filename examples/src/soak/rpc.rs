//! MCP over the HTTP client: 2026-07-28 requests (the `_meta` envelope and the
//! `Mcp-Method`/`Mcp-Name` headers), 2025-11-25 session requests, and the [`Client`] a
//! flow talks through: it spreads 2026-07-28 requests round robin, retries a request
//! that could not be sent (or, where the flow says it is safe, was cut off) on the next
//! instance, gives every request a deadline, and records every attempt in the history.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::client::{self, Head, Request, Transport};
use super::cluster::{Cluster, Target};
use super::flows::Shared;
use super::history::{OpId, Outcome, RequestLog};
use super::rng::Rng;

/// Every request's deadline: past it, the request counts as hung.
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(15);
/// Attempts of one request, over as many instances.
const ATTEMPTS: usize = 3;

pub(crate) const TASKS: &str = "io.modelcontextprotocol/tasks";

/// What the soak's 2026-07-28 client declares on every request.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "soak", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {}, "sampling": {}, "roots": {}, "extensions": { TASKS: {} },
        },
    })
}

/// A 2026-07-28 request.
pub(crate) fn modern_request(method: &str, mut params: Value, id: u64) -> Request {
    params["_meta"] = meta();
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(name) = params["name"].as_str().or_else(|| params["taskId"].as_str()) {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
    Request { method: "POST", headers, body }
}

/// A 2025-11-25 message (`initialize` without a session) or one on `session`.
pub(crate) fn legacy_request(method: &'static str, session: Option<&str>, body: &Value) -> Request {
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
    ];
    if let Some(session) = session {
        headers.push(("MCP-Protocol-Version", "2025-11-25".to_owned()));
        headers.push(("Mcp-Session-Id", session.to_owned()));
    }
    Request { method, headers, body: body.to_string() }
}

/// A JSON-RPC answer.
#[derive(Clone, Debug)]
pub(crate) enum Answer {
    Result(Value),
    Error {
        code: i64,
        message: String,
    },
    /// No JSON-RPC answer: this HTTP status.
    Http(u16),
}

impl Answer {
    pub(crate) fn of(head: &Head, messages: &[Value]) -> Self {
        let reply = messages.iter().rev().find(|m| m.get("id").is_some() && m.get("method").is_none());
        match reply {
            Some(reply) if reply.get("error").is_some() => Answer::Error {
                code: reply["error"]["code"].as_i64().unwrap_or(0),
                message: reply["error"]["message"].as_str().unwrap_or_default().to_owned(),
            },
            Some(reply) => Answer::Result(reply["result"].clone()),
            None => Answer::Http(head.status),
        }
    }

    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            Answer::Result(result) => {
                let kind = result["resultType"].as_str().unwrap_or("result");
                match result["status"].as_str() {
                    Some(status) if kind != "task" => Outcome::Result(format!("{kind}:{status}")),
                    _ => Outcome::Result(kind.to_owned()),
                }
            }
            Answer::Error { code, message } => Outcome::Error { code: *code, message: message.clone() },
            Answer::Http(status) => Outcome::Http(*status),
        }
    }
}

/// The next live process of `cluster`, waiting a little (bounded) while none is.
async fn live_target(cluster: &Cluster) -> Option<Target> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        if let Some(target) = cluster.next() {
            return Some(target);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Which failures a request may be retried after, on the next instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Only when nothing was sent.
    Unsent,
    /// Also when the answer was cut off: the request is safe to repeat (a poll, an
    /// answer to a task, a round whose state is single-use anyway).
    Broken,
}

/// One flow's connection to the cluster.
pub(crate) struct Client {
    pub(crate) shared: Arc<Shared>,
    /// The loopback address this client connects from: each worker is a client of its own.
    pub(crate) source: IpAddr,
    pub(crate) rng: Rng,
    next_id: u64,
}

impl Client {
    pub(crate) fn new(shared: Arc<Shared>, source: IpAddr, rng: Rng) -> Self {
        Self { shared, source, rng, next_id: 0 }
    }

    pub(crate) fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A 2026-07-28 request, round robin; returns the answer and who gave it.
    pub(crate) async fn modern(
        &mut self,
        op: OpId,
        method: &str,
        params: Value,
        retry: Retry,
    ) -> Result<(Answer, Target), Transport> {
        let instances = self.shared.cluster.clone();
        self.modern_via(&instances, op, method, params, retry).await
    }

    /// [`modern`](Self::modern) through `via` (the front end, for a call whose task
    /// runs on workers) instead of the instances.
    pub(crate) async fn modern_via(
        &mut self,
        via: &Cluster,
        op: OpId,
        method: &str,
        params: Value,
        retry: Retry,
    ) -> Result<(Answer, Target), Transport> {
        let id = self.id();
        let request = modern_request(method, params, id);
        let mut last = Transport::Connect("no live instance".into());
        for _ in 0..ATTEMPTS {
            let Some(target) = live_target(via).await else { continue };
            match self.send(op, target, method, &request).await {
                Ok((head, messages)) => return Ok((Answer::of(&head, &messages), target)),
                Err(Transport::Timeout) => return Err(Transport::Timeout),
                Err(error @ Transport::Broken(_)) if retry == Retry::Unsent => return Err(error),
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    /// One request to `target`, recorded as `label`.
    pub(crate) async fn send(
        &self,
        op: OpId,
        target: Target,
        label: &str,
        request: &Request,
    ) -> Result<(Head, Vec<Value>), Transport> {
        let history = &self.shared.history;
        let at_ms = history.now_ms();
        let started = Instant::now();
        let sent = client::send(self.source, target.addr, request, REQUEST_DEADLINE).await;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let outcome = match &sent {
            Ok((head, messages)) => Answer::of(head, messages).outcome(),
            Err(error) => Outcome::Transport(error.clone()),
        };
        history.request(op, RequestLog { at_ms, ms, method: label.to_owned(), target, outcome });
        sent
    }

    /// Records a request made outside [`send`](Self::send) (a stream's opening).
    pub(crate) fn record(&self, op: OpId, target: Target, label: &str, started: Instant, outcome: Outcome) {
        let history = &self.shared.history;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let at_ms = history.now_ms().saturating_sub(ms);
        history.request(op, RequestLog { at_ms, ms, method: label.to_owned(), target, outcome });
    }
}
