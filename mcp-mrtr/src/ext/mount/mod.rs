//! Other servers' tools, prompts and resources served as this server's own (the `client`
//! feature): a gateway.
//!
//! [`Mount`] takes a connected [`Client`] of an upstream server, lists what it offers, and
//! [`Server::mount`](crate::Server::mount) registers each tool and prompt under a prefix,
//! filtered and renamed as the operator says, and each resource (and resource template)
//! at its own URI. A call of a mounted tool (a prompt get, a resource read) is forwarded
//! to the upstream with the caller's arguments and capabilities; when the upstream asks
//! (`input_required`), its questions become this server's round, and its `requestState`
//! travels sealed inside this server's own, so the caller never sees or alters it, and the
//! retry reaches the upstream with it. A 2025-11-25 caller is asked through the bridge, as
//! for any tool of this server. The guide's chapter "Mounting servers" has the rest.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_mrtr::client::Client;
//! use mcp_mrtr::mount::Mount;
//! use mcp_mrtr::Server;
//!
//! let weather = Client::http("http://127.0.0.1:9001/mcp").connect().await?;
//! let mounted = Mount::new(weather).prefix("weather_").only(["forecast", "alerts"]).load().await?;
//! let server = Server::new("gateway", "1.0.0").mount(mounted);
//! # drop(server);
//! # Ok(())
//! # }
//! ```
//!
//! This release mounts 2026-07-28 upstreams, and 2025-11-25 upstreams over HTTP (their
//! calls held open between the caller's rounds: see `held`). Their lists are read when the
//! mount is loaded, and again when the upstream announces a change (the mount subscribes where it
//! offers it), which this server's listeners then hear of as its own. Where the upstream
//! serves tasks, a caller that declared them is offered them through the hop: the
//! upstream's task is the caller's, under an id of this server's (see `tasks`).

mod complete;
mod forward;
mod held;
mod live;
mod relay;
mod tasks;
mod upstream;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use crate::base::caller::Caller;
use crate::client::{BoxError, Client, ClientError, SessionOver};
use crate::dispatch::{CompletionFn, TasksElsewhere};
use crate::protocol::{Prompt, Resource, ResourceTemplate, Tool, TASKS_EXTENSION};
use crate::routes::catalog::{CatalogError, CatalogHandle};
use crate::routes::handler::{PromptRoute, ResourceRoute, ToolRoute};

/// An upstream server being mounted: which of its tools and prompts, under which names.
#[must_use = "a mount does nothing until loaded and given to Server::mount"]
pub struct Mount {
    client: Client,
    prefix: String,
    only: Option<Vec<String>>,
    renames: HashMap<String, String>,
    errors: UpstreamErrors,
    held_calls: usize,
    hold_for: Duration,
    token: Option<upstream::TokenFn>,
    in_flight: usize,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("client", &self.client)
            .field("prefix", &self.prefix)
            .field("only", &self.only)
            .field("renames", &self.renames)
            .field("errors", &self.errors)
            .field("held_calls", &self.held_calls)
            .field("hold_for", &self.hold_for)
            .field("upstream_token", &self.token.is_some())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

/// How many requests of callers' rounds a mount has in flight to its upstream at once, by
/// default: a server behind a gateway is usually sized for fewer callers than the gateway.
const IN_FLIGHT: usize = 64;

/// How many calls of a 2025-11-25 upstream a mount holds between rounds, by default.
const HELD_CALLS: usize = 256;
/// How long a mount holds such a call for the caller's answers, by default: as long as
/// this server's bridge waits for a 2025-11-25 caller's (a person may be filling in a form).
const HOLD_FOR: Duration = crate::mrtr::context::ANSWER_TIMEOUT;

/// What a caller reads of an upstream's JSON-RPC error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpstreamErrors {
    /// Its code, and a message that names the mounted tool, not the upstream's text (which
    /// may name its internals). The default.
    #[default]
    CodeOnly,
    /// Its code, message and data, as the upstream sent them.
    Whole,
}

