//! Content blocks carried by tool results and prompt messages, and resource contents.

use serde::{Deserialize, Serialize};

use super::JsonObject;

/// Who a message or an annotation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side of the conversation.
    User,
    /// The model side of the conversation.
    Assistant,
}

/// Hints about how a client should use a piece of content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who the content is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// One block of content, tagged by `type` on the wire.
///
/// ```
/// use mcp_mrtr::prelude::*;
///
/// /// Last week's sales, in words and as a chart.
/// #[tool]
/// async fn sales() -> Result<Vec<ContentBlock>, ToolError> {
///     # let chart_png_base64 = String::from("iVBORw0KGgo=");
///     Ok(vec![
///         ContentBlock::text("Sales rose 12% last week."),
///         ContentBlock::image(chart_png_base64, "image/png"),
///     ])
/// }
/// # let _ = Server::new("sales", "1.0.0").tool(sales);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// `{"type":"text"}`
    Text(TextContent),
    /// `{"type":"image"}`
    Image(ImageContent),
    /// `{"type":"audio"}`
    Audio(AudioContent),
    /// `{"type":"resource_link"}`
    ResourceLink(ResourceLink),
    /// `{"type":"resource"}`: a resource embedded with its contents.
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent { text: text.into(), annotations: None, meta: None })
    }

    /// An image block from base64 data.
    pub fn image(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent {
            data: data_base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An audio block from base64 data.
    pub fn audio(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent {
            data: data_base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An embedded resource block.
    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource { resource: contents, annotations: None, meta: None })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// Text content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Image content, base64-encoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImageContent {
    /// Base64 image data.
    pub data: String,
    /// The image's MIME type.
    pub mime_type: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Audio content, base64-encoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AudioContent {
    /// Base64 audio data.
    pub data: String,
    /// The audio's MIME type.
    pub mime_type: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// A link to a resource the client may read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// A resource embedded in a result with its contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The contents of a resource: text, or base64 binary (`blob`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Textual contents.
    #[serde(rename_all = "camelCase")]
    Text {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
        /// Free-form metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
    /// Binary contents, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Blob {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64 data.
        blob: String,
        /// Free-form metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
}

impl ResourceContents {
    /// Text contents with a MIME type.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Text { uri: uri.into(), mime_type: Some(mime_type.into()), text: text.into(), meta: None }
    }

    /// Binary contents (already base64-encoded) with a MIME type.
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, blob_base64: impl Into<String>) -> Self {
        Self::Blob { uri: uri.into(), mime_type: Some(mime_type.into()), blob: blob_base64.into(), meta: None }
    }
}
