//! [`Engine`]: the running server as dispatch reads it (the catalog, how states are
//! sealed and guarded, the application's values, the hooks of the extensions), apart
//! from the [`Server`](crate::Server) builder users touch. The builder makes one when it
//! serves; every transport and extension holds the engine, never the builder.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::http::{Extensions, HeaderMap};
use futures_util::future::BoxFuture;

use super::{TaskHook, TasksElsewhere};
use crate::base::caller::Caller;
use crate::base::deadline::HandlerTimeout;
use crate::base::error::Error;
use crate::base::error::ToolError;
use crate::intake::request_state::Sealer;
use crate::intake::request_state::StateConfig;
use crate::intake::request_state::{KeyError, Reach};
use crate::intake::state_values::StateValues;
use crate::mrtr::context::Ctx;
use crate::mrtr::context::Delivery;
use crate::protocol::{
    CacheHints, CompleteParams, Completion, Implementation, JsonObject, PromptsCapability, ResourcesCapability,
    ServerCapabilities, ToolsCapability,
};
use crate::routes::catalog::{CatalogConfig, CatalogHandle, CatalogState, Prepared};
use crate::routes::handler::{MethodRoute, PromptRoute, ResourceRoute, TaskSupport, ToolRoute};

pub(crate) type PrincipalFn = Arc<dyn Fn(&HeaderMap) -> Option<String> + Send + Sync>;

pub(crate) type CompletionFn =
    Arc<dyn Fn(Ctx, CompleteParams) -> BoxFuture<'static, Result<Completion, ToolError>> + Send + Sync>;

/// The running server: what every request reads. Cheap to clone (shared parts behind
/// `Arc`s); clones share the catalog, the sealing keys and the guard.
#[derive(Clone)]
pub(crate) struct Engine {
    pub(crate) info: Implementation,
    /// `info` as JSON, stamped on every modern result.
    pub(crate) info_json: Arc<str>,
    pub(crate) instructions: Option<String>,
    /// Tools, prompts and resources: shared with every clone and [`CatalogHandle`].
    pub(crate) catalog: Arc<CatalogState>,
    pub(crate) catalog_config: CatalogConfig,
    /// The list and discovery bodies of the current catalog, serialized once.
    pub(crate) prepared: Prepared,
    pub(crate) completion: Option<CompletionFn>,
    pub(crate) logging: bool,
    pub(crate) cache: CacheHints,
    /// The request-state settings, with the guard that refuses a second claim of one state.
    pub(crate) state: StateConfig,
    /// `state` with its keys resolved, once, when serving starts. Clones share it.
    pub(crate) sealer: Arc<OnceLock<Sealer>>,
    pub(crate) principal: Option<PrincipalFn>,
    pub(crate) bridge_answer_timeout: Duration,
    /// How long one run of a handler may take (`Server::handler_timeout`): each transport
    /// resolves it once against its own default.
    pub(crate) handler_timeout: HandlerTimeout,
    pub(crate) values: StateValues,
    /// The server's own request methods, by name.
    pub(crate) methods: Arc<BTreeMap<String, Arc<MethodRoute>>>,
    /// Extensions declared by the application, with their settings (`capabilities.extensions`).
    pub(crate) extensions: JsonObject,
    /// The tasks extension, when the server serves it (the builder plugs it in).
    pub(crate) tasks: Option<Arc<dyn TaskHook>>,
    /// Tasks other servers made for calls of this one's (a mount's upstreams').
    pub(crate) tasks_elsewhere: Option<Arc<dyn TasksElsewhere>>,
    /// What the builder refused (a name taken, a method name the protocol has, settings
    /// that are not an object): serving fails with it, before anything is served.
    pub(crate) refused: Vec<String>,
    /// Whether a 2025-11-25 client has been told (in the log) that the tools that run only
    /// as tasks were left out of its list: said once at WARN, then at DEBUG.
    pub(crate) told_task_only: Arc<AtomicBool>,
}

impl Engine {
    /// Writes `serverInfo` again, as every result stamps it, after `info` changed.
    pub(crate) fn info_changed(&mut self) {
        self.info_json = info_json(&self.info);
    }

