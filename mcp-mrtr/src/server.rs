//! [`Server`]: the builder that registers handlers and describes the server.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::http::{Extensions, HeaderMap};
use futures_util::future::BoxFuture;

use crate::context::Transport;
use crate::app_state::AppState;
use crate::handler::{TaskSupport, PromptRoute, ResourceKind, ResourceRoute, Routes, ToolRoute, Toolbox};
use crate::live::{Item, Listen, Live, LiveConfig, Prepared, RequestView, ServerHandle};
use crate::protocol::{
    CompleteParams, Completion, Implementation, JsonObject, PromptsCapability, ResourcesCapability, ServerCapabilities,
    ToolsCapability,
};
use crate::state::KeyError;
use crate::{Caller, Ctx, Error, MemoryGuard, StateConfig, StateGuard, TaskStore, ToolError};

pub(crate) type PrincipalFn = Arc<dyn Fn(&HeaderMap) -> Option<String> + Send + Sync>;

pub(crate) type CompletionFn =
    Arc<dyn Fn(Ctx, CompleteParams) -> BoxFuture<'static, Result<Completion, ToolError>> + Send + Sync>;

/// Who may cache a cacheable result (`cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheScope {
    /// Identical for every caller; intermediaries may share it.
    Public,
    /// Specific to the caller's authorization context.
    #[default]
    Private,
}

impl CacheScope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

/// The caching hints (`ttlMs`, `cacheScope`) stamped on complete results of
/// `server/discover`, the `*/list` methods and `resources/read`.
///
/// The default, `ttlMs: 0` and `private`, lets no one reuse a result: opt in to caching
/// when your lists are stable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}

/// An MCP server: its identity and its tools, prompts and resources.
///
/// Build one, then serve it with [`Server::serve_stdio`], [`Server::serve_http`] or
/// mount [`Server::into_router`] in an axum app.
///
/// ```
/// use mcp_mrtr::{Server, Tool, ToolError};
///
/// let server = Server::new("greeter", "1.0.0").tool(
///     Tool::new("hello")
///         .description("Says hello")
///         .handler(|_ctx, _args: serde_json::Map<String, serde_json::Value>| async {
///             Ok::<_, ToolError>("Hello!")
///         }),
/// );
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) info: Implementation,
    /// `info` as JSON, stamped on every modern result.
    pub(crate) info_json: Arc<str>,
    pub(crate) instructions: Option<String>,
    /// Tools, prompts and resources: shared with every clone and [`ServerHandle`].
    pub(crate) live: Arc<Live>,
    pub(crate) live_config: LiveConfig,
    /// The list and discovery bodies of the current catalog, serialized once.
    pub(crate) prepared: Prepared,
    pub(crate) completion: Option<CompletionFn>,
    pub(crate) logging: bool,
    pub(crate) cache: CacheHints,
    /// The sealing configuration: set with [`Server::request_state`], or resolved from the
    /// environment once, when serving starts. Clones share it.
    pub(crate) state: Arc<OnceLock<StateConfig>>,
    principal: Option<PrincipalFn>,
    /// Refuses a second claim of one state; `None` only after [`Server::reusable_states`].
    pub(crate) state_guard: Option<Arc<dyn StateGuard>>,
    pub(crate) bridge_answer_timeout: Duration,
    pub(crate) app: AppState,
    pub(crate) tasks: crate::tasks::Tasks,
}

