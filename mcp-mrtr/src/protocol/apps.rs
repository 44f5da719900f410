//! The wire shapes of MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865, stable 2026-01-26):
//! what a `ui://` resource's contents carry in `_meta.ui`, what a tool carries in
//! `_meta.ui`, and the client's declaration of the extension (with SEP-3118's
//! app-rendered elicitation, a draft). Building them is `apps`' business; these are only
//! the shapes as they travel.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ClientCapabilities, JsonObject};

/// The extension's id, in `capabilities.extensions` of both sides.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an app's HTML: the only one the 2026-01-26 revision defines.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The `_meta` key of an elicitation under which an app that renders it finds what it
/// shows besides the message ([`Elicit::app_context`](crate::question::Elicit::app_context)).
/// This toolkit's own key: the extension leaves what an app is given to the server.
pub const CONTEXT: &str = "mcp-mrtr/appContext";

/// The URI scheme every app resource uses.
pub(crate) const SCHEME: &str = "ui://";

/// Whether `uri` names an app: `ui://` and something after it.
pub(crate) fn is_app_uri(uri: &str) -> bool {
    uri.len() > SCHEME.len() && uri.starts_with(SCHEME)
}

/// `_meta.ui` of a `ui://` resource's contents: how the host sandboxes the app.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiResourceMeta {
    /// The origins the app may reach; none: only what the restrictive default allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<Csp>,
    /// The browser features the app asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    /// A dedicated sandbox origin, in the form the host documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host draws a border and background around the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

/// The Content Security Policy an app needs: the origins it may reach, by use. What is
/// not named is refused by the host; an empty policy allows no external origin at all.
///
/// ```
/// use mcp_mrtr::apps::Csp;
///
/// let csp = Csp::new().connect("https://api.example.com").resource("https://cdn.example.com");
/// assert_eq!(
///     serde_json::to_value(&csp).unwrap(),
///     serde_json::json!({
///         "connectDomains": ["https://api.example.com"],
///         "resourceDomains": ["https://cdn.example.com"]
///     })
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Csp {
    /// Origins of `fetch`, XHR and WebSocket connections (`connect-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins of scripts, styles, images, fonts and media (`script-src`, `img-src`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins of nested iframes (`frame-src`); none: no nested frames.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Allowed base URIs (`base-uri`); none: the document's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

impl Csp {
    /// A policy that allows no external origin.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets the app connect (`fetch`, WebSocket) to `origin`.
    pub fn connect(mut self, origin: impl Into<String>) -> Self {
        self.connect_domains.push(origin.into());
        self
    }

    /// Lets the app load scripts, styles, images, fonts and media from `origin`
    /// (`https://*.example.com` for its subdomains).
    pub fn resource(mut self, origin: impl Into<String>) -> Self {
        self.resource_domains.push(origin.into());
        self
    }

    /// Lets the app embed frames from `origin`.
    pub fn frame(mut self, origin: impl Into<String>) -> Self {
        self.frame_domains.push(origin.into());
        self
    }

    /// Lets the app's document use `origin` as its base URI.
    pub fn base_uri(mut self, origin: impl Into<String>) -> Self {
        self.base_uri_domains.push(origin.into());
        self
    }
}

/// Browser features an app asks the host for. A host may refuse any of them, so an app
/// checks for the feature before it uses it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Permissions {
    /// The camera.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<JsonObject>,
    /// The microphone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<JsonObject>,
    /// The location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<JsonObject>,
    /// Writing to the clipboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<JsonObject>,
}

impl Permissions {
    /// No feature asked for.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for the camera.
    pub fn camera(mut self) -> Self {
        self.camera = Some(JsonObject::new());
        self
    }

    /// Asks for the microphone.
    pub fn microphone(mut self) -> Self {
        self.microphone = Some(JsonObject::new());
        self
    }

    /// Asks for the location.
    pub fn geolocation(mut self) -> Self {
        self.geolocation = Some(JsonObject::new());
        self
    }

    /// Asks to write to the clipboard.
    pub fn clipboard_write(mut self) -> Self {
        self.clipboard_write = Some(JsonObject::new());
        self
    }
}

/// Who may call a tool that has an app: `_meta.ui.visibility`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Visibility {
    /// The model and the app (the default, as the extension's).
    #[default]
    ModelAndApp,
    /// The model only: the app cannot call it.
    Model,
    /// The app only: hosts keep it from the model, and this server keeps it from
    /// clients that did not declare the extension (they have no app to call it).
    App,
}

