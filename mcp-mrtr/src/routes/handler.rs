//! What handlers are made of, beyond the route types at the crate root: what a handler may
//! return ([`IntoToolResult`], [`IntoPromptResult`], [`IntoResourceResult`], [`Json`]),
//! the groups the `tools!`-style macros and `#[toolbox]` make ([`Routes`], [`Toolbox`]),
//! and whether a tool may run as a task ([`TaskSupport`]).
//!
//! The `#[tool]`/`#[prompt]`/`#[resource]` macros build routes; by hand, build them from
//! the protocol's metadata types: [`Tool::handler`](crate::protocol::Tool::handler),
//! [`Prompt::handler`](crate::protocol::Prompt::handler),
//! [`Resource::handler`](crate::protocol::Resource::handler) and
//! [`ResourceTemplate::handler`](crate::protocol::ResourceTemplate::handler).

// For maintainers:
//
// Handlers as the dispatcher stores them: a listing entry plus a boxed async function.
//
// Users build routes from the protocol's metadata types: [`Tool::handler`],
// [`Prompt::handler`], [`Resource::handler`] and [`ResourceTemplate::handler`]. The
// `#[tool]`/`#[prompt]`/`#[resource]` macros generate the same routes.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::base::error::Error;
use crate::base::error::ToolError;
use crate::base::uri_template::UriTemplate;
use crate::mrtr::context::Ctx;
use crate::protocol::{
    CacheHints, CallToolResult, GetPromptResult, JsonObject, Method, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};

mod attach;
mod requires;
mod results;
mod shown;

pub(crate) use self::requires::Requires;

pub(crate) use self::results::{declined_prompt, declined_read};
pub use self::results::{IntoPromptResult, IntoResourceResult, IntoToolResult, Json};

type HandlerFn<I, O> = Arc<dyn Fn(Ctx, I) -> BoxFuture<'static, Result<O, ToolError>> + Send + Sync>;

/// Whether a tool may run as a task (`#[tool(task = "…")]`, [`ToolRoute::task`](crate::ToolRoute::task)).
///
/// A task is only ever created for a client that declared the tasks extension on the
/// `tools/call` itself; others get the result in rounds (or `-32021` for a required one).
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
/// use serde_json::json;
///
/// /// Exports every record: slow, so it may run as a task.
/// #[tool(task = "optional")] // `ToolRoute::task(TaskSupport::Optional)`
/// async fn export(ctx: &Ctx) -> Result<String, ToolError> {
///     ctx.continue_as_task().await;
///     Ok("exported".into())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::new("exports", "1.0.0").tool(export);
/// // A client that declares the tasks extension gets a task id at once…
/// let created = TestClient::new(server.clone()).call_tool("export", json!({})).start().await;
/// assert!(created.task_id().is_some());
/// // …one that does not gets the result in rounds, as from any tool.
/// let plain = TestClient::new(server).with_capabilities(json!({ "elicitation": {} }));
/// let done = plain.call_tool("export", json!({})).start().await;
/// assert_eq!(done.text().as_deref(), Some("exported"));
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: the call runs in rounds.
    #[default]
    Forbidden,
    /// A task when the client declared tasks; rounds otherwise.
    Optional,
    /// Only as a task: a client that did not declare tasks gets `-32021`.
    Required,
}

/// A tool and the function that runs it. Register it with [`Server::tool`](crate::Server::tool).
///
/// `#[tool]` makes one of a function ([`Tool::handler`] of a closure); its methods adjust
/// it before it is registered:
///
/// ```
/// use std::time::Duration;
///
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::{handler::TaskSupport, ToolRoute};
///
/// /// Builds the monthly report.
/// #[tool]
/// async fn report() -> Result<String, ToolError> {
///     Ok("report ready".into())
/// }
///
/// let route = ToolRoute::from(report)
///     // Slower than the server's 60 s default allows.
///     .timeout(Duration::from_secs(300))
///     .task(TaskSupport::Optional)
///     .requires_scopes(["reports:write"]);
/// let server = Server::new("reports", "1.0.0").tool(route);
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct ToolRoute {
    pub(crate) tool: Tool,
    pub(crate) call: HandlerFn<JsonObject, CallToolResult>,
    pub(crate) requires: Requires,
    /// Overrides the server's handler time limit for this tool.
    pub(crate) timeout: Option<Duration>,
    pub(crate) task: TaskSupport,
    /// Overrides the server's time limit for one run of this tool as a task.
    pub(crate) task_timeout: Option<Duration>,
    /// The arguments without the fields the handler's argument type skips: what a task
    /// of this tool keeps in its record.
    pub(crate) decoded_arguments: fn(&JsonObject) -> JsonObject,
    /// Parameters mirrored into `Mcp-Param-*` headers, read from the schema at registration.
    pub(crate) headers: Vec<crate::base::header_values::ParamHeader>,
    /// Why registration refuses the route (a form type that cannot be a form, a structured
    /// result that is not an object), found when the macro's route was built.
    pub(crate) unfit: Option<String>,
    /// Who may call it (`_meta.ui.visibility`), typed once when the route is built rather
    /// than read back from the JSON on every call.
    pub(crate) visibility: crate::protocol::apps::Visibility,
}