impl Server {
    /// A server with this name and version and nothing registered yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        let live = Arc::new(Live::default());
        let mut app = AppState::default();
        // Handlers reach the handle like any state: `ctx.server_handle()` or `State<ServerHandle>`.
        app.insert(ServerHandle { live: live.clone() });
        let info = Implementation::new(name, version);
        // Strings only: it serializes (the fallback is never taken).
        let info_json = serde_json::to_string(&info).unwrap_or_else(|_| "{}".into()).into();
        Self {
            info,
            info_json,
            instructions: None,
            live,
            live_config: LiveConfig::default(),
            prepared: Prepared::default(),
            completion: None,
            logging: false,
            cache: CacheHints::default(),
            state: Arc::default(),
            principal: None,
            state_guard: Some(Arc::new(MemoryGuard::new())),
            bridge_answer_timeout: crate::context::ANSWER_TIMEOUT,
            app,
            tasks: crate::tasks::Tasks::default(),
        }
    }

    /// Free text telling the model how to use this server, sent by `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Registers a tool. Tools are listed in registration order.
    ///
    /// A server and its clones share one catalog, which
    /// [`server_handle`](Self::server_handle) changes at run time.
    ///
    /// # Panics
    ///
    /// If the name is not 1–64 characters of `[A-Za-z0-9_./-]`, or is taken, or the input
    /// schema's `x-mcp-header` annotations break the rules of SEP-2243 (a header name
    /// token, unique ignoring case, on string, integer or boolean parameters only).
    pub fn tool(self, tool: impl Into<ToolRoute>) -> Self {
        if let Err(problem) = self.server_handle().add_tool(tool) {
            panic!("{problem}");
        }
        self
    }

    /// Registers several tools.
    pub fn tools<T: Into<ToolRoute>>(self, tools: impl IntoIterator<Item = T>) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// Registers the handlers of a struct whose `impl` block carries
    /// [`toolbox`](crate::toolbox): its `#[tool]`, `#[prompt]` and `#[resource]` methods,
    /// sharing one `Arc` of it. Pass the struct or an `Arc` you keep a clone of.
    ///
    /// # Panics
    ///
    /// As [`Server::tool`] and [`Server::prompt`], when a name is taken.
    pub fn toolbox<T: Toolbox>(self, toolbox: impl crate::handler::Shared<T>) -> Self {
        let Routes { tools, prompts, resources } = toolbox.shared().routes();
        self.tools(tools).prompts(prompts).resources(resources)
    }

    /// Registers a prompt.
    ///
    /// # Panics
    ///
    /// If a prompt with the same name is registered already.
    pub fn prompt(self, prompt: impl Into<PromptRoute>) -> Self {
        if let Err(problem) = self.server_handle().add_prompt(prompt) {
            panic!("{problem}");
        }
        self
    }

    /// Registers several prompts.
    pub fn prompts<P: Into<PromptRoute>>(self, prompts: impl IntoIterator<Item = P>) -> Self {
        prompts.into_iter().fold(self, Self::prompt)
    }

    /// Registers several resources.
    pub fn resources<R: Into<ResourceRoute>>(self, resources: impl IntoIterator<Item = R>) -> Self {
        resources.into_iter().fold(self, Self::resource)
    }

    /// Registers a resource or a resource template.
    ///
    /// # Panics
    ///
    /// If a resource with the same URI, or a template with the same URI template, is
    /// registered already.
    pub fn resource(self, resource: impl Into<ResourceRoute>) -> Self {
        if let Err(problem) = self.server_handle().add_resource(resource) {
            panic!("{problem}");
        }
        self
    }

    /// A handle that changes this server's tools, prompts and resources while it runs
    /// and announces resource updates (see [`ServerHandle`]). Handlers get the same
    /// handle from [`Ctx::server_handle`].
    pub fn server_handle(&self) -> ServerHandle {
        ServerHandle { live: self.live.clone() }
    }

    /// Serves `subscriptions/listen`, so clients hear of list changes and resource
    /// updates, and advertises `listChanged` (and `resources.subscribe`) accordingly.
    pub fn listen(mut self, listen: Listen) -> Self {
        self.live.set_fanout(listen.fanout.clone());
        self.live_config.listen = Some(listen);
        self
    }

    /// Decides, per request, which tools, prompts and resources it sees: `tools/list`
    /// and the other lists leave out the rest, and calling, getting or reading one of
    /// them fails as for an unknown name. The view gives the caller, the client's
    /// capabilities and the request's extensions. Lists that vary by caller are never
    /// shared: their `cacheScope` is `private` whatever the [`CacheHints`] say.
    ///
    /// ```
    /// use mcp_mrtr::{Item, Server};
    ///
    /// // Tools named `admin/…` only for callers with the `admin` scope.
    /// let server = Server::new("s", "1").visible(|view, item| match item {
    ///     Item::Tool(tool) if tool.name.starts_with("admin/") => {
    ///         view.caller().is_some_and(|caller| caller.has_scope("admin"))
    ///     }
    ///     _ => true,
    /// });
    /// # let _ = server;
    /// ```
    pub fn visible<F>(mut self, filter: F) -> Self
    where
        F: Fn(&RequestView<'_>, Item<'_>) -> bool + Send + Sync + 'static,
    {
        self.live_config.visible = Some(Arc::new(filter));
        self
    }

    /// How many entries one page of `tools/list`, `prompts/list`, `resources/list` or
    /// `resources/templates/list` holds (default 100); clients follow `nextCursor` for
    /// the rest. `usize::MAX` sends every list whole.
    pub fn page_size(mut self, entries: usize) -> Self {
        self.live_config.page_size = entries.max(1);
        self
    }

    /// Answers `completion/complete` with this function, and advertises `completions`.
    pub fn completion<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, CompleteParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, ToolError>> + Send + 'static,
    {
        self.completion = Some(Arc::new(move |ctx, params| Box::pin(f(ctx, params))));
        self
    }

    /// Advertises `logging`, so [`Ctx::log`] reaches requests that opt in.
    pub fn logging(mut self, enabled: bool) -> Self {
        self.logging = enabled;
        self
    }

    /// Sets the caching hints of cacheable results.
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.cache = hints;
        self
    }

    /// How `requestState` is sealed. Without this, the keys in `MCP_MRTR_STATE_KEYS`
    /// are used, or else a random key of this server's own (states then open only on
    /// this server, until it restarts). The environment is read when serving starts,
    /// and a malformed value fails it there.
    pub fn request_state(mut self, config: StateConfig) -> Self {
        self.state = Arc::new(OnceLock::from(config));
        self
    }

    /// Gives handlers a value of type `T` (a database pool, a config, an HTTP client):
    /// they take it as a `State<T>` parameter or through [`Ctx::state`]. One value per
    /// type; giving a second `T` replaces the first. Handlers share the one value behind
    /// an `Arc`, so use interior mutability (a `Mutex`, a pool) for anything they change.
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.app.insert(value);
        self
    }

    /// Binds every `requestState` to the caller this function names from the HTTP
    /// headers, for requests that carry no authenticated [`Caller`](crate::Caller) (which
    /// binds them by itself): a state issued to one caller does not open for another.
    /// Only for headers a proxy in front has verified: a client can send any header.
    ///
    /// The names it returns are its own: `alice` from this hook is never the same caller
    /// as an authenticated `Caller` with the id `alice`, so a request that reaches the hook
    /// cannot pass for one that was authenticated.
    pub fn principal<F>(mut self, principal: F) -> Self
    where
        F: Fn(&HeaderMap) -> Option<String> + Send + Sync + 'static,
    {
        self.principal = Some(Arc::new(principal));
        self
    }

    /// Remembers claimed states with `guard` instead of the default
    /// [`MemoryGuard`](crate::MemoryGuard): a round claims its request state before its
    /// first `once!` step runs, and a second claim of the same state is refused like a
    /// tampered state (rounds that take no step claim nothing). `MemoryGuard` serves one
    /// instance; several instances behind a load balancer need a [`StateGuard`] backed by
    /// a store they share (the `redis` feature's `RedisGuard`), or a state could be
    /// replayed once on each.
    pub fn single_use_states(mut self, guard: impl StateGuard) -> Self {
        self.state_guard = Some(Arc::new(guard));
        self
    }

    /// How long a 2025-11-25 client has to answer the questions the bridge asks it in one
    /// round (default 5 minutes: a person may be filling in a form). Past it, the questions
    /// still open are withdrawn with `notifications/cancelled` and the call fails with
    /// `-32603`, naming the question that expired. The handler is held (as a suspended
    /// future) while it waits, so a shorter limit frees abandoned calls sooner.
    /// 2026-07-28 clients are not affected: their rounds hold nothing on the server.
    pub fn bridge_answer_timeout(mut self, timeout: Duration) -> Self {
        self.bridge_answer_timeout = timeout;
        self
    }

    /// Where task records live (default: a [`MemoryTaskStore`](crate::MemoryTaskStore), for one instance).
    /// Several instances serving the same tasks need a store they share (the `redis`
    /// feature's `RedisTaskStore`).
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.tasks.store = Arc::new(store);
        self
    }

    /// How long a task's record is kept after the task is created (default one hour);
    /// `None` keeps it as long as the store does. After that, `tasks/get` no longer
    /// knows the task. A task that finished is kept for a shorter time, within this:
    /// [`TaskLimits::keep_finished`](crate::TaskLimits::keep_finished).
    pub fn task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.tasks.ttl = ttl;
        self
    }

    /// How many tasks this instance holds and runs, for how long, and how big their
    /// arguments may be: see [`TaskLimits`](crate::TaskLimits) for each bound, its
    /// default and the memory it allows.
    pub fn task_limits(mut self, limits: crate::TaskLimits) -> Self {
        self.tasks = self.tasks.with_limits(limits);
        self
    }

    /// How long a running task's lease lasts unless renewed (default 10 s, at least
    /// 300 ms). The instance running a task renews it every third of this; every
    /// instance looks for lapsed leases every half of it and takes those tasks over,
    /// replaying the handler from the task's journal. So a task whose instance died
    /// resumes within about 1.5× this, and a `tasks/cancel` received by another instance
    /// stops the handler within a third of it. Shorter means faster takeover and more
    /// store writes (one per running task per renewal).
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.tasks.lease = lease.max(crate::tasks::MIN_LEASE);
        self
    }

    /// Gives back the tasks running on this instance, as a graceful shutdown does: their
    /// handlers are dropped and their leases released, so another instance sharing the
    /// task store takes them over at once, replaying them from their journals. After it,
    /// this server takes no task over. `serve_http*` and `serve_stdio` call it after
    /// their drain; call it yourself when you serve the router another way.
    pub async fn hand_back_tasks(&self) {
        self.tasks.hand_back().await;
    }

    /// Lets a round take its `once!` steps however often its request state is presented
    /// within its lifetime: a client replaying an older state runs that round's steps
    /// again. Only for servers whose steps are harmless to re-run. (Rounds without a
    /// `once!` step may be presented again either way.)
    pub fn reusable_states(mut self) -> Self {
        self.state_guard = None;
        self
    }

    /// Everything that must hold before serving: every `State<T>` given, and the
    /// request-state keys usable. Each way of serving calls this first.
    pub(crate) fn check_ready(&self) -> std::io::Result<()> {
        self.check_state().map_err(std::io::Error::other)?;
        self.resolve_state().map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
        Ok(())
    }

    /// Resolves the sealing configuration now: the one given, or the environment's keys,
    /// or a random key (announced once on stderr). Every way of serving calls this before
    /// the first request, so a malformed `MCP_MRTR_STATE_KEYS` fails at start-up.
    pub(crate) fn resolve_state(&self) -> Result<&StateConfig, KeyError> {
        if let Some(config) = self.state.get() {
            return Ok(config);
        }
        let config = StateConfig::from_env_or_random()?;
        Ok(self.state.get_or_init(|| config))
    }

    /// The sealing configuration, for a request.
    pub(crate) fn state_config(&self) -> Result<&StateConfig, Error> {
        self.resolve_state().map_err(|error| {
            tracing::error!(%error, "cannot seal request states");
            Error::internal("the server's request-state keys are misconfigured")
        })
    }

    /// Who a request's sealed state (and session, and task) is bound to: its
    /// authenticated caller, else what the principal hook names.
    pub(crate) fn principal_of(&self, transport: &Transport) -> Option<String> {
        self.principal_from(transport.headers.as_deref(), &transport.extensions)
    }

    /// Each source names principals in a namespace of its own, tagged in front: an
    /// `x-user: alice` header the hook reads is never the authenticated `Caller("alice")`
    /// (an app whose middleware sets a `Caller` on only some requests). Neither tag is a
    /// prefix of the other, so no two names from different sources can be equal.
    pub(crate) fn principal_from(&self, headers: Option<&HeaderMap>, extensions: &Extensions) -> Option<String> {
        if let Some(caller) = extensions.get::<Caller>() {
            return Some(format!("caller:{}", caller.id()));
        }
        // A panic in the hook is caught with the rest of the request (`Server::handle`).
        let named = self.principal.as_ref().zip(headers).and_then(|(principal, headers)| principal(headers))?;
        Some(format!("hook:{named}"))
    }

    /// Refuses to serve when a handler takes `State<T>` and the server was given no `T`:
    /// found when serving starts, never on a client's call.
    pub(crate) fn check_state(&self) -> Result<(), String> {
        let catalog = self.catalog();
        let routes = catalog.tools.iter().map(|t| ("tool", t.route.tool.name.as_str(), &t.route.needs));
        let routes =
            routes.chain(catalog.prompts.iter().map(|p| ("prompt", p.route.prompt.name.as_str(), &p.route.needs)));
        let mut routes =
            routes.chain(catalog.resources.iter().map(|r| ("resource", r.route.kind.key(), &r.route.needs)));
        routes
            .find_map(|(kind, name, needs)| {
                needs.iter().find(|need| !self.app.has(need)).map(|need| {
                    format!(
                    "{kind} `{name}` takes State<{0}>, but the server was given no {0}: call .with_state(…) with one",
                    need.type_name
                )
                })
            })
            .map_or(Ok(()), Err)
    }

    /// The capabilities `server/discover` reports, derived from what is registered so
    /// that they always match the methods the server answers.
    pub fn capabilities(&self) -> ServerCapabilities {
        let present = |yes: bool| yes.then(JsonObject::new);
        let catalog = self.catalog();
        let live = self.live_config.listen.is_some().then_some(true);
        ServerCapabilities {
            tools: catalog.has::<ToolRoute>().then_some(ToolsCapability { list_changed: live }),
            prompts: catalog.has::<PromptRoute>().then_some(PromptsCapability { list_changed: live }),
            resources: catalog
                .has::<ResourceRoute>()
                .then_some(ResourcesCapability { subscribe: live, list_changed: live }),
            completions: present(self.completion.is_some()),
            logging: present(self.logging),
            extensions: self.serves_tasks().then(|| {
                let mut extensions = JsonObject::new();
                extensions.insert(crate::protocol::TASKS_EXTENSION.into(), serde_json::json!({}));
                extensions
            }),
            ..ServerCapabilities::default()
        }
    }

    /// The capabilities a 2025-11-25 session gets: that era hears of changes on a
    /// standalone GET stream, which this server does not offer, so it promises none.
    pub(crate) fn legacy_capabilities(&self) -> ServerCapabilities {
        let mut capabilities = self.capabilities();
        if let Some(tools) = &mut capabilities.tools {
            tools.list_changed = None;
        }
        if let Some(prompts) = &mut capabilities.prompts {
            prompts.list_changed = None;
        }
        if let Some(resources) = &mut capabilities.resources {
            *resources = ResourcesCapability::default();
        }
        capabilities
    }

    /// Whether any tool may run as a task: only then is the extension advertised.
    pub(crate) fn serves_tasks(&self) -> bool {
        self.catalog().tools.iter().any(|t| t.route.task != TaskSupport::Forbidden)
    }

    /// The enabled tool named `name`, as the catalog stands now.
    pub(crate) fn find_tool(&self, name: &str) -> Option<Arc<ToolRoute>> {
        self.catalog().find(name)
    }

    /// The enabled prompt named `name`, as the catalog stands now.
    pub(crate) fn find_prompt(&self, name: &str) -> Option<Arc<PromptRoute>> {
        self.catalog().find(name)
    }
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


impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let catalog = self.catalog();
        f.debug_struct("Server")
            .field("info", &self.info)
            .field("tools", &catalog.tools.iter().map(|t| &t.route.tool.name).collect::<Vec<_>>())
            .field("prompts", &catalog.prompts.iter().map(|p| &p.route.prompt.name).collect::<Vec<_>>())
            .field("resources", &catalog.resources.iter().map(|r| r.route.kind.key()).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}