impl Visibility {
    /// As the wire writes it: `["model", "app"]`, `["model"]`, `["app"]`.
    pub(crate) fn as_json(self) -> Value {
        match self {
            Self::ModelAndApp => serde_json::json!(["model", "app"]),
            Self::Model => serde_json::json!(["model"]),
            Self::App => serde_json::json!(["app"]),
        }
    }

    /// Read from `_meta.ui.visibility` of a tool: absent means both; an array without
    /// `"model"` keeps the tool from the model.
    pub(crate) fn of_tool_meta(meta: Option<&JsonObject>) -> Self {
        let Some(listed) = meta.and_then(|meta| meta.get("ui")).and_then(|ui| ui.get("visibility")) else {
            return Self::ModelAndApp;
        };
        let has = |who: &str| listed.as_array().is_some_and(|a| a.iter().any(|v| v == who));
        match (has("model"), has("app")) {
            (true, false) => Self::Model,
            (false, _) => Self::App,
            (true, true) => Self::ModelAndApp,
        }
    }
}

/// What a client declared of the extension on this request (or, for a 2025-11-25
/// session, at `initialize`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    /// It renders `text/html;profile=mcp-app` apps.
    pub(crate) apps: bool,
    /// It renders an elicitation as an app (SEP-3118, draft): `elicitation` inside the
    /// extension, besides form elicitation itself.
    pub(crate) elicitation: bool,
}

impl Declared {
    pub(crate) fn by(caps: &ClientCapabilities) -> Self {
        let Some(ui) = caps.extensions.as_ref().and_then(|extensions| extensions.get(EXTENSION)) else {
            return Self::default();
        };
        let apps =
            ui.get("mimeTypes").and_then(Value::as_array).is_some_and(|types| types.iter().any(|t| t == MIME_TYPE));
        let forms = caps.elicitation.as_ref().is_some_and(|e| e.form.is_some() || e.url.is_none());
        Self { apps, elicitation: apps && forms && ui.get("elicitation").is_some_and(Value::is_object) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared(caps: Value) -> Declared {
        Declared::by(&serde_json::from_value(caps).unwrap())
    }

    #[test]
    fn what_a_client_declares() {
        let ui = |settings: Value| json!({ "elicitation": {}, "extensions": { EXTENSION: settings } });
        assert_eq!(declared(json!({})), Declared::default());
        assert_eq!(declared(ui(json!({}))), Declared::default(), "mimeTypes is required");
        assert_eq!(declared(ui(json!({ "mimeTypes": ["text/html"] }))), Declared::default());
        let apps = Declared { apps: true, elicitation: false };
        assert_eq!(declared(ui(json!({ "mimeTypes": [MIME_TYPE] }))), apps);
        let both = Declared { apps: true, elicitation: true };
        assert_eq!(declared(ui(json!({ "mimeTypes": [MIME_TYPE], "elicitation": {} }))), both);
        // App-rendered elicitation needs form elicitation itself.
        let no_forms = json!({ "elicitation": { "url": {} }, "extensions": { EXTENSION: { "mimeTypes": [MIME_TYPE], "elicitation": {} } } });
        assert_eq!(declared(no_forms), apps);
        assert_eq!(declared(ui(json!({ "mimeTypes": [MIME_TYPE], "elicitation": true }))), apps);
    }

    #[test]
    fn visibility_reads_as_the_extension_says() {
        let meta = |v: Value| serde_json::from_value::<JsonObject>(json!({ "ui": { "visibility": v } })).unwrap();
        assert_eq!(Visibility::of_tool_meta(None), Visibility::ModelAndApp);
        assert_eq!(Visibility::of_tool_meta(Some(&meta(json!(["app"])))), Visibility::App);
        assert_eq!(Visibility::of_tool_meta(Some(&meta(json!(["model"])))), Visibility::Model);
        assert_eq!(Visibility::of_tool_meta(Some(&meta(json!(["app", "model"])))), Visibility::ModelAndApp);
        assert_eq!(Visibility::of_tool_meta(Some(&meta(json!([])))), Visibility::App, "no model: kept from it");
        for v in [Visibility::ModelAndApp, Visibility::Model, Visibility::App] {
            assert_eq!(Visibility::of_tool_meta(Some(&meta(v.as_json()))), v);
        }
    }
}
