//! Client and server capability objects.

use serde::{Deserialize, Serialize};

use super::JsonObject;

/// What the client declares it can do, on *this* request
/// (`_meta["io.modelcontextprotocol/clientCapabilities"]`).
///
/// Every present capability is an object; unknown sub-fields are tolerated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// The client can list its roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<JsonObject>,
    /// The client can sample its model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// The client can elicit input from its user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Protocol extensions, keyed by extension id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

/// `clientCapabilities.sampling`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingCapability {
    /// The client honours `includeContext` values other than `"none"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// The client accepts `tools` and `toolChoice` in sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
}

/// `clientCapabilities.elicitation`. A bare `{}` means form mode only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitationCapability {
    /// Form-mode elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL-mode elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
}

/// What the server offers, as reported by `server/discover`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerCapabilities {
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// The server emits `notifications/message` to requests that opt in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// The server answers `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// The server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// The server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Protocol extensions, keyed by extension id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

/// `capabilities.prompts`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptsCapability {
    /// The server sends `notifications/prompts/list_changed` on listen streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `capabilities.resources`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourcesCapability {
    /// The server honours resource subscriptions on listen streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed` on listen streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `capabilities.tools`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolsCapability {
    /// The server sends `notifications/tools/list_changed` on listen streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The tasks extension's id (SEP-2663), in `capabilities.extensions` of both sides.
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
