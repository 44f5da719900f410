//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): interfaces a host renders in a
//! sandboxed frame. An [`App`] is a `ui://` resource holding the HTML; a tool names the app
//! that shows its result ([`ToolRoute::app`]) and who may call it ([`ToolRoute::visibility`]);
//! an ask names the app that replaces its form ([`Elicit::app`](crate::question::Elicit::app),
//! SEP-3118, experimental).
//!
//! ```
//! use mcp_mrtr::apps::{App, Csp, Visibility};
//! use mcp_mrtr::prelude::*;
//!
//! /// Shows the weather on a map.
//! #[tool(app = "ui://weather/map")]
//! async fn forecast(city: String) -> Result<String, ToolError> {
//!     Ok(format!("Sunny in {city}"))
//! }
//!
//! /// What the map draws next: for the app, not the model.
//! #[tool(visibility = "app")]
//! async fn radar(city: String) -> Result<String, ToolError> {
//!     Ok(format!("no rain near {city}"))
//! }
//!
//! let server = Server::new("weather", "1.0.0")
//!     .resource(
//!         App::html("ui://weather/map", "<!doctype html><html><body>…</body></html>")
//!             .csp(Csp::new().resource("https://tiles.example.com"))
//!             .prefers_border(true),
//!     )
//!     .tools([forecast, radar]);
//! # let _ = server;
//! ```
//!
//! A client that declares the extension (`mimeTypes` with `text/html;profile=mcp-app`) is
//! shown every tool with its `_meta.ui`; any other client is shown the plain tools, without
//! the app-only ones (which it could not use: it has no app), and calling one of those by
//! name is answered as for an unknown tool. Apps are listed by `resources/list` to clients
//! that declare the extension (to others they are pages a model could only read as text),
//! and read by `resources/read` for any client. The server declares the extension once it
//! serves an app, or a tool that names one.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::base::error::ToolError;
use crate::mrtr::context::Ctx;
use crate::protocol::apps::{is_app_uri, SCHEME};
pub use crate::protocol::apps::{Csp, Permissions, UiResourceMeta, Visibility, CONTEXT, EXTENSION, MIME_TYPE};
use crate::protocol::{JsonObject, ReadResourceResult, Resource, ResourceContents, Tool};
use crate::routes::catalog::Catalog;
use crate::routes::handler::{ResourceKind, ResourceRoute, ToolRoute};

/// An app: a `ui://` resource of type `text/html;profile=mcp-app`, with how the host
/// sandboxes it. Register it with [`Server::resource`](crate::Server::resource).
///
/// The HTML is a whole document the host loads in a sandboxed frame, where it talks to the
/// host over `postMessage` (JSON-RPC: `ui/initialize`, then tool input and results, and
/// `tools/call` to this server's tools). Give it as a string ([`App::html`], with
/// `include_str!` for a file kept beside the code) or make it per read ([`App::from_fn`]).
pub struct App {
    resource: Resource,
    ui: UiResourceMeta,
    html: Html,
}

enum Html {
    Fixed(Arc<str>),
    Made(Arc<dyn Fn(Ctx) -> BoxFuture<'static, Result<String, ToolError>> + Send + Sync>),
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let html = match &self.html {
            Html::Fixed(text) => format!("{} bytes", text.len()),
            Html::Made(_) => "made per read".to_owned(),
        };
        f.debug_struct("App").field("resource", &self.resource).field("ui", &self.ui).field("html", &html).finish()
    }
}

impl App {
    /// The app at `uri` (`ui://…`), whose document is `html`:
    /// `App::html("ui://deploy/review", include_str!("review.html"))`.
    pub fn html(uri: impl Into<String>, html: impl Into<String>) -> Self {
        Self::with(uri.into(), Html::Fixed(html.into().into()))
    }

    /// The app at `uri`, whose document `make` writes each time a host reads it (from the
    /// handler's [`Ctx`]: state, the caller).
    pub fn from_fn<F, Fut>(uri: impl Into<String>, make: F) -> Self
    where
        F: Fn(Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        Self::with(uri.into(), Html::Made(Arc::new(move |ctx| Box::pin(make(ctx)))))
    }

    fn with(uri: String, html: Html) -> Self {
        // The name defaults to the URI's path: `ui://deploy/review` is `deploy/review`.
        let name = uri.strip_prefix(SCHEME).unwrap_or(&uri).to_owned();
        let resource = Resource::new(uri, name).mime_type(MIME_TYPE);
        Self { resource, ui: UiResourceMeta::default(), html }
    }

