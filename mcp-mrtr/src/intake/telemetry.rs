//! The spans of a request and of a task run, and their place in the client's trace.
//!
//! Every request gets one `mcp.request` span (at debug, as tower-http's request spans)
//! naming what it is, never what it carries. Its `trace_id` is the one the client sent in
//! `_meta.traceparent` (SEP-414), and `flow` is the `traceparent` of the flow's first
//! round, carried in the sealed request state: every round of one MRTR flow and every run
//! of the task it became name the same `flow`, so they read as one.
//!
//! With the `opentelemetry` feature the spans also take their place in the OpenTelemetry
//! trace (`tracing-opentelemetry`): a request span is a SERVER span parented on the
//! request's `traceparent` and linked to the ambient (HTTP) span; a later round links the
//! flow's first span; a task run, which outlives every request, is parented on it. The
//! context is built from the validated `traceparent` itself, not through a propagator:
//! the keys are W3C's by definition, and the global propagator is a no-op until the
//! application installs one, which would silently drop every parent.

use tracing::field::Empty;
use tracing::Span;

use crate::intake::envelope::{Request, RequestMeta, TraceParent};
use crate::protocol::{Era, Method};

/// The span of one request, parented on the client's trace when there is one.
pub(crate) fn request_span(request: &Request, era: Era, meta: &RequestMeta) -> Span {
    let (method, id, era) = (request.method.as_str(), &request.id, era.version());
    let trace_id = meta.trace.traceparent().map(TraceParent::trace_id);
    // Under dispatch's name, where the request is served: `RUST_LOG=mcp_mrtr::dispatch=debug`.
    #[cfg(not(feature = "opentelemetry"))]
    let span = tracing::debug_span!(
        target: "mcp_mrtr::dispatch",
        "mcp.request",
        %method,
        %id,
        era,
        target = Empty,
        outcome = Empty,
        trace_id,
        flow = Empty,
    );
    // `otel.*` fields name the OpenTelemetry span and its kind; the conventions'
    // attributes go to OpenTelemetry alone, so logs read the same with the feature on.
    #[cfg(feature = "opentelemetry")]
    let span = tracing::debug_span!(
        target: "mcp_mrtr::dispatch",
        "mcp.request",
        %method,
        %id,
        era,
        target = Empty,
        outcome = Empty,
        trace_id,
        flow = Empty,
        otel.name = otel::span_name(request).as_deref().unwrap_or(method),
        otel.kind = "server",
    );
    // A span filtered out has nothing to attach to: the attributes' strings (three
    // allocations and formatting per request) are made only for a span that exists.
    #[cfg(feature = "opentelemetry")]
    if !span.is_disabled() {
        otel::attribute(&span, "mcp.method.name", method);
        otel::attribute(&span, "mcp.protocol.version", &meta.protocol_version);
        otel::attribute(&span, "jsonrpc.request.id", &id.to_string());
        if let Some(parent) = meta.trace.traceparent() {
            otel::parent_on(&span, parent, meta.trace.tracestate());
        }
    }
    span
}

/// Records what the request is for: the tool, prompt or resource of `method`, or, with
/// no protocol method, the name of a method of the server's own.
pub(crate) fn target(span: &Span, method: Option<Method>, target: &str) {
    span.record("target", target);
    #[cfg(feature = "opentelemetry")]
    if !span.is_disabled() {
        otel::target(span, method, target);
    }
    #[cfg(not(feature = "opentelemetry"))]
    let _ = method;
}

/// Records that a later round continues the flow that started at `origin` (the first
/// round's `traceparent`, from the sealed state).
pub(crate) fn continues_flow(span: &Span, origin: &str) {
    span.record("flow", origin);
    #[cfg(feature = "opentelemetry")]
    if let Some(origin) = TraceParent::parse(origin).filter(|_| !span.is_disabled()) {
        otel::link(span, &origin);
    }
}

/// Records that the request ended with the JSON-RPC error `code`.
pub(crate) fn failed(span: &Span, code: i32, message: &str) {
    span.record("outcome", "error");
    #[cfg(feature = "opentelemetry")]
    if !span.is_disabled() {
        otel::attribute(span, "error.type", &code.to_string());
        otel::attribute(span, "rpc.response.status_code", &code.to_string());
        otel::status_error(span, message);
    }
    #[cfg(not(feature = "opentelemetry"))]
    let _ = (code, message);
}

/// The span of one run of a task: it outlives the request that created the task, so it
/// stands on its own, in the trace of the flow it continues.
pub(crate) fn task_run_span(task: &str, run: &str, origin: Option<&str>) -> Span {
    let span = tracing::debug_span!(target: "mcp_mrtr::tasks", "mcp.task.run", task, run, flow = origin);
    #[cfg(feature = "opentelemetry")]
    if let Some(origin) = origin.and_then(TraceParent::parse).filter(|_| !span.is_disabled()) {
        otel::parent_on(&span, &origin, None);
    }
    span
}

#[cfg(feature = "opentelemetry")]
mod otel {
    use opentelemetry::trace::{SpanContext, SpanId, Status, TraceContextExt as _, TraceFlags, TraceId, TraceState};
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    use crate::intake::envelope::{Request, TraceParent};
    use crate::protocol::Method;

    /// `{method} {name}` for tools and prompts, as the conventions name a SERVER span;
    /// the method alone otherwise (resource URIs are too many to name spans by). Read
    /// from the params here: a span's name is fixed once it starts.
    pub(super) fn span_name(request: &Request) -> Option<String> {
        if !request.known.is_some_and(Method::names_span_by_target) {
            return None;
        }
        let name = request.params.as_ref()?.get("name")?.as_str()?;
        Some(format!("{} {name}", request.method))
    }

    fn remote(parent: &TraceParent, tracestate: Option<&str>) -> Option<SpanContext> {
        let trace_id = TraceId::from_hex(parent.trace_id()).ok()?;
        let span_id = SpanId::from_hex(parent.parent_id()).ok()?;
        let state = tracestate.and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
        let context = SpanContext::new(trace_id, span_id, TraceFlags::new(parent.flags()), true, state);
        context.is_valid().then_some(context)
    }

    /// Parents `span` (not yet entered) on the caller's span and links the ambient one.
    /// A span no OpenTelemetry layer records, or one filtered out, is left as it is.
    pub(super) fn parent_on(span: &Span, parent: &TraceParent, tracestate: Option<&str>) {
        let Some(remote) = remote(parent, tracestate) else { return };
        let ambient = Span::current().context().span().span_context().clone();
        if span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote)).is_ok() && ambient.is_valid()
        {
            span.add_link(ambient);
        }
    }

    pub(super) fn link(span: &Span, origin: &TraceParent) {
        if let Some(origin) = remote(origin, None) {
            span.add_link(origin);
        }
    }

    /// The conventions' attributes of what a request is for.
    pub(super) fn target(span: &Span, method: Option<Method>, target: &str) {
        match method {
            Some(Method::ToolsCall) => {
                attribute(span, "gen_ai.tool.name", target);
                attribute(span, "gen_ai.operation.name", "execute_tool");
            }
            Some(Method::PromptsGet) => attribute(span, "gen_ai.prompt.name", target),
            Some(Method::ResourcesRead) => attribute(span, "mcp.resource.uri", target),
            _ => {}
        }
    }

    pub(super) fn attribute(span: &Span, key: &'static str, value: &str) {
        span.set_attribute(key, value.to_owned());
    }

    pub(super) fn status_error(span: &Span, message: &str) {
        span.set_status(Status::error(message.to_owned()));
    }
}