/// An upstream's tools, prompts and resources, ready to be registered with
/// [`Server::mount`](crate::Server::mount).
pub struct Mounted {
    plan: Arc<Plan>,
    tools: Vec<ToolRoute>,
    prompts: Vec<PromptRoute>,
    resources: Vec<ResourceRoute>,
}

impl std::fmt::Debug for Mounted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|route| route.tool.name.as_str()).collect();
        let prompts: Vec<&str> = self.prompts.iter().map(|route| route.prompt.name.as_str()).collect();
        f.debug_struct("Mounted")
            .field("tools", &tools)
            .field("prompts", &prompts)
            .field("resources", &self.resources.len())
            .finish_non_exhaustive()
    }
}

impl Mount {
    /// The server `client` is connected to, all its tools and prompts under their own names.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            prefix: String::new(),
            only: None,
            renames: HashMap::new(),
            errors: UpstreamErrors::default(),
            held_calls: HELD_CALLS,
            hold_for: HOLD_FOR,
            token: None,
            in_flight: IN_FLIGHT,
        }
    }

    /// Prepends `prefix` to the name of every tool mounted (after a rename), so two
    /// upstreams' tools of one name can be served side by side.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Mounts only the upstream's tools and prompts named here (by their upstream names);
    /// by default, every one it lists. Resources are mounted whole.
    pub fn only<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.only = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Serves the upstream's tool or prompt `upstream` as `ours` (the prefix is still
    /// prepended).
    pub fn rename(mut self, upstream: impl Into<String>, ours: impl Into<String>) -> Self {
        self.renames.insert(upstream.into(), ours.into());
        self
    }

    /// What callers read of the upstream's JSON-RPC errors (by default its code only).
    pub fn upstream_errors(mut self, errors: UpstreamErrors) -> Self {
        self.errors = errors;
        self
    }

    /// The token each caller's requests carry to the upstream (`Authorization: Bearer`),
    /// instead of the mount client's own headers: `token` maps the request's
    /// authenticated caller (`None` on a server without authentication) to one, as the
    /// operator chooses (a token exchange, a token per tenant), or to `None` for the
    /// client's own. Its error fails the call (`-32603`, its text only in the log).
    ///
    /// The caller's own token is never passed on: it was issued for this server, and the
    /// authorization spec forbids a server to accept or pass on tokens issued for another
    /// ("token passthrough"). Lists, subscriptions and what the mount asks on its own go
    /// with the client's headers. HTTP only: a call over stdio with a token fails.
    ///
    /// ```no_run
    /// # async fn run(client: mcp_mrtr::client::Client) {
    /// use mcp_mrtr::mount::Mount;
    ///
    /// // One token per tenant, named by the caller's id (a token exchange would go here).
    /// let mount = Mount::new(client).upstream_token(|caller| async move {
    ///     Ok(caller.map(|caller| format!("tenant-token-for-{}", caller.id())))
    /// });
    /// # drop(mount);
    /// # }
    /// ```
    pub fn upstream_token<F, Fut>(mut self, token: F) -> Self
    where
        F: Fn(Option<Caller>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Option<String>, BoxError>> + Send + 'static,
    {
        self.token = Some(Arc::new(move |caller| Box::pin(token(caller))));
        self
    }

    /// How many requests of callers' rounds may be in flight to the upstream at once (64
    /// by default, at least 1): a call, prompt get, resource read, or the round of a held call that
    /// waits on the upstream. A round past it waits for one to end, within the server's
    /// handler time limit. A held call waiting for its caller's answers is counted by
    /// [`held_calls`](Self::held_calls) instead.
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.in_flight = max;
        self
    }

    /// How many calls of a 2025-11-25 upstream may be held at once between the caller's
    /// rounds (256 by default): past it, a call that asks fails with `-32603`. Such a
    /// call waits on the upstream, open, while its caller answers (see the chapter).
    pub fn held_calls(mut self, max: usize) -> Self {
        self.held_calls = max;
        self
    }

    /// How long a call of a 2025-11-25 upstream is held for its caller's answers (5
    /// minutes by default, as this server's bridge waits for a 2025-11-25 caller's): past
    /// it the call is ended, and a late retry is refused (`-32602`).
    pub fn hold_for(mut self, lapse: Duration) -> Self {
        self.hold_for = lapse;
        self
    }

    /// Lists the upstream's tools, and its prompts and resources where it offers them, and
    /// builds the routes that forward to it. Fails when the upstream speaks neither
    /// 2026-07-28 nor, over HTTP, 2025-11-25, cannot be listed, or lists nothing of a name
    /// given to [`only`](Self::only).
    pub async fn load(self) -> Result<Mounted, ClientError> {
        match self.client.session() {
            Some(SessionOver::Stdio) => {
                return Err(ClientError::Unsupported(
                    "a 2025-11-25 server is mounted over HTTP only: over stdio, its questions do not say which call \
                     they belong to"
                        .into(),
                ));
            }
            Some(SessionOver::Http) if !self.client.relays_questions() => {
                return Err(ClientError::Config(
                    "a 2025-11-25 server hears what its client may be asked once, in initialize: connect the client \
                     given to Mount with Connect::relaying_questions()"
                        .into(),
                ));
            }
            _ => {}
        }
        let offers = &self.client.server().capabilities;
        // A session's log level is the session's: all of it, so that each call's log
        // messages reach its caller at the caller's own level (the relay filters).
        if self.client.session().is_some() && offers.logging.is_some() {
            let mut level = crate::protocol::JsonObject::new();
            level.insert("level".into(), "debug".into());
            self.client.forward("logging/setLevel", level, crate::client::Forwarding::default()).await?;
        }
        let tools = self.client.list_tools().await?;
        let prompts = match offers.prompts {
            Some(_) => self.client.list_prompts().await?,
            None => Vec::new(),
        };
        let (resources, templates) = match offers.resources {
            Some(_) => (self.client.list_resources().await?, self.client.list_resource_templates().await?),
            None => (Vec::new(), Vec::new()),
        };
        let listed =
            |name: &String| tools.iter().any(|tool| &tool.name == name) || prompts.iter().any(|p| &p.name == name);
        if let Some(missing) = self.only.iter().flatten().find(|name| !listed(name)) {
            return Err(ClientError::Config(format!("the upstream lists no tool or prompt {missing:?} to mount")));
        }
        let upstream = Arc::new(upstream::Upstream {
            held: Arc::new(held::Held::new(self.client.clone(), self.held_calls, self.hold_for)),
            client: self.client,
            errors: self.errors,
            door: std::sync::OnceLock::new(),
            token: self.token,
            in_flight: tokio::sync::Semaphore::new(self.in_flight.clamp(1, tokio::sync::Semaphore::MAX_PERMITS)),
        });
        let plan = Arc::new(Plan {
            upstream,
            prefix: self.prefix,
            only: self.only,
            renames: self.renames,
            prompt_names: RwLock::default(),
            templates: RwLock::default(),
        });
        Ok(Mounted {
            tools: plan.tools(tools),
            prompts: plan.prompts(prompts),
            resources: plan.resources(resources, templates),
            plan,
        })
    }
}

