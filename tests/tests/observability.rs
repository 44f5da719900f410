//! Every request gets a tracing span (method, target, era, outcome) and every round one
//! of its own; neither carries what the client sent.

use std::io::Write;
use std::sync::{Arc, Mutex};

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use serde_json::json;
use tracing_subscriber::fmt::format::FmtSpan;

#[derive(Deserialize, JsonSchema)]
struct Secret {
    pin: String,
}

/// Asks for a PIN.
#[tool]
async fn unlock() -> Result<String, ToolError> {
    let secret: Secret = ask!(elicit "Your PIN?")?;
    Ok(format!("unlocked with a {}-digit PIN", secret.pin.len()))
}

/// Collects what the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with `subscriber` as this thread's default, while the other tests run theirs
/// without one.
///
/// tracing-core caches each callsite's interest when the callsite is first reached. While
/// a single subscriber is registered it takes that one for the global default, and asks
/// the reaching thread's own default instead: a span first reached on another test's
/// thread (which has none) is then cached as never wanted, and this test never sees it.
/// A second subscriber, registered for as long, makes every registration ask them all.
pub(crate) fn with_scoped<S, R>(subscriber: S, f: impl FnOnce() -> R) -> R
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    tracing::subscriber::with_default(subscriber, f)
}

/// What is logged at DEBUG (span closings included) while `work` runs.
fn logged_while(work: impl std::future::Future<Output = ()>) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_span_events(FmtSpan::CLOSE)
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    with_scoped(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(work);
    });
    let log = captured.0.lock().unwrap().clone();
    String::from_utf8(log).unwrap()
}

#[test]
fn requests_and_rounds_are_spans_without_the_client_s_data() {
    let log = logged_while(async {
        let client = TestClient::new(Server::new("t", "1").tool(unlock));
        let mut call = client.call_tool("unlock", json!({}));
        call.start().await;
        let done = call.answer([("secret", answer::accept(json!({"pin": "918273"})))]).await;
        assert_eq!(done.text().as_deref(), Some("unlocked with a 6-digit PIN"));
    });
    let closed: Vec<&str> = log.lines().filter(|l| l.contains("close")).collect();
    assert!(
        closed.iter().any(|l| l.contains("mcp.request")
            && l.contains("method=tools/call")
            && l.contains("target=\"unlock\"")
            && l.contains("era=\"2026-07-28\"")
            && l.contains("outcome=\"input_required\"")),
        "{log}"
    );
    assert!(
        closed.iter().any(|l| l.contains("round") && l.contains("n=2") && l.contains("outcome=\"complete\"")),
        "{log}"
    );
    assert!(log.contains("request answered") && log.contains("elapsed_us"), "{log}");
    assert!(!log.contains("918273"), "an answer leaked into the logs: {log}");
}

/// Audit B20: a state too large to seal is the client's doing (what it sent), so it is
/// logged at DEBUG, not WARN: a client cannot write a warning per request.
#[test]
fn a_state_too_large_to_seal_is_logged_below_warn() {
    let log = logged_while(async {
        let tiny = mcp_mrtr::request_state::StateConfig::new(mcp_mrtr::request_state::KeyRing::new(
            mcp_mrtr::request_state::StateKey::random(),
        ))
        .max_bytes(16);
        let client = TestClient::new(Server::new("t", "1").tool(unlock).request_state(tiny));
        let refused = client.call_tool("unlock", json!({})).start().await;
        assert!(refused.error().is_some(), "the state cannot be sealed");
    });
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("cannot seal a request state")).collect();
    assert!(!lines.is_empty(), "{log}");
    assert!(lines.iter().all(|l| l.contains("DEBUG") && !l.contains("WARN")), "{log}");
}

/// Runs only as a task: a 2025-11-25 client cannot call it.
#[tool(task = "required")]
async fn nightly_export(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    Ok("exported".into())
}

