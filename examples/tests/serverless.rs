//! The reports example as an AWS Lambda function (issue 52), driven with the Lambda
//! runtime's own event and response types: each request is a Function URL event (payload
//! 2.0, as AWS sends it) given to `lambda_http`'s adapter in front of our handler, exactly
//! the conversion `lambda_http::run` does for each invocation, and the response is the
//! JSON the function returns to AWS. Two handlers built from the same settings stand for
//! two containers, and rounds alternate between them.
//!
//! With `MCP_MRTR_LAMBDA_URL` set (`.ci/lambda.sh`: the function under cargo-lambda's
//! emulator, its worker and Redis started beside it), the same flows go over HTTP to that
//! URL instead, through the real runtime API.
//!
//! Tasks: a real `redis-server` and a `reports_worker` process; the function runs none.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use lambda_http::request::LambdaRequest;
use lambda_http::{Context, LambdaEvent, Service};
use mcp_mrtr::lambda::{Handler, Lambda};
use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
use mcp_mrtr::testing::answer;
use serde_json::{json, Value};

use crate::instance::{self, Redis, TIMEOUT};

/// Where the requests go: containers in this process, or a function served by the emulator.
pub(crate) enum Function {
    Containers(Vec<Handler>),
    Emulator { addr: SocketAddr, path: String },
}

impl Function {
    /// Two containers of the reports function sharing `redis` and one key ring.
    pub(crate) async fn start(redis: Option<&Redis>) -> Self {
        let state = StateConfig::new(KeyRing::new(StateKey::random()));
        let mut containers = Vec::new();
        for _ in 0..2 {
            let server = mcp_mrtr_examples::reports::configured(state.clone(), redis.map(Redis::config))
                .await
                .expect("the reports server");
            containers.push(Lambda::new().handler(server).expect("a configured function"));
        }
        // A guard begins its memory as its container starts, before the container seals a
        // state (AWS's runtime waits for the first invoke meanwhile); invoked at once, a
        // container here could seal one first, which the memory then refuses as maybe used.
        if let Some(redis) = redis {
            let mut polls = 0;
            while redis.cli(&["EXISTS", "mcp-mrtr:state:since"]) != "1" {
                polls += 1;
                assert!(polls < 200, "the guard's memory never began");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        Self::Containers(containers)
    }

    /// The emulator's function, when `MCP_MRTR_LAMBDA_URL` names one.
    pub(crate) fn emulated() -> Option<Self> {
        let url = std::env::var("MCP_MRTR_LAMBDA_URL").ok()?;
        let rest = url.strip_prefix("http://").expect("MCP_MRTR_LAMBDA_URL is http://host:port/path");
        let (host, path) = rest.split_once('/').expect("a path");
        Some(Self::Emulator { addr: host.parse().expect("host:port"), path: format!("/{path}") })
    }

    /// Sends `message` (with its MCP headers, and `extra` ones) to container `n`; the
    /// HTTP status and the JSON-RPC messages of the answer.
    pub(crate) async fn send(&self, n: usize, message: &Value, extra: &[(&str, &str)]) -> (u16, Vec<Value>) {
        let mut headers = mcp_headers(message);
        for (name, value) in extra {
            headers.retain(|(known, _)| known != name);
            headers.push(((*name).to_owned(), (*value).to_owned()));
        }
        match self {
            Self::Containers(containers) => invoke(&containers[n % containers.len()], &headers, message).await,
            Self::Emulator { addr, path } => {
                let (addr, path, message) = (*addr, path.clone(), message.clone());
                tokio::task::spawn_blocking(move || post(addr, &path, &headers, &message)).await.unwrap()
            }
        }
    }

    /// The result of `message` on container `n`, which must answer 200 with one.
    pub(crate) async fn result(&self, n: usize, message: &Value) -> Value {
        let (status, mut messages) = self.send(n, message, &[]).await;
        let reply = messages.pop().unwrap_or_else(|| panic!("no reply ({status})"));
        assert_eq!(status, 200, "{reply}");
        reply.get("result").cloned().unwrap_or_else(|| panic!("not a result: {reply}"))
    }
}

/// The headers a conforming 2026-07-28 client sends with `message`.
fn mcp_headers(message: &Value) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "application/json, text/event-stream".to_owned()),
    ];
    if let Some(method) = message["method"].as_str() {
        headers.push(("mcp-protocol-version".into(), "2026-07-28".into()));
        headers.push(("mcp-method".into(), method.into()));
    }
    let params = &message["params"];
    if let Some(name) = params["name"].as_str().or_else(|| params["taskId"].as_str()) {
        headers.push(("mcp-name".into(), name.into()));
    }
    headers
}