/// How a mount turns the upstream's lists into routes: the same on load and on every
/// change of a list.
struct Plan {
    upstream: Arc<upstream::Upstream>,
    prefix: String,
    only: Option<Vec<String>>,
    renames: HashMap<String, String>,
    /// The prompts mounted now, by the name we serve each under: its upstream name (for
    /// completions).
    prompt_names: RwLock<HashMap<String, String>>,
    /// The resource templates mounted now (for completions).
    templates: RwLock<HashSet<String>>,
}

impl Plan {
    fn wanted(&self, name: &String) -> bool {
        self.only.as_ref().is_none_or(|only| only.contains(name))
    }

    fn ours(&self, name: &String) -> String {
        format!("{}{}", self.prefix, self.renames.get(name).unwrap_or(name))
    }

    fn tools(&self, listed: Vec<Tool>) -> Vec<ToolRoute> {
        listed
            .into_iter()
            .filter(|tool| self.wanted(&tool.name))
            .map(|tool| {
                forward::tool_route(&self.upstream, Tool { name: self.ours(&tool.name), ..tool.clone() }, tool.name)
            })
            .collect()
    }

    fn prompts(&self, listed: Vec<Prompt>) -> Vec<PromptRoute> {
        let mut names = HashMap::new();
        let routes = listed
            .into_iter()
            .filter(|prompt| self.wanted(&prompt.name))
            .map(|prompt| {
                let ours = Prompt { name: self.ours(&prompt.name), ..prompt.clone() };
                names.insert(ours.name.clone(), prompt.name.clone());
                forward::prompt_route(&self.upstream, ours, prompt.name)
            })
            .collect();
        *self.prompt_names.write().unwrap_or_else(PoisonError::into_inner) = names;
        routes
    }