    /// An engine with this name and version, nothing registered and no extension.
    pub(crate) fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        let catalog = Arc::new(CatalogState::default());
        let mut values = StateValues::default();
        // Handlers reach the handle like any state: `ctx.catalog()` or `State<CatalogHandle>`.
        values.insert(CatalogHandle { catalog: catalog.clone() });
        let info = Implementation::new(name, version);
        let info_json = info_json(&info);
        Self {
            info,
            info_json,
            instructions: None,
            catalog,
            catalog_config: CatalogConfig::default(),
            prepared: Prepared::default(),
            completion: None,
            logging: false,
            cache: CacheHints::default(),
            state: StateConfig::default(),
            sealer: Arc::default(),
            principal: None,
            bridge_answer_timeout: crate::mrtr::context::ANSWER_TIMEOUT,
            handler_timeout: HandlerTimeout::TransportDefault,
            values,
            methods: Arc::default(),
            extensions: JsonObject::new(),
            tasks: None,
            tasks_elsewhere: None,
            refused: Vec::new(),
            told_task_only: Arc::default(),
        }
    }

    /// Starts what runs beside the requests: the tasks extension's look for the tasks of
    /// instances that died. Serving calls it, and each request (for in-process use).
    pub(crate) fn start(&self) {
        // The relay needs the keys; without usable ones the server does not serve at all.
        if let Ok(state) = self.resolve_state() {
            self.catalog.start_relay(state.ring());
        }
        if let Some(tasks) = &self.tasks {
            tasks.watch(self);
        }
    }

    /// Gives back the tasks running here, as a graceful shutdown does.
    pub(crate) async fn hand_back_tasks(&self) {
        if let Some(tasks) = &self.tasks {
            tasks.hand_back().await;
        }
    }

    /// Everything that must hold before serving: nothing the builder refused, every
    /// `State<T>` given, and the request-state keys usable (their states presented within
    /// `reach`). Each way of serving calls this first; the `Err` holds every problem found,
    /// one sentence each.
    pub(crate) fn check_ready(&self, reach: Reach) -> Result<(), Vec<String>> {
        let mut problems = self.refused.clone();
        problems.extend(self.missing_state());
        // Keys only once the rest holds: resolving them may announce a random key.
        if problems.is_empty() {
            if let Err(error) = self.resolve_state_for(reach) {
                problems.push(error.to_string());
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// Resolves the sealing configuration now: the one given, or the environment's keys,
    /// or a random key (announced once on stderr). Every way of serving calls this before
    /// the first request, so a malformed `MCP_MRTR_STATE_KEYS` fails at start-up.
    pub(crate) fn resolve_state(&self) -> Result<&Sealer, KeyError> {
        self.resolve_state_for(Reach::Instances)
    }

    fn resolve_state_for(&self, reach: Reach) -> Result<&Sealer, KeyError> {
        if let Some(sealer) = self.sealer.get() {
            return Ok(sealer);
        }
        let sealer = self.state.sealer_for(reach)?;
        Ok(self.sealer.get_or_init(|| sealer))
    }

    /// The sealing configuration, for a request.
    pub(crate) fn sealer(&self) -> Result<&Sealer, Error> {
        self.resolve_state().map_err(|error| {
            tracing::error!(%error, "cannot seal request states");
            Error::internal("the server's request-state keys are misconfigured")
        })
    }

    /// Who a request's sealed state (and session, and task) is bound to: its
    /// authenticated caller, else what the principal hook names.
    pub(crate) fn principal_of(&self, delivery: &Delivery) -> Option<String> {
        self.principal_from(delivery.headers.as_deref(), &delivery.extensions)
    }

    /// Each source names principals in a namespace of its own, tagged in front: an
    /// `x-user: alice` header the hook reads is never the authenticated `Caller("alice")`
    /// (an app whose middleware sets a `Caller` on only some requests). Neither tag is a
    /// prefix of the other, so no two names from different sources can be equal.
    pub(crate) fn principal_from(&self, headers: Option<&HeaderMap>, extensions: &Extensions) -> Option<String> {
        if let Some(caller) = extensions.get::<Caller>() {
            return Some(format!("caller:{}", caller.id()));
        }
        // A panic in the hook is caught with the rest of the request (`Engine::handle`).
        let named = self.principal.as_ref().zip(headers).and_then(|(principal, headers)| principal(headers))?;
        Some(format!("hook:{named}"))
    }

    /// Each handler that takes `State<T>` of a server given no `T`, as a sentence: serving
    /// refuses to start with them, rather than failing a client's call.
    pub(crate) fn missing_state(&self) -> Vec<String> {
        let catalog = self.catalog();
        let routes = catalog.tools.iter().map(|t| ("tool", t.route.tool.name.as_str(), &t.route.requires.state));
        let routes = routes
            .chain(catalog.prompts.iter().map(|p| ("prompt", p.route.prompt.name.as_str(), &p.route.requires.state)));
        let routes =
            routes.chain(catalog.resources.iter().map(|r| ("resource", r.route.kind.key(), &r.route.requires.state)));
        let routes = routes.chain(self.methods.values().map(|m| ("method", m.name.as_str(), &m.requires.state)));
        routes
            .flat_map(|(kind, name, needs)| {
                needs.iter().filter(|need| !self.values.has(need)).map(move |need| {
                    format!(
                        "{kind} `{name}` takes State<{0}>, but the server was given no {0}: call .with_state(…) with one",
                        need.type_name
                    )
                })
            })
            .collect()
    }

    /// The capabilities `server/discover` reports, derived from what is registered so
    /// that they always match the methods the server answers.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let present = |yes: bool| yes.then(JsonObject::new);
        let catalog = self.catalog();
        let live = self.catalog_config.listen.is_some().then_some(true);
        ServerCapabilities {
            tools: catalog.has::<ToolRoute>().then_some(ToolsCapability { list_changed: live }),
            prompts: catalog.has::<PromptRoute>().then_some(PromptsCapability { list_changed: live }),
            resources: catalog
                .has::<ResourceRoute>()
                .then_some(ResourcesCapability { subscribe: live, list_changed: live }),
            completions: present(self.completion.is_some()),
            logging: present(self.logging),
            extensions: {
                let mut extensions = self.extensions.clone();
                if self.serves_tasks() {
                    extensions.insert(crate::protocol::TASKS_EXTENSION.into(), serde_json::json!({}));
                }
                // Apps, and (SEP-3118) asks an app renders: any ask may name an app, and
                // is sent it only where the client declared the same.
                if crate::routes::apps::serves_apps(&catalog) {
                    extensions.insert(crate::routes::apps::EXTENSION.into(), serde_json::json!({ "elicitation": {} }));
                }
                (!extensions.is_empty()).then_some(extensions)
            },
            ..ServerCapabilities::default()
        }
    }

    /// The capabilities a 2025-11-25 session gets: those of `server/discover` but tasks.
    /// Changes reach a session on its own stream (stdio's pipe, or HTTP's `GET`), so
    /// `listChanged` and resources' `subscribe` are promised as they are to this era.
    pub(crate) fn legacy_capabilities(&self) -> ServerCapabilities {
        let mut capabilities = self.capabilities();
        // The tasks extension is 2026-07-28's: a session's calls never become tasks.
        if let Some(extensions) = &mut capabilities.extensions {
            extensions.remove(crate::protocol::TASKS_EXTENSION);
            if extensions.is_empty() {
                capabilities.extensions = None;
            }
        }
        capabilities
    }

    /// Whether any tool may run as a task, with the extension plugged in: only then is
    /// it advertised and are its methods answered.
    pub(crate) fn serves_tasks(&self) -> bool {
        self.tasks_elsewhere.is_some()
            || self.tasks.is_some() && self.catalog().tools.iter().any(|t| t.route.task != TaskSupport::Forbidden)
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

impl std::fmt::Debug for Engine {
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

/// `serverInfo` as results carry it. Strings only: it serializes (the fallback is never taken).
fn info_json(info: &Implementation) -> Arc<str> {
    serde_json::to_string(info).unwrap_or_else(|_| "{}".into()).into()
}
