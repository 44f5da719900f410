//! Request spans in the client's OpenTelemetry trace (SEP-414), printed as they end.
//!
//! ```sh
//! cargo run -p mcp-mrtr --example opentelemetry --features opentelemetry
//! ```
//!
//! then call it with a `traceparent` in `_meta`:
//!
//! ```sh
//! curl -s http://127.0.0.1:3001/mcp -H 'content-type: application/json' \
//!   -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
//!   -H 'mcp-method: tools/call' -H 'mcp-name: greet' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet",
//!        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!                 "io.modelcontextprotocol/clientCapabilities":{},
//!                 "traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}'
//! ```
//!
//! The server prints `tools/call greet` as a SERVER span of trace
//! `0af7651916cd43dd8448eb211c80319c`, child of `00f067aa0ba902b7`. A real deployment
//! installs an OTLP exporter (`opentelemetry-otlp`) where this one prints.

use mcp_mrtr::prelude::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::Layer as _;

/// Greets whoever calls.
#[tool]
async fn greet() -> Result<String, ToolError> {
    tracing::info!("greeting");
    Ok("Hello!".into())
}

/// Prints each span as it ends: its name, kind, trace, parent and links.
#[derive(Debug)]
struct Print;

impl SpanExporter for Print {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        for span in batch {
            let links: Vec<String> = span.links.iter().map(|l| l.span_context.span_id().to_string()).collect();
            println!(
                "{:?} span {:?}: trace {} span {} parent {} links {links:?}",
                span.span_kind,
                span.name,
                span.span_context.trace_id(),
                span.span_context.span_id(),
                span.parent_span_id,
            );
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    let provider = SdkTracerProvider::builder().with_simple_exporter(Print).build();
    // The runtime's request spans are at debug under `mcp_mrtr`: let the OpenTelemetry
    // layer see them whatever the console shows.
    let filter = tracing_subscriber::filter::Targets::new().with_target("mcp_mrtr", tracing::Level::DEBUG);
    let otel = tracing_opentelemetry::layer().with_tracer(provider.tracer("mcp-mrtr-example")).with_filter(filter);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otel)).expect("one subscriber");

    println!("serving on http://127.0.0.1:3001/mcp; call greet with a traceparent in _meta");
    Server::new("traced", "1.0.0").tool(greet).serve(Http::bind("127.0.0.1:3001")).await
}