    /// The upstream's name of the prompt we serve as `ours`, if it is mounted.
    fn upstream_prompt(&self, ours: &str) -> Option<String> {
        self.prompt_names.read().unwrap_or_else(PoisonError::into_inner).get(ours).cloned()
    }

    /// Whether the resource template `uri` is mounted.
    fn has_template(&self, uri: &str) -> bool {
        self.templates.read().unwrap_or_else(PoisonError::into_inner).contains(uri)
    }

    fn resources(&self, listed: Vec<Resource>, templates: Vec<ResourceTemplate>) -> Vec<ResourceRoute> {
        *self.templates.write().unwrap_or_else(PoisonError::into_inner) =
            templates.iter().map(|template| template.uri_template.clone()).collect();
        let resources = listed.into_iter().map(|resource| forward::resource_route(&self.upstream, resource));
        let templates = templates.into_iter().map(|template| forward::template_route(&self.upstream, template));
        resources.chain(templates).collect()
    }
}

impl Mounted {
    /// Registers the routes in `catalog` and, where the upstream announces changes of its
    /// lists, keeps them in step from a task of the current runtime (see [`live`]).
    pub(crate) fn register(self, catalog: &CatalogHandle) -> Vec<CatalogError> {
        let mut keys = live::Keys::default();
        let mut refused = live::place(catalog, &mut keys.tools, self.tools);
        refused.extend(live::place(catalog, &mut keys.prompts, self.prompts));
        refused.extend(live::place(catalog, &mut keys.resources, self.resources));
        live::follow(self.plan, catalog.clone(), keys);
        refused
    }

    /// Lets calls of this mount become the upstream's tasks, where the upstream serves
    /// them: its upstream joins the server's door for tasks made elsewhere (`door`, made
    /// here with the server's first such mount).
    pub(crate) fn join_tasks(&self, door: &mut Option<Arc<dyn TasksElsewhere>>) {
        let extensions = self.plan.upstream.client.server().capabilities.extensions.as_ref();
        if !extensions.is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION)) {
            return;
        }
        let door = door.get_or_insert_with(|| Arc::new(tasks::MountedTasks::default()));
        if let Some(mounted) = door.as_any().downcast_ref::<tasks::MountedTasks>() {
            mounted.add(&self.plan.upstream);
        }
    }

    /// The server's completion with this mount's prompts and templates completed by the
    /// upstream, where it offers completions.
    pub(crate) fn completion(&self, previous: Option<CompletionFn>) -> Option<CompletionFn> {
        let offers = self.plan.upstream.client.server().capabilities.completions.is_some();
        offers.then(|| complete::chain(self.plan.clone(), previous))
    }
}