/// The newcomer's hosts all speak 2025-11-25: a tool they cannot see is named in the log
/// the first time one lists the tools, at WARN, and below it after that.
#[test]
fn a_tool_left_out_of_a_2025_11_25_list_is_named_in_the_log_once() {
    use mcp_mrtr_tests::harness::TestServer;
    use mcp_mrtr_tests::legacy::Legacy;
    let log = logged_while(async {
        let server = TestServer::start(Server::new("t", "1").tool(unlock).tool(nightly_export)).await;
        for id in 1..=2 {
            let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
            let tools = legacy.call(id, "tools/list", json!({})).await;
            let names: Vec<&str> =
                tools["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
            assert_eq!(names, ["unlock"], "{tools}");
        }
    });
    let told: Vec<&str> = log.lines().filter(|l| l.contains("tools/list leaves out nightly_export")).collect();
    assert_eq!(told.len(), 2, "{log}");
    assert!(told[0].contains("WARN") && told[0].contains("task = \"optional\""), "{log}");
    assert!(told[1].contains("DEBUG"), "{log}");
}

/// A worker builds its own state: it says so when it starts, where an operator who wonders
/// why a task reads an empty ledger looks first.
#[test]
fn a_task_worker_says_at_start_that_its_state_is_its_own() {
    let log = logged_while(async {
        let store = Arc::new(mcp_mrtr::tasks::MemoryTaskStore::new());
        let tasks = mcp_mrtr::tasks::TaskConfig::default().store(store).run_on_workers(true);
        let server = Server::new("t", "1").tool(nightly_export).tasks(tasks);
        let stop = tokio::time::sleep(std::time::Duration::from_millis(50));
        server.serve(mcp_mrtr::tasks::Worker::new()).with_graceful_shutdown(stop).await.unwrap();
    });
    let said: Vec<&str> = log.lines().filter(|l| l.contains("this worker is a process of its own")).collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(said[0].contains("with_state") && said[0].contains("not here"), "{log}");
}

/// Says what trace context and `_meta` keys it was called with.
#[tool]
async fn traced(ctx: &Ctx) -> Result<String, ToolError> {
    let meta = ctx.meta();
    let trace_id = meta.trace.traceparent().map_or("none", |parent| parent.trace_id());
    let user = meta.trace.baggage_value("userId").unwrap_or_default();
    let tenant = meta.extra.get("com.acme/tenant").and_then(|v| v.as_str()).unwrap_or_default();
    Ok(format!("trace {trace_id}, user {user}, tenant {tenant}"))
}

const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

#[test]
fn a_traceparent_reaches_the_request_span_and_the_handler_and_ties_the_rounds() {
    use mcp_mrtr_tests::harness::{Rpc, TestServer};

    let log = logged_while(async {
        let server = TestServer::start(Server::new("t", "1").tool(traced).tool(unlock)).await;
        let call = Rpc::call_tool("traced", json!({}))
            .meta_key("traceparent", json!(TRACEPARENT))
            .meta_key("baggage", json!("userId=alice%20b"))
            .meta_key("com.acme/tenant", json!("blue"));
        let reply = server.call(&call).await;
        assert_eq!(
            reply["result"]["content"][0]["text"],
            "trace 0af7651916cd43dd8448eb211c80319c, user alice b, tenant blue"
        );
        // Malformed trace context is ignored: the call is served as if it had none.
        let garbage = Rpc::call_tool("traced", json!({}))
            .meta_key("traceparent", json!(42))
            .meta_key("baggage", json!("no equals"));
        assert_eq!(server.call(&garbage).await["result"]["content"][0]["text"], "trace none, user , tenant ");

        // Two rounds of one flow, each with its own traceparent: the second records where
        // the flow started.
        let first = server.call(&Rpc::call_tool("unlock", json!({})).meta_key("traceparent", json!(TRACEPARENT))).await;
        let state = first["result"]["requestState"].clone();
        let second = Rpc::call_tool("unlock", json!({}))
            .meta_key("traceparent", json!("00-11111111111111111111111111111111-2222222222222222-01"))
            .param("inputResponses", json!({ "secret": answer::accept(json!({"pin": "1234"})) }))
            .param("requestState", state);
        assert!(server.call(&second).await["result"]["content"][0]["text"].as_str().unwrap().starts_with("unlocked"));
    });
    let closed: Vec<&str> = log.lines().filter(|l| l.contains("close") && l.contains("mcp.request")).collect();
    assert!(closed.iter().any(|l| l.contains("trace_id=\"0af7651916cd43dd8448eb211c80319c\"")), "{log}");
    assert!(
        closed.iter().any(|l| l.contains("trace_id=\"11111111111111111111111111111111\"")
            && l.contains(&format!("flow=\"{TRACEPARENT}\""))),
        "the second round names the flow's start: {log}"
    );
    assert!(!log.contains("alice"), "baggage is not logged: {log}");
}

#[test]
fn servers_of_two_names_on_one_task_store_are_told_so_at_start() {
    use mcp_mrtr_tests::harness::TestServer;

    let log = logged_while(async {
        let store = Arc::new(mcp_mrtr::tasks::MemoryTaskStore::new());
        let server = |name: &str| {
            let tasks = mcp_mrtr::tasks::TaskConfig::default().store(store.clone());
            Server::new(name, "1").tool(nightly_export).tasks(tasks)
        };
        // Two instances of one server share its store, as they should: nothing to say.
        let _billing = TestServer::start(server("billing")).await;
        let _billing_again = TestServer::start(server("billing")).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // Another server on the same store (one Redis, one prefix): it says so.
        let _reports = TestServer::start(server("reports")).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    });
    let said: Vec<&str> = log.lines().filter(|l| l.contains("keeps its tasks in this task store too")).collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(said[0].contains("WARN") && said[0].contains("\"billing\"") && said[0].contains("Redis::prefix"), "{log}");
}

#[test]
fn a_function_whose_states_open_everywhere_but_whose_guard_is_its_own_says_so() {
    use mcp_mrtr::lambda::Lambda;
    use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};

    let told = |state: StateConfig| {
        let log = logged_while(async move {
            let server = Server::new("t", "1").tool(unlock).request_state(state);
            Lambda::new().handler(server).expect("a configured function");
        });
        log.lines().filter(|line| line.contains("a once! step may be taken once per process")).count()
    };
    let keys = KeyRing::new(StateKey::random());
    // Keys every container shares, claims in each container's memory: once per container.
    assert_eq!(told(StateConfig::new(keys.clone())), 1);
    // A guard the containers share (Redis's, in production), or no guard at all: nothing to say.
    let shared = mcp_mrtr_tests::harness::SharedGuard::default();
    assert_eq!(told(StateConfig::new(keys.clone()).single_use(shared)), 0);
    assert_eq!(told(StateConfig::new(keys).reusable(true)), 0);
}
