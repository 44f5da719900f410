//! [`Server`]: the builder that registers handlers and describes the server. It fills
//! in an `Engine` (dispatch's runtime state) and plugs the extensions into it; the
//! transports take the engine when they serve.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;

use crate::base::error::ToolError;
use crate::bounds::lifetime::Lifetime;
use crate::dispatch::Engine;
use crate::ext::skills::Skills;
use crate::ext::tasks::Tasks;
use crate::intake::request_state::{KeyRing, StateConfig};
use crate::mrtr::context::Ctx;
use crate::protocol::{CacheHints, CompleteParams, Completion, ServerCapabilities};
use crate::routes::catalog::{CatalogHandle, Item, RequestView, Subscriptions};
use crate::routes::handler::{MethodRoute, PromptRoute, ResourceRoute, Routes, ToolRoute, Toolbox};

/// An MCP server: its identity and its tools, prompts and resources.
///
/// Build one, then serve it with [`Server::serve`] on [`Stdio`](crate::stdio::Stdio) or
/// [`Http`](crate::http::Http), or mount [`Server::into_router`] in an axum app.
///
/// ```
/// use mcp_mrtr::{Server, protocol::Tool, ToolError};
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
    /// What serving runs: the builder's methods write into it.
    engine: Engine,
    /// The tasks extension's machinery, plugged into the engine when it is taken.
    tasks: Tasks,
}