/// One invocation: `message` as the Function URL event AWS would send, through the
/// runtime's adapter and our handler, and the response the function returns to AWS.
async fn invoke(handler: &Handler, headers: &[(String, String)], message: &Value) -> (u16, Vec<Value>) {
    let method = if message.is_null() { "GET" } else { "POST" };
    let event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": headers.iter().map(|(name, value)| (name.clone(), Value::String(value.clone()))).collect::<serde_json::Map<String, Value>>(),
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "reports",
            "domainName": "reports.lambda-url.eu-west-1.on.aws",
            "domainPrefix": "reports",
            "http": { "method": method, "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test" },
            "requestId": "id",
            "routeKey": "$default",
            "stage": "$default",
            "time": "05/Dec/2026:12:00:00 +0000",
            "timeEpoch": 0
        },
        "body": if message.is_null() { Value::Null } else { Value::String(message.to_string()) },
        "isBase64Encoded": false
    });
    let event: LambdaRequest = serde_json::from_value(event).expect("a Function URL event");
    let mut adapter = lambda_http::Adapter::from(handler.clone());
    let response = adapter.call(LambdaEvent::new(event, Context::default())).await.expect("the function answered");
    let response = serde_json::to_value(response).expect("a response AWS reads");
    assert_eq!(response["isBase64Encoded"], false, "{response}");
    let status = u16::try_from(response["statusCode"].as_u64().expect("statusCode")).unwrap();
    let content_type = response["headers"]["content-type"].as_str().unwrap_or_default().to_owned();
    (status, instance::messages(&content_type, response["body"].as_str().unwrap_or_default()))
}

/// `message` POSTed to the emulator's function URL.
fn post(addr: SocketAddr, path: &str, headers: &[(String, String)], message: &Value) -> (u16, Vec<Value>) {
    use std::fmt::Write as _;
    use std::io::{Read, Write};
    let body = message.to_string();
    let mut head =
        format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let mut socket = std::net::TcpStream::connect(addr).expect("connect to the emulator");
    socket.set_read_timeout(Some(TIMEOUT)).unwrap();
    socket.write_all(format!("{head}\r\n{body}").as_bytes()).unwrap();
    let mut seen = String::new();
    socket.read_to_string(&mut seen).expect("the emulator's answer");
    let status = seen.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {seen}"));
    let (head, body) = seen.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head: {seen}"));
    assert!(!head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "a buffered function answers whole");
    (status, instance::messages(head, body))
}

pub(crate) fn caps(tasks: bool) -> Value {
    if tasks {
        json!({ "elicitation": { "form": {} }, "extensions": { "io.modelcontextprotocol/tasks": {} } })
    } else {
        json!({ "elicitation": { "form": {} } })
    }
}

pub(crate) fn report_call(tasks: bool) -> Value {
    instance::request(
        "tools/call",
        json!({ "name": "monthly_report", "arguments": { "team": "payments", "month": "2026-11" } }),
        &caps(tasks),
    )
}

/// `call` retried with these answers and `state`.
pub(crate) fn retry(call: &Value, answers: Value, state: &Value) -> Value {
    let mut retry = call.clone();
    retry["params"]["inputResponses"] = answers;
    retry["params"]["requestState"] = state.clone();
    retry
}

pub(crate) fn sections() -> Value {
    json!({ "sections": answer::accept(json!({ "costs": true, "incidents": false })) })
}

pub(crate) fn publish(yes: bool) -> Value {
    json!({ "publish": answer::accept(json!({ "publish": yes })) })
}

/// Redis for the containers' guard and task store.
pub(crate) fn redis() -> Option<Redis> {
    let redis = Redis::start();
    if redis.is_none() {
        eprintln!("skipped: no redis-server");
    }
    redis
}

#[tokio::test]
async fn rounds_move_between_containers_and_each_step_is_taken_once() {
    if let Some(function) = Function::emulated() {
        return rounds(&function).await;
    }
    let Some(redis) = redis() else { return };
    rounds(&Function::start(Some(&redis)).await).await;
}

