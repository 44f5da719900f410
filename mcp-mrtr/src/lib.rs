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

pub mod ask;
mod capability;
mod context;
mod dispatch;
mod envelope;
mod error;
mod form_schema;
mod handler;
mod private;
pub mod protocol;
mod replay;
mod server;
mod state;
pub mod testing;
mod transport;
mod uri_template;

pub use ask::{Declined, ElicitForm};
pub use capability::Capability;
pub use context::{Ask, Ctx, RetryLater};
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
pub use state::{KeyError, KeyRing, StateConfig, StateKey};
pub use transport::http::HttpConfig;

pub use mcp_mrtr_macros::{prompt, resource, tool};
/// Joins asks (and other futures) so they are polled together: joined asks go out in
/// one round. A re-export of `tokio::join!`.
pub use tokio::join;

#[doc(hidden)]
pub mod __private {
    //! Not public API: for generated code only, may change in any release.
    pub use crate::private::*;
}

/// Everything a handler module usually needs.
pub mod prelude {
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};

    pub use crate::{
        ask, join, once, prompt, prompts, require_client_capability, resource, resources, tool, tools, CallToolResult,
        Capability, ContentBlock, Ctx, Declined, Json, PromptMessage, ResourceContents, Server, ToolError,
    };
}

/// Asks the client for input in the middle of a handler.
///
/// Inside a `#[tool]`, `#[prompt]` or `#[resource]` function:
///
/// | form | asks | evaluates to |
/// |---|---|---|
/// | `ask!(elicit MESSAGE)` | a form for the `T` the result is used as | `Result<T, Declined>` |
/// | `ask!(elicit_url MESSAGE, URL)` | the user to open a URL | `Result<(), Declined>` |
/// | `ask!(sample PROMPT, max_tokens = 50, system = "…")` | the client's model | [`protocol::CreateMessageResult`] |
/// | `ask!(roots)` | the client's roots | `Vec<protocol::Root>` |
///
/// Options after `sample` call the [`ask::Sample`] builder methods of the same name.
/// `key = "…"` first sets the key the answer travels under; otherwise it is the name the
/// `let` binds, or the ask's position. In a loop, give a per-iteration key. Asks inside
/// [`join!`] go out together in one round. In a helper `async fn`, pass the context:
/// `ask!(ctx, key = "name", elicit "…")`.
#[macro_export]
macro_rules! ask {
    (@__mcp $ctx:ident, $key:expr; elicit $message:expr $(, $option:ident = $value:expr)* $(,)?) => {
        $ctx.ask($key, $crate::ask::Elicit::new($message) $(.$option($value))*)
    };
    (@__mcp $ctx:ident, $key:expr; elicit_url $message:expr, $url:expr $(,)?) => {
        $ctx.ask($key, $crate::ask::ElicitUrl::new($message, $url))
    };
    (@__mcp $ctx:ident, $key:expr; sample $prompt:expr $(, $option:ident = $value:expr)* $(,)?) => {
        $ctx.ask($key, $crate::ask::Sample::new($prompt) $(.$option($value))*)
    };
    (@__mcp $ctx:ident, $key:expr; roots $(,)?) => {
        $ctx.ask($key, $crate::ask::Roots)
    };
    (@__mcp $ctx:ident, $key:expr; $($rest:tt)*) => {
        ::core::compile_error!("ask! expects `elicit MESSAGE`, `elicit_url MESSAGE, URL`, `sample PROMPT[, option = value]` or `roots`")
    };
    ($ctx:ident, key = $key:expr, $($rest:tt)+) => {
        $crate::ask!(@__mcp $ctx, $key; $($rest)+).await
    };
    ($($rest:tt)*) => {
        ::core::compile_error!("ask! can only be used inside a #[tool], #[prompt] or #[resource] function; in a helper async fn, pass the context: ask!(ctx, key = \"name\", elicit \"…\")")
    };
}

/// Runs a step once across all rounds of a multi-round call: its result is sealed into
/// the request state and reused when the handler runs again. `let id = once!(create().await?);`
#[macro_export]
macro_rules! once {
    (@__mcp $ctx:ident, $key:expr; $step:expr) => {
        match $ctx.once_result($key) {
            ::core::option::Option::Some(done) => done,
            ::core::option::Option::None => {
                let done = $step;
                $ctx.record_once($key, &done);
                done
            }
        }
    };
    ($($rest:tt)*) => {
        ::core::compile_error!(
            "once! can only be used inside a #[tool], #[prompt] or #[resource] function; elsewhere use Ctx::once"
        )
    };
}

/// Returns `-32021` from the handler unless the client declared the capability on this
/// request: `require_client_capability!(ctx, Sampling);`
#[macro_export]
macro_rules! require_client_capability {
    ($ctx:expr, $capability:ident) => {
        $ctx.require($crate::Capability::$capability)?
    };
}

/// Routes for several `#[tool]` functions at once: `server.tools(tools![a, b, c])`.
#[macro_export]
macro_rules! tools {
    ($($tool:expr),* $(,)?) => { [$($crate::ToolRoute::from($tool)),*] };
}

/// Routes for several `#[prompt]` functions at once: `server.prompts(prompts![a, b])`.
#[macro_export]
macro_rules! prompts {
    ($($prompt:expr),* $(,)?) => { [$($crate::PromptRoute::from($prompt)),*] };
}

/// Routes for several `#[resource]` functions at once: `server.resources(resources![a, b])`.
#[macro_export]
macro_rules! resources {
    ($($resource:expr),* $(,)?) => { [$($crate::ResourceRoute::from($resource)),*] };
}

// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
