//! `tools/list` and `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ContentBlock, JsonObject};

/// A tool as listed by `tools/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// Unique name: 1–64 characters of `[A-Za-z0-9_./-]`.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; its root is `type: "object"`.
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent`, for tools that return structured results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Images a client may show beside it (SEP-973).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<super::Icon>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Tool {
    /// A tool that takes no arguments (`{"type":"object","properties":{}}`); set a schema
    /// with [`Tool::input_schema`]. Its title reads as its name does (`get_forecast`:
    /// "Get forecast") until [`title`](Self::title) or [`without_title`](Self::without_title).
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        let mut schema = JsonObject::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(JsonObject::new()));
        Self {
            title: Some(super::display::title_from_name(&name)),
            name,
            description: None,
            input_schema: schema,
            output_schema: None,
            annotations: None,
            icons: Vec::new(),
            meta: None,
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the input schema. Non-object values are ignored and leave the schema as it was.
    pub fn input_schema(mut self, schema: Value) -> Self {
        if let Value::Object(schema) = schema {
            self.input_schema = schema;
        }
        self
    }

    /// Sets the output schema. Non-object values are ignored.
    pub fn output_schema(mut self, schema: Value) -> Self {
        if let Value::Object(schema) = schema {
            self.output_schema = Some(schema);
        }
        self
    }

    /// Sets the behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// Hints about a tool's behaviour. Clients must not trust them from untrusted servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside a closed world (the web, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// The body of a `tools/list` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// The tools.
    pub tools: Vec<Tool>,
    /// Cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `tools/call` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Answers to an earlier round's `inputRequests`, kept raw: they are validated
    /// per key against the question they answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Value>,
    /// The `requestState` of the earlier round, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// The body of a complete `tools/call` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<ContentBlock>,
    /// Structured content, matching the tool's output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `true` when the tool failed; the content says why, for the model to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CallToolResult {
    /// A successful result with these blocks.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self { content, ..Self::default() }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A failed result (`isError: true`) whose text tells the model what went wrong.
    pub fn error(text: impl Into<String>) -> Self {
        Self { is_error: Some(true), ..Self::text(text) }
    }

    /// Whether the tool failed (`isError: true`): its content says why.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The text of its text blocks, joined by newlines.
    pub fn all_text(&self) -> String {
        self.content.iter().filter_map(ContentBlock::as_text).collect::<Vec<_>>().join("\n")
    }

    /// Its structured content, read as a `T` (the tool's output type).
    ///
    /// # Errors
    ///
    /// When there is no structured content, or it is not a `T`.
    pub fn structured<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match &self.structured_content {
            Some(value) => T::deserialize(value),
            None => Err(serde::de::Error::custom("the result has no structured content")),
        }
    }
}
