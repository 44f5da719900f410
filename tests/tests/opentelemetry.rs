//! With the `opentelemetry` feature, request spans take their place in the client's trace
//! (SEP-414): a SERVER span parented on `_meta.traceparent` and linked to the ambient
//! span, later rounds linked to the flow's first, task runs parented on it, errors
//! marked; a missing or malformed `traceparent` changes nothing but the parent.

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

#[derive(Deserialize, JsonSchema)]
struct Secret {
    pin: String,
}

/// Says hello.
#[tool]
async fn hello() -> Result<String, ToolError> {
    Ok("hello".into())
}

/// Asks for a PIN.
#[tool]
async fn unlock() -> Result<String, ToolError> {
    let secret: Secret = ask!(elicit "Your PIN?")?;
    Ok(format!("unlocked with a {}-digit PIN", secret.pin.len()))
}

/// Goes on as a task.
#[tool(task = "required")]
async fn job(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    Ok("done".into())
}

/// The spans exported while `work` runs, with every span of the runtime recorded.
fn exported_while(work: impl std::future::Future<Output = ()>) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    crate::observability::with_scoped(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(work);
    });
    exporter.get_finished_spans().unwrap()
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

fn requests(spans: &[SpanData]) -> Vec<&SpanData> {
    spans.iter().filter(|s| attribute(s, "mcp.method.name").is_some()).collect()
}

#[test]
fn a_request_span_is_a_server_span_parented_on_the_traceparent_and_linked_to_the_ambient_span() {
    let spans = exported_while(async {
        let client = TestClient::new(Server::new("t", "1").tool(hello));
        let round = client
            .call_tool("hello", json!({}))
            .meta("traceparent", traceparent(TRACE, CALLER_SPAN))
            .meta("tracestate", "vendor=1")
            .start()
            .instrument(tracing::info_span!("http.request"))
            .await;
        assert_eq!(round.text().as_deref(), Some("hello"));
    });
    let ambient = spans.iter().find(|s| s.name == "http.request").expect("the ambient span");
    let [request] = requests(&spans)[..] else { panic!("one request span: {spans:#?}") };
    assert_eq!(request.name, "tools/call hello");
    assert_eq!(request.span_kind, SpanKind::Server);
    assert_eq!(request.span_context.trace_id(), TraceId::from_hex(TRACE).unwrap());
    assert_eq!(request.parent_span_id, SpanId::from_hex(CALLER_SPAN).unwrap());
    assert!(request.parent_span_is_remote);
    assert_eq!(attribute(request, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(request, "gen_ai.tool.name").as_deref(), Some("hello"));
    assert_eq!(attribute(request, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attribute(request, "jsonrpc.request.id").as_deref(), Some("1"));
    assert_eq!(attribute(request, "mcp.protocol.version").as_deref(), Some("2026-07-28"));
    assert!(
        request.links.iter().any(|link| link.span_context == ambient.span_context),
        "the ambient span is linked, not the parent"
    );
    assert_ne!(ambient.span_context.trace_id(), request.span_context.trace_id());
}

#[test]
fn without_a_valid_traceparent_the_span_keeps_the_ambient_parent() {
    let spans = exported_while(async {
        let client = TestClient::new(Server::new("t", "1").tool(hello));
        for bad in [json!("garbage"), json!(42), json!(traceparent(&"0".repeat(32), CALLER_SPAN))] {
            let round = client.call_tool("hello", json!({})).meta("traceparent", bad).start().await;
            assert_eq!(round.text().as_deref(), Some("hello"), "trace context never fails a call");
        }
        let nested = client.call_tool("hello", json!({})).start().instrument(tracing::info_span!("outer")).await;
        assert_eq!(nested.text().as_deref(), Some("hello"));
    });
    let outer = spans.iter().find(|s| s.name == "outer").unwrap();
    let requests = requests(&spans);
    assert_eq!(requests.len(), 4);
    for root in &requests[..3] {
        assert_eq!(root.parent_span_id, SpanId::INVALID, "a new trace: {root:#?}");
        assert_ne!(root.span_context.trace_id(), TraceId::from_hex(TRACE).unwrap());
    }
    assert_eq!(requests[3].parent_span_id, outer.span_context.span_id(), "nested under the ambient span");
    assert!(requests[3].links.is_empty());
}

#[test]
fn later_rounds_link_the_flow_s_first_span_and_task_runs_join_its_trace() {
    let second_trace = "11111111111111111111111111111111";
    let spans = exported_while(async {
        let client = TestClient::new(Server::new("t", "1").tool(unlock).tool(job));
        let mut flow = client.call_tool("unlock", json!({}));
        let first = flow.meta("traceparent", traceparent(TRACE, CALLER_SPAN)).start().await;
        assert!(first.input_required().is_some());
        let done = flow
            .meta("traceparent", traceparent(second_trace, "2222222222222222"))
            .answer([("secret", answer::accept(json!({ "pin": "1234" })))])
            .await;
        assert!(done.text().unwrap().starts_with("unlocked"));

        let created =
            client.call_tool("job", json!({})).meta("traceparent", traceparent(TRACE, CALLER_SPAN)).start().await;
        let id = created.task_id().unwrap_or_else(|| panic!("a task: {created:?}")).to_owned();
        let finished = client.task(&id).wait_for("completed", 200).await;
        assert_eq!(finished["status"], "completed");
    });
    let rounds: Vec<_> = requests(&spans).into_iter().filter(|s| s.name == "tools/call unlock").collect();
    let [_, second] = rounds[..] else { panic!("two rounds: {rounds:#?}") };
    assert_eq!(second.span_context.trace_id(), TraceId::from_hex(second_trace).unwrap(), "its own round's parent");
    let origin = second.links.iter().find(|l| l.span_context.trace_id() == TraceId::from_hex(TRACE).unwrap());
    assert_eq!(
        origin.expect("a link to the flow's start").span_context.span_id(),
        SpanId::from_hex(CALLER_SPAN).unwrap()
    );

    let run = spans.iter().find(|s| s.name == "mcp.task.run").expect("the task's run span");
    assert_eq!(run.span_context.trace_id(), TraceId::from_hex(TRACE).unwrap());
    assert_eq!(run.parent_span_id, SpanId::from_hex(CALLER_SPAN).unwrap());
}

#[test]
fn a_failed_request_marks_its_span() {
    let spans = exported_while(async {
        let client = TestClient::new(Server::new("t", "1").tool(hello));
        let round =
            client.call_tool("missing", json!({})).meta("traceparent", traceparent(TRACE, CALLER_SPAN)).start().await;
        assert!(round.error().is_some());
    });
    let [request] = requests(&spans)[..] else { panic!("one request span: {spans:#?}") };
    assert_eq!(attribute(request, "error.type").as_deref(), Some("-32602"));
    assert_eq!(attribute(request, "rpc.response.status_code").as_deref(), Some("-32602"));
    assert!(matches!(&request.status, Status::Error { .. }), "{:?}", request.status);
}
