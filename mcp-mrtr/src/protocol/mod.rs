//! Wire types of the MCP 2026-07-28 server side: JSON-RPC framing, the messages a server
//! receives and answers, content blocks and capabilities.
//!
//! Handlers build results from them, and tests read answers as them:
//!
//! ```
//! use mcp_mrtr::protocol::{CallToolResult, Tool};
//! use serde_json::json;
//!
//! // A failed tool result: text for the model, `isError` on the wire, no `null`s.
//! let failed = CallToolResult::error("no note with id 7");
//! assert_eq!(
//!     serde_json::to_value(&failed).unwrap(),
//!     json!({ "content": [{ "type": "text", "text": "no note with id 7" }], "isError": true })
//! );
//! // A tool as `tools/list` shows it, names in camelCase.
//! let tool = Tool::new("search").description("Searches the notes");
//! assert_eq!(serde_json::to_value(&tool).unwrap()["inputSchema"], json!({ "type": "object", "properties": {} }));
//! ```
//!
//! Types follow the schema's field names (`camelCase` on the wire); unknown fields are
//! ignored on input, as the spec asks of receivers. Optional fields are omitted, never
//! sent as `null`.

/// The protocol revision this server speaks to 2026-07-28 clients (the bridge speaks
/// 2025-11-25 to older ones).
pub const PROTOCOL_VERSION: &str = "2026-07-28";

pub(crate) mod apps;
mod cache;
mod capabilities;
mod completion;
mod content;
mod discover;
mod display;
mod input_required;
mod jsonrpc;
mod method;
mod prompts;
mod resources;
mod tools;

pub use cache::{CacheHints, CacheScope};
pub(crate) use capabilities::TASKS_EXTENSION;
pub use capabilities::{
    ClientCapabilities, ElicitationCapability, PromptsCapability, ResourcesCapability, SamplingCapability,
    ServerCapabilities, ToolsCapability,
};
pub use completion::{
    CompleteArgument, CompleteContext, CompleteParams, CompleteResult, Completion, CompletionReference,
};
pub use content::{
    Annotations, AudioContent, ContentBlock, EmbeddedResource, ImageContent, ResourceContents, ResourceLink, Role,
    TextContent,
};
pub use discover::{DiscoverResult, Implementation, LoggingLevel};
pub use display::{Icon, Theme};
pub use input_required::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, FormSchema, InputRequest,
    InputRequiredResult, ListRootsResult, ModelHint, ModelPreferences, Root, SamplingMessage, ToolChoice,
};
pub use jsonrpc::{ErrorObject, Notification, RequestId};
pub(crate) use jsonrpc::{Notifier, Outgoing, ResultJson};
pub(crate) use method::{Era, Method};
pub use prompts::{GetPromptParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams, ReadResourceResult, Resource,
    ResourceTemplate,
};
pub use tools::{CallToolParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations};

/// A JSON object, as the wire carries it (`_meta`, `arguments`, capability bags).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Parameters of the paginated `*/list` methods.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub(crate) struct ListParams {
    pub(crate) cursor: Option<String>,
}

/// The `_meta` keys this revision reserves and the runtime reads or writes.
pub mod meta_keys {
    /// Request `_meta`: the protocol version of this request.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Request `_meta`: the capabilities the client declares for this request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Request `_meta`: the client's name and version.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Request `_meta`: opt-in to `notifications/message` at or above this level.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Request `_meta`: opt-in to `notifications/progress` with this token.
    pub const PROGRESS_TOKEN: &str = "progressToken";
    /// Result `_meta`: the server's name and version.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Listen stream `_meta`: the `subscriptions/listen` request a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}
