//! [`CatalogHandle`]: changes a running server's tools, prompts and resources, and tells
//! its listeners.

use std::fmt;
use std::sync::{Arc, Weak};

use super::{CatalogState, Change, Kind, Reach};
use crate::mrtr::context::Ctx;
use crate::routes::handler::{PromptRoute, ResourceRoute, ToolRoute};

/// A handle to a server's catalog: adds, removes, enables and disables tools, prompts
/// and resources while the server runs, and announces resource updates.
///
/// Cheap to clone and usable from any task. Get one from the server before serving
/// ([`Server::catalog`](crate::Server::catalog)) or from a handler
/// ([`Ctx::catalog`](crate::Ctx::catalog)). Every change is seen whole by
/// the next request (requests already running keep the catalog they started with), and
/// open `subscriptions/listen` streams that asked for that kind of change hear of it
/// (`notifications/tools/list_changed` and so on) when the server serves
/// [`Subscriptions`](crate::catalog::Subscriptions).
///
/// ```
/// use mcp_mrtr::{catalog::Subscriptions, Server, protocol::Tool, ToolError};
///
/// let server = Server::new("live", "1.0.0").subscriptions(Subscriptions::default());
/// let handle = server.catalog();
/// handle
///     .tools()
///     .add(Tool::new("late").description("Registered at run time").handler(
///         |_ctx, _args: serde_json::Map<String, serde_json::Value>| async { Ok::<_, ToolError>("here") },
///     ))
///     .unwrap();
/// assert!(handle.tools().disable("late"));
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct CatalogHandle {
    pub(crate) catalog: Arc<CatalogState>,
}

/// A [`CatalogHandle`] that does not keep the server's catalog alive: for what the catalog's
/// own routes hold, which would otherwise make a cycle.
#[derive(Clone)]
pub(crate) struct WeakHandle(Weak<CatalogState>);

impl WeakHandle {
    /// The handle, while the catalog lives.
    pub(crate) fn upgrade(&self) -> Option<CatalogHandle> {
        self.0.upgrade().map(|catalog| CatalogHandle { catalog })
    }
}

impl CatalogHandle {
    /// A handle that does not keep the catalog alive.
    pub(crate) fn downgrade(&self) -> WeakHandle {
        WeakHandle(Arc::downgrade(&self.catalog))
    }

    /// The tools: add, remove, enable and disable them by name.
    pub fn tools(&self) -> Entries<'_, ToolRoute> {
        entries(&self.catalog)
    }

    /// The prompts: add, remove, enable and disable them by name.
    pub fn prompts(&self) -> Entries<'_, PromptRoute> {
        entries(&self.catalog)
    }

    /// The resources and resource templates: add, remove, enable and disable them by URI
    /// (a template by its URI template). A disabled resource reads as not found.
    pub fn resources(&self) -> Entries<'_, ResourceRoute> {
        entries(&self.catalog)
    }

    /// Registers a resource that only this instance edits: what it derived from its own
    /// state (its skills folder), which other instances' edits must not reach.
    pub(crate) fn add_resource_here(&self, resource: impl Into<ResourceRoute>) -> Result<(), CatalogError> {
        self.catalog.add(resource.into(), Reach::Here)
    }

    /// Unregisters a resource on this instance only, whatever the server shares: what
    /// the instance derived from its own state (its skills folder) is not the others'.
    pub(crate) fn remove_resource_here(&self, uri: &str) -> bool {
        self.catalog.remove::<ResourceRoute>(uri, Reach::Here)
    }

    /// Tells the listeners subscribed to `uri` that its content changed
    /// (`notifications/resources/updated`); they read it again if they care.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.catalog.publish(Change::ResourceUpdated(uri.into()));
    }

    /// How many `subscriptions/listen` streams are open on this instance.
    pub fn listeners(&self) -> usize {
        self.catalog.listeners()
    }
}

/// One kind of a running server's catalog (its tools, prompts or resources), from
/// [`CatalogHandle::tools`], [`prompts`](CatalogHandle::prompts) or
/// [`resources`](CatalogHandle::resources). Each is keyed by what the protocol names it by:
/// a tool's or prompt's name, a resource's URI or a template's URI template.
pub struct Entries<'a, R> {
    catalog: &'a CatalogState,
    edits: Edits<R>,
}