impl Server {
    /// A server with this name and version and nothing registered yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self { engine: Engine::new(name, version), tasks: Tasks::default() }
    }

    /// Adds an icon to the server's `serverInfo` (SEP-973), which hosts show beside its
    /// name. Tools, prompts and resources take theirs from their own `icon` methods.
    pub fn icon(mut self, icon: crate::protocol::Icon) -> Self {
        self.engine.info.icons.push(icon);
        self.engine.info_changed();
        self
    }

    /// Free text telling the model how to use this server, sent by `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.engine.instructions = Some(instructions.into());
        self
    }

    /// Registers a tool. Tools are listed in registration order.
    ///
    /// A server and its clones share one catalog, which
    /// [`catalog`](Self::catalog) changes at run time.
    ///
    /// A tool whose name is not 1–64 characters of `[A-Za-z0-9_./-]`, or is taken, or
    /// whose input schema's `x-mcp-header` annotations break the rules of SEP-2243 (a
    /// header name token, unique ignoring case, on string, integer or boolean parameters
    /// only) is refused: serving fails with the reason (see [`Server::serve`]).
    pub fn tool(self, tool: impl Into<ToolRoute>) -> Self {
        let added = self.catalog().tools().add(tool);
        self.unless_refused(added)
    }

    /// Registers several tools.
    pub fn tools<T: Into<ToolRoute>>(self, tools: impl IntoIterator<Item = T>) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// Registers the handlers of a struct whose `impl` block carries
    /// [`toolbox`](crate::toolbox): its `#[tool]`, `#[prompt]` and `#[resource]` methods,
    /// sharing one `Arc` of it. Pass the struct or an `Arc` you keep a clone of.
    ///
    /// Refused as [`Server::tool`] and [`Server::prompt`] refuse, when a name is taken.
    pub fn toolbox<T: Toolbox>(self, toolbox: impl crate::routes::handler::Shared<T>) -> Self {
        let Routes { tools, prompts, resources } = toolbox.shared().routes();
        self.tools(tools).prompts(prompts).resources(resources)
    }

    /// Registers the tools, prompts and resources of a mounted server
    /// ([`Mount`](crate::mount::Mount)): each forwards its requests, rounds and all, to
    /// the upstream; where the upstream announces changes of its lists, they are followed
    /// (from a task of the current runtime) and this server's listeners hear of them.
    /// Refused as [`Server::tool`] refuses, when a name (or a resource's URI) is taken: a
    /// prefix keeps upstreams' tools apart. Completions of its prompts and templates are
    /// asked of the upstream, others of the [`completion`](Self::completion) set before.
    #[cfg(feature = "client")]
    #[cfg_attr(docsrs, doc(cfg(feature = "client")))]
    pub fn mount(mut self, mounted: crate::ext::mount::Mounted) -> Self {
        if let Some(completion) = mounted.completion(self.engine.completion.clone()) {
            self.engine.completion = Some(completion);
        }
        mounted.join_tasks(&mut self.engine.tasks_elsewhere);
        for refused in mounted.register(&self.catalog()) {
            self = self.unless_refused(Err::<(), _>(refused));
        }
        self
    }

    /// Registers a prompt.
    ///
    /// Refused (serving then fails) if a prompt with the same name is registered already.
    pub fn prompt(self, prompt: impl Into<PromptRoute>) -> Self {
        let added = self.catalog().prompts().add(prompt);
        self.unless_refused(added)
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
    /// Refused (serving then fails) if a resource with the same URI, or a template with
    /// the same URI template, is registered already.
    pub fn resource(self, resource: impl Into<ResourceRoute>) -> Self {
        let added = self.catalog().resources().add(resource);
        self.unless_refused(added)
    }

    /// This server, remembering `outcome`'s refusal for serving to report: a builder
    /// reports every configuration mistake in one place, the `Err` of
    /// [`serve`](Server::serve) or [`into_router`](Server::into_router), never as a
    /// panic halfway through building.
    fn unless_refused(mut self, outcome: Result<(), impl std::fmt::Display>) -> Self {
        if let Err(problem) = outcome {
            self.engine.refused.push(problem.to_string());
        }
        self
    }

    /// A handle that changes this server's tools, prompts and resources while it runs
    /// and announces resource updates (see [`CatalogHandle`]). Handlers get the same
    /// handle from [`Ctx::catalog`].
    pub fn catalog(&self) -> CatalogHandle {
        CatalogHandle { catalog: self.engine.catalog.clone() }
    }

    /// Serves subscriptions: `subscriptions/listen` (and a 2025-11-25 session's `GET`
    /// stream), so clients hear of list changes and resource updates, and advertises
    /// `listChanged` (and `resources.subscribe`) accordingly. Without it the lists never
    /// change under a client's feet, as far as it is told.
    pub fn subscriptions(mut self, subscriptions: Subscriptions) -> Self {
        self.engine.catalog.set_fanout(subscriptions.fanout.clone(), subscriptions.share_catalog);
        self.engine.catalog_config.listen = Some(subscriptions);
        self
    }

    /// Decides, per request, which tools, prompts and resources it sees: `tools/list`
    /// and the other lists leave out the rest, and calling, getting or reading one of
    /// them fails as for an unknown name. The view gives the caller, the client's
    /// capabilities and the request's extensions. Lists that vary by caller are never
    /// shared: their `cacheScope` is `private` whatever the [`CacheHints`] say.
    ///
    /// ```
    /// use mcp_mrtr::{catalog::Item, Server};
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
        self.engine.catalog_config.visible = Some(Arc::new(filter));
        self
    }

    /// How many entries one page of `tools/list`, `prompts/list`, `resources/list` or
    /// `resources/templates/list` holds (default 100); clients follow `nextCursor` for
    /// the rest. `usize::MAX` sends every list whole.
    pub fn page_size(mut self, entries: usize) -> Self {
        self.engine.catalog_config.page_size = entries.max(1);
        self
    }

    /// Answers `completion/complete` with this function, and advertises `completions`.
    pub fn completion<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, CompleteParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, ToolError>> + Send + 'static,
    {
        self.engine.completion = Some(Arc::new(move |ctx, params| Box::pin(f(ctx, params))));
        self
    }

    /// Advertises `logging`, so [`Ctx::log`] reaches requests that opt in.
    ///
    /// Logging to the client is **deprecated in 2026-07-28** (SEP-2577), still served
    /// (with `logging/setLevel` for 2025-11-25 sessions). Log with `tracing` on the
    /// server instead, and tell the person how a call goes with [`Ctx::progress`].
    pub fn logging(mut self, enabled: bool) -> Self {
        self.engine.logging = enabled;
        self
    }

    /// Sets the caching hints of cacheable results.
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.engine.cache = hints;
        self
    }

    /// How `requestState` is sealed and made single-use ([`StateConfig`]: keys, lifetime,
    /// size cap, guard). Without keys given, the ones in `MCP_MRTR_STATE_KEYS` are used,
    /// or else a random key of this server's own (states then open only on this server,
    /// until it restarts). The environment is read when serving starts, and a malformed
    /// value fails it there. The same keys authenticate what a shared change fanout
    /// carries between instances ([`FanoutKeys`](crate::catalog::FanoutKeys)), so every
    /// instance needs the same ring.
    pub fn request_state(mut self, config: StateConfig) -> Self {
        self.engine.state = config;
        self.engine.sealer = Arc::default();
        self
    }

    /// Gives handlers a value of type `T` (a database pool, a config, an HTTP client):
    /// they take it as a `State<T>` parameter or through [`Ctx::state`]. One value per
    /// type; giving a second `T` replaces the first. Handlers share the one value behind
    /// an `Arc`, so use interior mutability (a `Mutex`, a pool) for anything they change.
    ///
    /// The value lives in this process: each instance of a server behind a load balancer
    /// has its own, and the rounds of one call may run on different instances, so keep
    /// what must be shared in a shared store (the database the value connects to). A
    /// `Server::clone()` shares the values given so far (the clone holds the same `Arc`);
    /// a value given to the clone afterwards is the clone's alone.
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.engine.values.insert(value);
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
        self.engine.principal = Some(Arc::new(principal));
        self
    }

    /// How long one run of a tool, prompt, resource or completion handler may take, on
    /// every transport (time a 2025-11-25 client spends answering questions between runs
    /// is not counted). Past it the request fails with `-32603` "timed out after …";
    /// [`ToolRoute::timeout`] sets it per tool. `None` lets handlers run as long as they
    /// like.
    ///
    /// Unset, it is 60 s over HTTP (the request timeout common clients use; a stuck
    /// handler holds a place many clients share), 25 s in an AWS Lambda function (below
    /// API Gateway's 29 s integration timeout), 5 minutes over stdio (longer than a
    /// host waits on a call; a stuck handler still gives its place and memory back), and
    /// none in a [`TestClient`](crate::testing::TestClient) (a test bounds its own time).
    pub fn handler_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.engine.handler_timeout = crate::base::deadline::HandlerTimeout::set(timeout);
        self
    }

    /// How long a 2025-11-25 client has to answer the questions the bridge asks it in one
    /// round (default 5 minutes: a person may be filling in a form). Past it, the questions
    /// still open are withdrawn with `notifications/cancelled` and the call fails with
    /// `-32603`, naming the question that expired. The handler is held (as a suspended
    /// future) while it waits, so a shorter limit frees abandoned calls sooner.
    /// 2026-07-28 clients are not affected: their rounds hold nothing on the server.
    pub fn bridge_answer_timeout(mut self, timeout: Duration) -> Self {
        self.engine.bridge_answer_timeout = timeout;
        self
    }

    /// How this server keeps and runs tasks (the tasks extension): the store, how long
    /// records live, leases, bounds, and the hook that runs when a task ends. See
    /// [`TaskConfig`](crate::tasks::TaskConfig); without it, every part has its default
    /// (records in memory, for one instance).
    pub fn tasks(mut self, config: crate::ext::tasks::TaskConfig) -> Self {
        self.tasks = self.tasks.configured(config);
        self
    }

    /// Gives back the tasks running on this instance, as a graceful shutdown does: each run
    /// finishes the `once!` step it is in and records it (for at most
    /// [`TaskConfig::stop_grace`](crate::tasks::TaskConfig::stop_grace)), then its handler
    /// is dropped and its lease released, so another instance sharing the task store takes
    /// it over at once, replaying it from its journal. After it, this server takes no task
    /// over. [`Server::serve`] calls it after
    /// their drain; call it yourself when you serve the router another way.
    pub async fn hand_back_tasks(&self) {
        self.tasks.hand_back().await;
    }

    /// Serves a request method of the server's own (see [`MethodRoute`]), on both
    /// protocol revisions and every transport. Declare the extension it belongs to with
    /// [`Server::declare_extension`].
    ///
    /// Refused (serving then fails) if the name is taken, empty, or one of the protocol's
    /// own methods (`tools/call`, `initialize`, …; tasks' and notifications' included).
    pub fn method(mut self, route: MethodRoute) -> Self {
        let mut checked = crate::routes::handler::check_method_name(&route.name);
        if checked.is_ok() && self.engine.methods.contains_key(&route.name) {
            checked = Err(format!("the method {:?} is registered already", route.name));
        }
        if checked.is_ok() {
            Arc::make_mut(&mut self.engine.methods).insert(route.name.clone(), Arc::new(route));
        }
        self.unless_refused(checked)
    }

    /// Declares an extension (SEP-2133) in `capabilities.extensions` of `server/discover`
    /// (and of `initialize` for 2025-11-25 clients), with its settings: `{}` when it has
    /// none. The id is the extension's, such as `com.example/search`; serve its methods
    /// with [`Server::method`]. Declaring an id again replaces its settings.
    ///
    /// Refused (serving then fails) if `settings` is not a JSON object, or the id is
    /// empty or the tasks extension's (declared by the server itself, when a tool may run
    /// as a task).
    pub fn declare_extension(mut self, id: impl Into<String>, settings: serde_json::Value) -> Self {
        let id = id.into();
        let checked = match settings {
            _ if id.is_empty() => Err("an extension id cannot be empty".to_owned()),
            _ if id == crate::protocol::TASKS_EXTENSION => {
                Err("the tasks extension is declared by the server when a tool may run as a task".to_owned())
            }
            serde_json::Value::Object(settings) => {
                self.engine.extensions.insert(id, serde_json::Value::Object(settings));
                Ok(())
            }
            _ => Err(format!("the settings of the extension {id:?} must be a JSON object ({{}} for none)")),
        };
        self.unless_refused(checked)
    }

    /// Serves `skills` (SEP-2640): declares the `io.modelcontextprotocol/skills`
    /// extension, answers `skills/list`, `skills/get` and (unless turned off)
    /// `resources/directory/read`, lists every `SKILL.md` as a resource and serves every
    /// skill file through `resources/read`. See [`Skills`].
    ///
    /// Refused (serving then fails) when the server serves skills already (or a method
    /// of the same name).
    pub fn skills(self, skills: Skills) -> Self {
        let (settings, methods) = skills.serve(&self.catalog());
        methods.into_iter().fold(self.declare_extension(crate::ext::skills::EXTENSION, settings), Self::method)
    }

    /// The capabilities `server/discover` reports, derived from what is registered so
    /// that they always match the methods the server answers.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.engine().capabilities()
    }

    /// Seals with `keys` unless keys were given already, keeping the other settings: a
    /// test then never depends on (or breaks on) the environment's keys.
    pub(crate) fn with_keys_unless_given(mut self, keys: impl FnOnce() -> KeyRing) -> Self {
        if !self.engine.state.has_keys() {
            let config = std::mem::take(&mut self.engine.state).keys(keys());
            self = self.request_state(config);
        }
        self
    }

    /// The engine serving runs, with the extensions plugged in. Clones share the
    /// catalog, keys, guard and tasks with this builder.
    pub(crate) fn engine(&self) -> Engine {
        self.clone().into_engine()
    }

    /// This server on an endpoint that lives for `lifetime`. In a function that lives for
    /// one request (AWS Lambda) it promises no list changes, since no `subscriptions/listen`
    /// stream can outlive a request there, and says so when its tasks would run where the
    /// function is frozen between requests.
    pub(crate) fn living(mut self, lifetime: Lifetime) -> Self {
        if lifetime.outlives_requests() {
            return self;
        }
        let task_tools =
            self.engine.catalog().tools.iter().any(|t| t.route.task != crate::routes::handler::TaskSupport::Forbidden);
        if task_tools && self.tasks.runs_here {
            tracing::warn!(
                "tasks run in this function, which is frozen once its response is sent: a task stops there until \
                 the next request, and a container that is reclaimed loses it until its lease lapses; \
                 set TaskConfig::run_on_workers(true) and run tasks::Worker beside it"
            );
        }
        if self.engine.catalog_config.listen.take().is_some() {
            tracing::warn!(
                "subscriptions are not served in a function that lives for one request: \
                 Server::subscriptions is ignored, and listChanged is not declared"
            );
        }
        self
    }

    /// The engine and the task machinery of a task worker, which runs tasks whatever the
    /// task config says (it is where front ends that run none leave them).
    /// The `Err` holds every problem found, as `Engine::check_ready`'s does.
    pub(crate) fn into_worker(mut self) -> Result<(Engine, crate::ext::tasks::Tasks), Vec<String>> {
        self.tasks.runs_here = true;
        let tasks = self.tasks.clone();
        let engine = self.into_engine();
        engine.check_ready(crate::intake::request_state::Reach::Instances)?;
        if !engine.serves_tasks() {
            return Err(vec![
                "a task worker serves a server with a tool that may run as a task (#[tool(task = \"optional\")]); this one has none".into(),
            ]);
        }
        let tasks = crate::ext::tasks::Tasks { values: engine.values.clone(), ..tasks };
        Ok((engine, tasks))
    }

    /// As [`Server::engine`], taking the builder.
    pub(crate) fn into_engine(self) -> Engine {
        let mut engine = self.engine;
        let tasks = crate::ext::tasks::Tasks { values: engine.values.clone(), ..self.tasks };
        engine.tasks = Some(Arc::new(tasks));
        engine
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}
