//! What handlers return, and how it becomes a result: [`IntoToolResult`] (text, content
//! blocks, [`Json`] for structured output), [`IntoPromptResult`], [`IntoResourceResult`].

use serde::Serialize;

use crate::base::error::Declined;
use crate::protocol::{
    CallToolResult, ContentBlock, GetPromptResult, PromptMessage, ReadResourceResult, ResourceContents,
};

/// A prompt the user declined to fill in: complete, with nothing to send, saying why. A
/// user's choice is an answer, not a server failure.
pub(crate) fn declined_prompt(declined: Declined) -> GetPromptResult {
    GetPromptResult { description: Some(declined.to_string()), messages: Vec::new(), meta: None }
}

/// A read the user declined: one text saying `uri` was not read, and why (empty contents
/// would read as a resource that does not exist).
pub(crate) fn declined_read(uri: &str, declined: Declined) -> ReadResourceResult {
    ReadResourceResult {
        contents: vec![ResourceContents::text(uri, "text/plain", format!("Not read: {declined}."))],
        meta: None,
    }
}

/// Values a tool may return: they become the `content` (and `structuredContent`) of a
/// `tools/call` result.
///
/// Implement it for a type of your own that several tools return:
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::handler::IntoToolResult;
///
/// /// Search hits, one text block each.
/// struct Hits(Vec<String>);
///
/// impl IntoToolResult for Hits {
///     fn into_tool_result(self) -> CallToolResult {
///         CallToolResult::new(self.0.into_iter().map(ContentBlock::text).collect())
///     }
/// }
///
/// /// Finds the notes that mention `query`.
/// #[tool]
/// async fn find(query: String) -> Result<Hits, ToolError> {
///     Ok(Hits(vec![format!("notes://1 mentions {query}")]))
/// }
/// # let _ = Server::new("notes", "1.0.0").tool(find);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    note = "return a String, a CallToolResult, a ContentBlock, a Vec<ContentBlock> or Json<T>"
)]
pub trait IntoToolResult {
    /// Converts into the result body.
    fn into_tool_result(self) -> CallToolResult;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(vec![self])
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(self)
    }
}

/// A structured tool result: serialized into `structuredContent`, with the same JSON as
/// text for clients that only read `content`.
///
/// A `#[tool]` returning `Json<T>` (or `Result<Json<T>, _>`) also lists `T`'s schema as
/// its `outputSchema`, so `T` derives `Serialize` and `JsonSchema`.
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
///
/// #[derive(Serialize, JsonSchema)]
/// struct Forecast { city: String, celsius: i32 }
///
/// /// Tomorrow's forecast.
/// #[tool]
/// async fn forecast(city: String) -> Result<Json<Forecast>, ToolError> {
///     Ok(Json(Forecast { city, celsius: 21 }))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(Server::new("weather", "1.0.0").tool(forecast));
/// let done = client.call_tool("forecast", serde_json::json!({ "city": "Oslo" })).start().await;
/// let result = done.complete().unwrap();
/// assert_eq!(result["structuredContent"], serde_json::json!({ "city": "Oslo", "celsius": 21 }));
/// // The same JSON as text, for clients that only read `content`.
/// let text: serde_json::Value = serde_json::from_str(&done.text().unwrap()).unwrap();
/// assert_eq!(text, result["structuredContent"]);
/// let tools = client.list_tools().await.unwrap();
/// assert_eq!(tools[0].output_schema.as_ref().unwrap()["type"], "object");
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => CallToolResult {
                content: vec![ContentBlock::text(value.to_string())],
                structured_content: Some(value),
                ..CallToolResult::default()
            },
            Err(e) => CallToolResult::error(format!("the tool's result could not be serialized: {e}")),
        }
    }
}

/// Values a prompt may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt",
    note = "return a GetPromptResult or a Vec<PromptMessage>"
)]
pub trait IntoPromptResult {
    /// Converts into the result body.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult { messages: self, ..GetPromptResult::default() }
    }
}

/// Values a resource may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource",
    note = "return a ReadResourceResult, a ResourceContents or a Vec<ResourceContents>"
)]
pub trait IntoResourceResult {
    /// Converts into the result body.
    fn into_resource_result(self) -> ReadResourceResult;
}

impl IntoResourceResult for ReadResourceResult {
    fn into_resource_result(self) -> ReadResourceResult {
        self
    }
}

impl IntoResourceResult for ResourceContents {
    fn into_resource_result(self) -> ReadResourceResult {
        ReadResourceResult { contents: vec![self], meta: None }
    }
}

impl IntoResourceResult for Vec<ResourceContents> {
    fn into_resource_result(self) -> ReadResourceResult {
        ReadResourceResult { contents: self, meta: None }
    }
}