async fn rounds(function: &Function) {
    // What the function says it serves: tools and tasks, and no list changes to listen for.
    let discovered = function.result(0, &instance::request("server/discover", json!({}), &caps(false))).await;
    assert_eq!(discovered["capabilities"]["tools"], json!({}), "{discovered}");
    assert!(discovered["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{discovered}");

    // Elicitation, and a second round, each on another container.
    let call = report_call(false);
    let asked = function.result(0, &call).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked["inputRequests"]["sections"]["params"]["message"].as_str().unwrap().contains("2026-11"), "{asked}");
    let second = function.result(1, &retry(&call, sections(), &asked["requestState"])).await;
    assert_eq!(second["resultType"], "input_required", "{second}");
    assert_eq!(
        second["inputRequests"]["publish"]["params"]["message"],
        "The 2026-11 report for payments is ready. Publish it?"
    );

    // A tampered state is refused, by any container.
    let state = second["requestState"].as_str().unwrap();
    let middle = state.len() / 2;
    let flipped = if &state[middle..=middle] == "A" { "B" } else { "A" };
    let tampered = Value::String(format!("{}{flipped}{}", &state[..middle], &state[middle + 1..]));
    let (_, refused) = function.send(0, &retry(&call, publish(true), &tampered), &[]).await;
    assert!(refused[0]["error"]["message"].as_str().is_some_and(|m| m.contains("requestState")), "{refused:?}");

    let last = retry(&call, publish(true), &second["requestState"]);
    let done = function.result(0, &last).await;
    let report = &done["structuredContent"];
    assert_eq!(report["sections"], json!(["costs"]), "{done}");
    let (reserved, published) = (report["reserved"].as_str().unwrap(), report["published"].as_str().unwrap());
    assert!(reserved.starts_with("reserved@") && published.starts_with("published@"), "{report}");

    // The last retry again, on the other container (a client that lost the answer): the
    // publication is not taken again, and the client is told why.
    let (_, again) = function.send(1, &last, &[]).await;
    let message = again[0]["error"]["message"].as_str().unwrap_or_else(|| panic!("{again:?}"));
    assert!(message.contains("taken already"), "{message}");
}