impl ToolRoute {
    /// How long one run of this tool may take, instead of the server's
    /// [`Server::handler_timeout`](crate::Server::handler_timeout): longer for a tool
    /// known to be slow, shorter for one that must be quick. Past it the call fails with
    /// `-32603` "timed out after …". Applies on every transport, stdio included.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Lets the tool run as a task (the tasks extension) for clients that declare it.
    ///
    /// Such a call runs as usual until the handler waits on its own work (a timer, I/O)
    /// or calls [`Ctx::continue_as_task`]: from there on it is a task, answered with a
    /// task id at once. Asks before that point are ordinary rounds; asks after it are
    /// the task's `inputRequests`.
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.task = support;
        self
    }

    /// How long one run of this tool as a task may take, instead of the server's
    /// [`TaskLimits::run_timeout`](crate::tasks::TaskLimits::run_timeout): longer for a job known
    /// to take hours, shorter for one that must not hold a run slot long. Past it the
    /// task fails with `-32603` "the task timed out after …".
    pub fn task_timeout(mut self, limit: Duration) -> Self {
        self.task_timeout = Some(limit);
        self
    }

    /// The handler's future, with execution errors as `isError` results.
    pub(crate) fn run(&self, ctx: Ctx, args: JsonObject) -> BoxFuture<'static, Result<CallToolResult, Error>> {
        let run = (self.call)(ctx, args);
        Box::pin(async move {
            match run.await {
                Ok(result) => Ok(result),
                Err(error) => error.into_parts().map(CallToolResult::error),
            }
        })
    }
}

/// A prompt and the function that renders it. Register it with
/// [`Server::prompt`](crate::Server::prompt).
///
/// `#[prompt]` makes one of a function ([`Prompt::handler`] of a closure). Here it is
/// limited to callers granted a scope:
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::PromptRoute;
/// use serde_json::json;
///
/// /// Drafts a commit message for a change.
/// #[prompt]
/// async fn commit_message(change: String) -> Result<Vec<PromptMessage>, ToolError> {
///     Ok(vec![PromptMessage::user(format!("Write a commit message for: {change}"))])
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let route = PromptRoute::from(commit_message).requires_scopes(["repo:read"]);
/// let server = Server::new("git", "1.0.0").prompt(route);
/// let anonymous = TestClient::new(server.clone());
/// let refused = anonymous.get_prompt("commit_message", json!({ "change": "fix typo" })).start().await;
/// assert_eq!(refused.error().unwrap().http_status(), 403);
/// let reader = TestClient::new(server).as_caller(Caller::new("ann").with_scopes(["repo:read"]));
/// let got = reader.get_prompt("commit_message", json!({ "change": "fix typo" })).start().await;
/// assert_eq!(got.text().as_deref(), Some("Write a commit message for: fix typo"));
/// # }
/// ```
#[derive(Clone)]
pub struct PromptRoute {
    pub(crate) prompt: Prompt,
    pub(crate) get: HandlerFn<JsonObject, GetPromptResult>,
    pub(crate) requires: Requires,
    /// Why registration refuses the route (a form type that cannot be a form, a structured
    /// result that is not an object), found when the macro's route was built.
    pub(crate) unfit: Option<String>,
}

/// A resource, or a resource template, and the function that reads it. Register it with
/// [`Server::resource`](crate::Server::resource).
///
/// `#[resource(uri = "…")]` makes one of a function; [`Resource::handler`] and
/// [`ResourceTemplate::handler`] of a closure, as here:
///
/// ```
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::{protocol::ResourceContents, protocol::ResourceTemplate, Server, ToolError};
///
/// /// The template's variables, taken from the URI read.
/// #[derive(serde::Deserialize)]
/// struct Note { id: String }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let notes = ResourceTemplate::new("notes://{id}", "note").handler(|_ctx, note: Note| async move {
///     let uri = format!("notes://{}", note.id);
///     Ok::<_, ToolError>(ResourceContents::text(uri, "text/plain", format!("Note {}", note.id)))
/// });
/// let client = TestClient::new(Server::new("notes", "1.0.0").resource(notes));
/// let read = client.read_resource("notes://42").start().await;
/// assert_eq!(read.complete().unwrap()["contents"][0]["text"], "Note 42");
/// # }
/// ```
#[derive(Clone)]
pub struct ResourceRoute {
    pub(crate) kind: ResourceKind,
    pub(crate) read: HandlerFn<JsonObject, ReadResourceResult>,
    pub(crate) requires: Requires,
    /// Why registration refuses the route (a form type that cannot be a form, a structured
    /// result that is not an object), found when the macro's route was built.
    pub(crate) unfit: Option<String>,
}

/// What `#[tool]`, `#[prompt]` and `#[resource]` make of a function: a function of the
/// same name returning its route, so `server.tool(weather)` registers it as it stands.
macro_rules! from_route_fn {
    ($($route:ty),*) => {$(
        impl<F: FnOnce() -> $route> From<F> for $route {
            fn from(route: F) -> Self {
                route()
            }
        }
    )*};
}