/// The catalog's edits for one kind, chosen when the [`Entries`] is made, so its methods
/// need no bound on the kind.
struct Edits<R> {
    add: fn(&CatalogState, R) -> Result<(), CatalogError>,
    remove: fn(&CatalogState, &str) -> bool,
    set_enabled: fn(&CatalogState, &str, bool) -> bool,
}

/// The [`Entries`] of kind `R`. A function rather than a constructor: an impl bounded on
/// the crate's own `Kind` would make that trait part of the public type's interface.
fn entries<R: Kind>(catalog: &CatalogState) -> Entries<'_, R> {
    let edits = Edits {
        add: |catalog, mut route: R| {
            route.admit()?;
            catalog.add(route, Reach::Everywhere)
        },
        remove: |catalog, key| catalog.remove::<R>(key, Reach::Everywhere),
        set_enabled: |catalog, key, enabled| catalog.set_enabled::<R>(key, enabled, Reach::Everywhere),
    };
    Entries { catalog, edits }
}

impl<R> Entries<'_, R> {
    /// Registers a route at the end of its list; refused when the key is taken or the
    /// route cannot be served (see [`CatalogError`]).
    ///
    /// Unlike the builder, this cannot check that the server was given the `State<T>`
    /// the handler takes: such a handler fails its calls with `-32603` instead.
    pub fn add(&self, route: impl Into<R>) -> Result<(), CatalogError> {
        (self.edits.add)(self.catalog, route.into())
    }

    /// Unregisters the route under `key`; `false` if there is none.
    pub fn remove(&self, key: &str) -> bool {
        (self.edits.remove)(self.catalog, key)
    }

    /// Lists and serves a disabled route again, in its old place; `false` if there is none.
    pub fn enable(&self, key: &str) -> bool {
        (self.edits.set_enabled)(self.catalog, key, true)
    }

    /// Stops listing and serving a route (requests for it fail as for one that does not
    /// exist) while keeping it registered; `false` if there is none.
    pub fn disable(&self, key: &str) -> bool {
        (self.edits.set_enabled)(self.catalog, key, false)
    }
}

impl<R> fmt::Debug for Entries<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entries").field("kind", &std::any::type_name::<R>()).finish_non_exhaustive()
    }
}

impl fmt::Debug for CatalogHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogHandle").field("listeners", &self.listeners()).finish_non_exhaustive()
    }
}

/// Why a route could not be added at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogError {
    /// Something of this kind is registered under the key already: remove it first.
    Taken {
        /// `"tool"`, `"prompt"` or `"resource"`.
        kind: &'static str,
        /// The name, URI or URI template.
        key: String,
    },
    /// A tool name must be 1–64 characters of `[A-Za-z0-9_./-]`.
    InvalidName(String),
    /// The tool's `x-mcp-header` annotations break SEP-2243's rules (a header name
    /// token, unique ignoring case, on string, integer or boolean parameters only).
    InvalidHeader {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        problem: String,
    },
    /// What the route's handler declares cannot be served: a type it asks for with
    /// `ask!(elicit …)` cannot be a form, or its structured result is not an object.
    Unfit {
        /// `"tool"`, `"prompt"` or `"resource"`.
        kind: &'static str,
        /// The name, URI or URI template.
        key: String,
        /// What is wrong.
        problem: String,
    },
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Taken { kind, key } => write!(f, "a {kind} for {key:?} is already registered"),
            Self::InvalidName(name) => write!(f, "tool name {name:?} must be 1-64 characters of [A-Za-z0-9_./-]"),
            Self::InvalidHeader { tool, problem } => write!(f, "tool {tool:?}: {problem}"),
            Self::Unfit { kind, key, problem } => write!(f, "{kind} {key:?}: {problem}"),
        }
    }
}

impl std::error::Error for CatalogError {}

// The handle is the catalog's: `Ctx` (the core) does not know the catalog, so the
// method lives here.
impl Ctx {
    /// The handle to the server serving this request: add or remove tools, prompts and
    /// resources, or announce a resource update, from inside a handler.
    pub fn catalog(&self) -> CatalogHandle {
        match self.state::<CatalogHandle>() {
            Some(handle) => CatalogHandle::clone(&handle),
            // Every server puts its handle in its state; a context built elsewhere (a
            // test's) gets a handle to an empty catalog of its own.
            None => CatalogHandle { catalog: Arc::default() },
        }
    }
}