#[tokio::test]
async fn what_cannot_live_in_a_function_is_refused_plainly() {
    let function = match Function::emulated() {
        Some(function) => function,
        None => Function::start(None).await,
    };
    // A 2025-11-25 client: refused with the version this function speaks, never a session.
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } } });
    let (status, refused) = function.send(0, &initialize, &[("mcp-protocol-version", "2025-11-25")]).await;
    assert_eq!(status, 400, "{refused:?}");
    assert_eq!(refused[0]["error"]["code"], -32022, "{refused:?}");
    assert_eq!(refused[0]["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert!(refused[0]["error"]["message"].as_str().unwrap().contains("2025-11-25 sessions cannot be kept"));

    // A listen stream would end with the invocation: refused at once, saying why.
    let listen = instance::request(
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
        &caps(false),
    );
    let (_, refused) = function.send(1, &listen, &[]).await;
    assert_eq!(refused[0]["error"]["code"], -32601, "{refused:?}");
    assert!(refused[0]["error"]["message"].as_str().unwrap().contains("no stream outlives it"), "{refused:?}");

    // A session's GET stream: there is none.
    if let Function::Containers(containers) = &function {
        let (status, _) = invoke(&containers[0], &[("accept".into(), "text/event-stream".into())], &Value::Null).await;
        assert_eq!(status, 405);
    }
}

/// A child process of the example, its log lines forwarded.
pub(crate) struct Process {
    pub(crate) child: Child,
    log: Receiver<String>,
}

impl Process {
    pub(crate) fn start(exe: &str, args: &[&str], env: &[(&str, String)]) -> Self {
        let mut command = Command::new(exe);
        command.args(args).env("RUST_LOG", "info");
        for name in mcp_mrtr_examples::everything::ENV {
            command.env_remove(name);
        }
        command.envs(env.iter().map(|(name, value)| (*name, value.as_str())));
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the example");
        let log = crate::common::forward(child.stderr.take().expect("piped stderr"));
        Self { child, log }
    }

    /// Waits for a log line containing `text`; the lines read meanwhile.
    pub(crate) fn wait_for(&self, text: &str) -> Vec<String> {
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let line = self
                .log
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("never logged {text:?}: {seen:#?}"));
            let found = line.contains(text);
            seen.push(line);
            if found {
                return seen;
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_task_created_on_the_function_is_run_by_a_worker_and_answered_through_the_function() {
    // The emulator's run brings its own Redis and worker.
    if let Some(function) = Function::emulated() {
        return tasks(&function, None).await;
    }
    let Some(redis) = redis() else { return };
    tasks(&Function::start(Some(&redis)).await, Some(&redis)).await;
}

async fn tasks(function: &Function, redis: Option<&Redis>) {
    let call = report_call(true);
    let asked = function.result(0, &call).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let created = function.result(1, &retry(&call, sections(), &asked["requestState"])).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let get = instance::request("tasks/get", json!({ "taskId": id }), &caps(true));

    // No worker yet (unless the emulator's run brings one): the task waits, unrun.
    let mut worker = None;
    if let Some(redis) = redis {
        for _ in 0..3 {
            let waiting = function.result(0, &get).await;
            assert_eq!(waiting["status"], "working", "{waiting}");
            // Not the handler's progress line: the function did not run it.
            assert_eq!(waiting["statusMessage"], "waiting for a task worker to run it", "{waiting}");
        }
        let started = Process::start(env!("CARGO_BIN_EXE_reports_worker"), &[], &redis.env());
        started.wait_for("running tasks from the task store");
        worker = Some(started);
    }

    let parked = poll(function, &get, "input_required").await;
    assert_eq!(
        parked["inputRequests"]["publish"]["params"]["message"],
        "The 2026-11 report for payments is ready. Publish it?"
    );
    let compiled = parked["statusMessage"].as_str().unwrap_or_else(|| panic!("{parked}"));
    assert!(compiled.contains(": compiled costs"), "{compiled}");

    let update =
        instance::request("tasks/update", json!({ "taskId": id, "inputResponses": publish(true) }), &caps(true));
    assert_eq!(function.result(1, &update).await["resultType"], "complete");
    let done = poll(function, &get, "completed").await;
    let report = &done["result"]["structuredContent"];
    let (reserved, published) = (report["reserved"].as_str().unwrap(), report["published"].as_str().unwrap());
    // Reserved before the task, where the round ran; published by the worker, once.
    assert!(compiled.starts_with(reserved), "the worker replayed the reservation: {compiled} vs {reserved}");
    if let Some(worker) = &worker {
        let (here, there) = (std::process::id(), worker.child.id());
        assert!(
            reserved.starts_with(&format!("reserved@pid{here}#")),
            "{reserved}: not taken here ({here}; the worker is {there})"
        );
        assert!(
            published.starts_with(&format!("published@pid{there}#")),
            "{published}: not taken by the worker ({there})"
        );
    }
}

/// Polls `tasks/get` every 50 ms until the task has `status`, for at most [`TIMEOUT`].
pub(crate) async fn poll(function: &Function, get: &Value, status: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let task = function.result(0, get).await;
        if task["status"] == status {
            return task;
        }
        assert!(Instant::now() < deadline, "the task never became {status}: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_front_end_says_at_start_up_when_no_worker_is_alive_to_run_its_tasks() {
    if Function::emulated().is_some() {
        return;
    }
    let Some(redis) = redis() else { return };
    let env = redis.env();
    let exe = env!("CARGO_BIN_EXE_reports_lambda");
    let alone = Process::start(exe, &["--port", "0"], &env);
    alone.wait_for("no task worker is alive in the task store");
    drop(alone);

    let worker = Process::start(env!("CARGO_BIN_EXE_reports_worker"), &[], &env);
    worker.wait_for("running tasks from the task store");
    let seen = Process::start(exe, &["--port", "0"], &env).wait_for("tasks run on workers");
    assert!(seen.last().unwrap().contains("workers=1"), "{seen:#?}");
    assert!(!seen.iter().any(|line| line.contains("no task worker")), "{seen:#?}");
}

#[tokio::test]
async fn a_container_whose_redis_is_away_at_start_starts_and_connects_when_it_can() {
    let Some(mut redis) = redis() else { return };
    redis.kill();
    let connected =
        mcp_mrtr::redis::Redis::connect_lazily(redis.url().as_str()).expect("a configuration, no connection");
    let state = StateConfig::new(KeyRing::new(StateKey::random()));
    let server = mcp_mrtr_examples::reports::sharing(state, Some(&connected));
    let function = Function::Containers(vec![Lambda::new().handler(server).expect("the container starts")]);

    // What needs no Redis is served; a round that takes a step is refused, to be tried again.
    let discovered = function.result(0, &instance::request("server/discover", json!({}), &caps(false))).await;
    assert!(discovered["capabilities"]["tools"].is_object(), "{discovered}");
    let call = report_call(false);
    let asked = function.result(0, &call).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let (_, refused) = function.send(0, &retry(&call, sections(), &asked["requestState"]), &[]).await;
    assert!(refused[0]["error"].is_object(), "a step taken without its guard: {refused:?}");

    // Redis is back: the same container connects, and a call goes through. The guard's
    // memory begins once Redis answers, and a state sealed before it is refused as maybe
    // used: a call begun meanwhile starts over, so each try is a call of its own.
    redis.restart();
    let mut second = None;
    for _ in 0..50 {
        let asked = function.result(0, &call).await;
        let (_, answered) = function.send(0, &retry(&call, sections(), &asked["requestState"]), &[]).await;
        if let Some(result) = answered[0].get("result") {
            second = Some(result.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let second = second.expect("a call went through once Redis was back");
    assert_eq!(second["resultType"], "input_required", "the report's second question: {second}");
}