from_route_fn!(ToolRoute, PromptRoute, ResourceRoute);

/// A request method of the server's own, for an extension it declares
/// ([`Server::declare_extension`](crate::Server::declare_extension)): its name, its handler, and what a
/// caller needs to reach it. Register it with [`Server::method`](crate::Server::method).
///
/// It is served like the built-in methods: on both protocol revisions and every
/// transport, through the same limits, authorization ([`requires_scopes`](Self::requires_scopes))
/// and visibility filter ([`Item::Method`](crate::catalog::Item::Method)); its complete results
/// are stamped with `resultType` and `serverInfo`, and with caching hints when
/// [`cache_hints`](Self::cache_hints) says so. The handler may ask (through
/// [`Ctx::ask`]), in rounds like a tool's.
///
/// ```
/// use mcp_mrtr::{MethodRoute, Server, ToolError};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize)]
/// struct Search { query: String }
///
/// #[derive(Serialize)]
/// struct Hits { hits: Vec<String> }
///
/// let server = Server::new("acme", "1.0.0")
///     .declare_extension("com.acme/search", serde_json::json!({}))
///     .method(MethodRoute::new("acme/search", |_ctx, params: Search| async move {
///         Ok::<_, ToolError>(Hits { hits: vec![format!("found {}", params.query)] })
///     }));
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct MethodRoute {
    pub(crate) name: String,
    pub(crate) run: HandlerFn<Value, Value>,
    pub(crate) requires: Requires,
    /// The hints its complete results carry; none when `None`.
    pub(crate) cache: Option<CacheHints>,
}

impl MethodRoute {
    /// The method `name`, answered by `handler`: its params (without `_meta` and the
    /// round's `inputResponses`/`requestState`) decode into `P`, `-32602` when they do
    /// not; its result must serialize to a JSON object. A `ToolError` from the handler is
    /// a JSON-RPC error (`-32603`, or the protocol error it carries).
    pub fn new<P, R, F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + Send + 'static,
        F: Fn(Ctx, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let run: HandlerFn<Value, Value> = Arc::new(move |ctx, params| {
            let handler = handler.clone();
            Box::pin(async move {
                let params =
                    P::deserialize(params).map_err(|e| ToolError::invalid_params(format!("Invalid params: {e}")))?;
                let result = serde_json::to_value(handler(ctx, params).await?)
                    .map_err(|e| ToolError::protocol(Error::internal(format!("cannot serialize a result: {e}"))))?;
                if !result.is_object() {
                    return Err(ToolError::protocol(Error::internal("a method's result must be a JSON object")));
                }
                Ok(result)
            })
        });
        Self { name: name.into(), run, requires: Requires::default(), cache: None }
    }

    /// Stamps `ttlMs` and `cacheScope` on its complete results, as on the built-in lists
    /// (a result that took answers is never shared: `private`, 0).
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.cache = Some(hints);
        self
    }

    /// The method's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

#[derive(Clone)]
pub(crate) enum ResourceKind {
    Static(Resource),
    Template(ResourceTemplate, UriTemplate),
}

/// A struct whose `&self` methods are handlers: implemented by [`toolbox`](crate::toolbox)
/// on its `impl` block, registered with [`Server::toolbox`](crate::Server::toolbox).
pub trait Toolbox: Send + Sync + 'static {
    /// The routes of every handler method, each sharing `self`.
    fn routes(self: Arc<Self>) -> Routes;
}

/// A toolbox given to the server: the struct itself, or an `Arc` of it the caller keeps
/// a clone of.
pub trait Shared<T> {
    /// The `Arc` the routes share.
    fn shared(self) -> Arc<T>;
}

impl<T: Toolbox> Shared<T> for T {
    fn shared(self) -> Arc<T> {
        Arc::new(self)
    }
}

impl<T: Toolbox> Shared<T> for Arc<T> {
    fn shared(self) -> Arc<T> {
        self
    }
}

/// The routes a [`Toolbox`] registers.
#[derive(Default)]
pub struct Routes {
    /// Its tools, in declaration order.
    pub tools: Vec<ToolRoute>,
    /// Its prompts.
    pub prompts: Vec<PromptRoute>,
    /// Its resources and resource templates.
    pub resources: Vec<ResourceRoute>,
}

/// Prompt arguments as a plain map, for prompts that take them raw.
pub type PromptArguments = BTreeMap<String, String>;

/// Whether `name` may name a tool: 1 to 64 characters of `A-Z a-z 0-9 _ . / -`.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'))
}

impl ResourceKind {
    /// The URI or URI template that identifies this route.
    pub(crate) fn key(&self) -> &str {
        match self {
            Self::Static(resource) => &resource.uri,
            Self::Template(template, _) => &template.uri_template,
        }
    }
}

/// Why `name` cannot name a method of the server's own, if it cannot.
pub(crate) fn check_method_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{name:?} is not a method name: it must be non-empty, without spaces"));
    }
    // The protocol's own (and its extensions'), of either revision, removed ones included.
    if Method::parse(name).is_some() || name.starts_with("notifications/") {
        return Err(format!("{name:?} is one of the protocol's own methods"));
    }
    Ok(())
}
