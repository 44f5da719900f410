//! Write MCP servers whose tools ask the user, or the client's model, for input halfway
//! through a call — on the stateless 2026-07-28 protocol.
//!
//! This crate is the runtime: wire types, the dispatcher, and the stdio and Streamable
//! HTTP transports. Register tools, prompts and resources on a [`Server`] and serve it.
//!
//! ```no_run
//! use mcp_mrtr::{CallToolResult, Server, Tool, ToolError};
//! use serde_json::{Map, Value};
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let echo = Tool::new("echo")
//!         .description("Repeats its `text` argument")
//!         .input_schema(serde_json::json!({
//!             "type": "object",
//!             "properties": { "text": { "type": "string" } },
//!             "required": ["text"]
//!         }))
//!         .handler(|_ctx, args: Map<String, Value>| async move {
//!             let text = args["text"].as_str().unwrap_or_default().to_owned();
//!             Ok::<_, ToolError>(CallToolResult::text(text))
//!         });
//!     Server::new("echo", "1.0.0").tool(echo).serve_http("127.0.0.1:3000").await
//! }
//! ```
//!
//! # Details
//!
//! - Every modern result is stamped centrally: `resultType`, `_meta` server info, and
//!   caching hints ([`CacheHints`]) on `server/discover`, the lists and `resources/read`.
//! - Errors follow the 2026-07-28 table: [`Error`] carries the JSON-RPC code and the
//!   HTTP status it travels with.
//! - Handlers receive a [`Ctx`]: the client's capabilities *for this request*, and
//!   progress and log notifications that reach the request's own stream.

mod context;
mod dispatch;
mod envelope;
mod error;
mod handler;
pub mod protocol;
mod server;
mod transport;
mod uri_template;

pub use context::Ctx;
pub use envelope::{RequestMeta, PROTOCOL_VERSION};
pub use error::{Error, ErrorCode, ToolError};
pub use handler::{
    IntoPromptResult, IntoResourceResult, IntoToolResult, Json, PromptArguments, PromptRoute, ResourceRoute, ToolRoute,
};
pub use protocol::{
    CallToolResult, ClientCapabilities, CompleteParams, Completion, ContentBlock, GetPromptResult, LoggingLevel,
    Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
    Tool,
};
pub use server::{CacheHints, CacheScope, Server};
pub use transport::http::HttpConfig;

// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