    /// Its programmatic name (by default the URI without `ui://`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.resource.name = name.into();
        self
    }

    /// The title a person is shown.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
    }

    /// What it shows.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// The origins it may reach. Without one, the host allows none (inline scripts and
    /// styles, and `data:` images, still run).
    pub fn csp(mut self, csp: Csp) -> Self {
        self.ui.csp = Some(csp);
        self
    }

    /// The browser features it asks for.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.ui.permissions = Some(permissions);
        self
    }

    /// A dedicated sandbox origin, in the form the host documents.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.ui.domain = Some(domain.into());
        self
    }

    /// Whether the host draws a border and background around it (hosts' defaults differ,
    /// so saying is better).
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.ui.prefers_border = Some(border);
        self
    }
}

impl From<App> for ResourceRoute {
    fn from(app: App) -> Self {
        let uri: Arc<str> = app.resource.uri.as_str().into();
        let meta = contents_meta(&app.ui);
        let unfit = (!is_app_uri(&uri)).then(|| format!("an app's URI must be ui://…, not {uri:?}"));
        let html = Arc::new(app.html);
        let mut route = app.resource.handler(move |ctx| {
            let (uri, meta, html) = (uri.clone(), meta.clone(), html.clone());
            async move {
                let text = match &*html {
                    Html::Fixed(text) => text.to_string(),
                    Html::Made(make) => make(ctx).await?,
                };
                let contents =
                    ResourceContents::Text { uri: uri.to_string(), mime_type: Some(MIME_TYPE.to_owned()), text, meta };
                Ok(ReadResourceResult { contents: vec![contents], meta: None })
            }
        });
        route.unfit = unfit;
        route
    }
}

/// `_meta` of an app's contents: `{ "ui": … }`, or none when nothing is set.
fn contents_meta(ui: &UiResourceMeta) -> Option<JsonObject> {
    let ui = serde_json::to_value(ui).ok().filter(|ui| ui.as_object().is_some_and(|ui| !ui.is_empty()))?;
    Some(JsonObject::from_iter([("ui".to_owned(), ui)]))
}

impl ToolRoute {
    /// Shows this tool's result in the app at `uri` (`_meta.ui.resourceUri`): a host that
    /// renders apps loads it and hands it the call's arguments and result. Register the
    /// [`App`] too. Refused at registration unless `uri` is `ui://…`.
    pub fn app(mut self, uri: impl Into<String>) -> Self {
        let uri = uri.into();
        if !is_app_uri(&uri) {
            self.unfit = Some(format!("a tool's app must be a ui:// resource, not {uri:?}"));
        }
        self.ui_meta().insert("resourceUri".into(), Value::String(uri));
        self
    }

    /// Who may call this tool (`_meta.ui.visibility`; by default the model and the app).
    /// [`Visibility::App`] keeps it from the model: from clients without the extension
    /// too, which are not shown it and cannot call it.
    pub fn visibility(mut self, visibility: Visibility) -> Self {
        self.ui_meta().insert("visibility".into(), visibility.as_json());
        self.visibility = visibility;
        self
    }

    fn ui_meta(&mut self) -> &mut JsonObject {
        let meta = self.tool.meta.get_or_insert_with(JsonObject::new);
        let ui = meta.entry("ui").or_insert_with(|| Value::Object(JsonObject::new()));
        if !ui.is_object() {
            *ui = Value::Object(JsonObject::new());
        }
        ui.as_object_mut().expect("made an object above")
    }
}

/// Whether only an app may call `route`'s tool.
pub(crate) fn app_only(route: &ToolRoute) -> bool {
    route.visibility == Visibility::App
}

/// `tool` as a client without the extension is shown it: without `_meta.ui`.
pub(crate) fn without_app(tool: &Tool) -> Cow<'_, Tool> {
    let Some(meta) = tool.meta.as_ref().filter(|meta| meta.contains_key("ui")) else {
        return Cow::Borrowed(tool);
    };
    let mut plain = tool.clone();
    let mut meta = meta.clone();
    meta.remove("ui");
    plain.meta = (!meta.is_empty()).then_some(meta);
    Cow::Owned(plain)
}

/// Whether `resource` is an app.
pub(crate) fn is_app(resource: &Resource) -> bool {
    resource.mime_type.as_deref() == Some(MIME_TYPE)
}

/// Whether the catalog holds an app, or a tool that names one: the server then declares
/// the extension.
pub(crate) fn serves_apps(catalog: &Catalog) -> bool {
    let app = |entry: &ResourceKind| matches!(entry, ResourceKind::Static(r) if is_app(r));
    catalog.resources.iter().any(|entry| app(&entry.route.kind))
        || catalog.tools.iter().any(|entry| entry.route.tool.meta.as_ref().is_some_and(|meta| meta.contains_key("ui")))
}
