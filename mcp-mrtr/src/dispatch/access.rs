//! Who may reach what: the one decision every entry point to a tool, prompt or resource
//! asks before it acts (`tools/call`, `prompts/get`, `resources/read`,
//! `completion/complete`, `subscriptions/listen`, `tasks/update`, and the `Mcp-Param-*`
//! checks, which run only once the tool is known to be reachable).
//!
//! [`Engine::access`] decides, in this order:
//!
//! 1. **Visible?** The application's visibility filter. A hidden route is refused as
//!    [`Refused::Unknown`], which each entry point answers exactly as it answers a name
//!    that was never registered: nothing a caller sees tells a hidden route from a
//!    missing one.
//! 2. **Granted?** Every scope the route declares, held by the request's caller
//!    ([`crate::base::caller::authorize`]). A visible route the caller lacks scopes for is
//!    [`Refused::Forbidden`]: `403` naming the scopes (the spec's step-up challenge). It
//!    reveals nothing, since the caller's own lists already show that route.
//!
//! The lookups ([`Engine::reach_tool`] and friends) find the route a request names and
//! ask [`Engine::access`] about it; entry points use them and never `sees` or
//! `authorize` directly. [`Engine::callable_tool`] also words the refusal as `tools/call`
//! does, for `tasks/update`, so an answer to a task reads as a call of its tool would.

use std::sync::Arc;

use super::Engine;
use crate::base::error::Error;
use crate::intake::capability::Capability;
use crate::intake::envelope::RequestMeta;
use crate::mrtr::context::{Delivery, Readable, ResourceAccess};
use crate::protocol::JsonObject;
use crate::routes::catalog::{Catalog, Item, RequestView};
use crate::routes::handler::{MethodRoute, PromptRoute, ResourceRoute, ToolRoute};

/// Why a request may not reach a route.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Not registered, disabled, or hidden from this request: answered like a name
    /// that was never registered.
    Unknown,
    /// Visible, but the caller lacks a scope it needs: `403` with `insufficient_scope`.
    Forbidden(Error),
}

impl Refused {
    /// The error the caller gets: `unknown` (the entry point's own "no such thing"), or
    /// the `403` of a missing scope.
    pub(crate) fn or_unknown(self, unknown: impl FnOnce() -> Error) -> Error {
        match self {
            Self::Unknown => unknown(),
            Self::Forbidden(error) => error,
        }
    }
}

/// A catalog entry as the decision sees it: what the visibility filter is shown, and
/// the scopes a caller needs.
pub(crate) trait Guarded {
    fn item(&self) -> Item<'_>;
    fn scopes(&self) -> &[String];
}

impl Guarded for ToolRoute {
    fn item(&self) -> Item<'_> {
        Item::Tool(&self.tool)
    }
    fn scopes(&self) -> &[String] {
        &self.requires.scopes
    }
}

impl Guarded for PromptRoute {
    fn item(&self) -> Item<'_> {
        Item::Prompt(&self.prompt)
    }
    fn scopes(&self) -> &[String] {
        &self.requires.scopes
    }
}

impl Guarded for ResourceRoute {
    fn item(&self) -> Item<'_> {
        self.kind.item()
    }
    fn scopes(&self) -> &[String] {
        &self.requires.scopes
    }
}

impl Guarded for MethodRoute {
    fn item(&self) -> Item<'_> {
        Item::Method(&self.name)
    }
    fn scopes(&self) -> &[String] {
        &self.requires.scopes
    }
}

impl Engine {
    /// The decision: whether the request `view` may reach `route` (see the module docs).
    pub(crate) fn access(&self, view: &RequestView<'_>, route: &impl Guarded) -> Result<(), Refused> {
        if !self.sees(view, route.item()) {
            return Err(Refused::Unknown);
        }
        crate::base::caller::authorize(route.scopes(), view.caller()).map_err(Refused::Forbidden)
    }

    /// The enabled tool `name`, if the request may call it.
    pub(crate) fn reach_tool(&self, view: &RequestView<'_>, name: &str) -> Result<Arc<ToolRoute>, Refused> {
        let route = self.find_tool(name).ok_or(Refused::Unknown)?;
        self.access(view, &*route)?;
        Ok(route)
    }

    /// The tool `name` if the request may call it, else the error `tools/call` answers:
    /// "Unknown tool" (for a hidden one too), or the `403` of a missing scope.
    /// A tool only an app may call is refused (as unknown, with the reason) to a client
    /// that renders no apps: no app of its own can be calling it.
    pub(crate) fn callable_tool(&self, view: &RequestView<'_>, name: &str) -> Result<Arc<ToolRoute>, Error> {
        let route =
            self.reach_tool(view, name).map_err(|refused| refused.or_unknown(|| Error::unknown("tool", name)))?;
        if crate::routes::apps::app_only(&route) && !Capability::Apps.is_declared_in(view.client_capabilities()) {
            let why = format!(
                "{}: only an app may call it, and this client did not declare the {} extension",
                Error::unknown("tool", name).message(),
                crate::routes::apps::EXTENSION
            );
            return Err(Error::invalid_params(why));
        }
        Ok(route)
    }

    /// The enabled prompt `name`, if the request may get it.
    pub(crate) fn reach_prompt(&self, view: &RequestView<'_>, name: &str) -> Result<Arc<PromptRoute>, Refused> {
        let route = self.find_prompt(name).ok_or(Refused::Unknown)?;
        self.access(view, &*route)?;
        Ok(route)
    }

    /// The resource that serves `uri` for this request, with the template's variables:
    /// the first route that matches and is visible (a hidden one is passed over, as if
    /// it were not there), if the request may read it.
    pub(crate) fn reach_resource<'c>(
        &self,
        catalog: &'c Catalog,
        view: &RequestView<'_>,
        uri: &str,
    ) -> Result<(&'c Arc<ResourceRoute>, JsonObject), Refused> {
        for route in catalog.enabled::<ResourceRoute>() {
            let Some(vars) = route.kind.matches(uri) else { continue };
            match self.access(view, &**route) {
                Err(Refused::Unknown) => {}
                decided => return decided.map(|()| (route, vars)),
            }
        }
        Err(Refused::Unknown)
    }

    /// The resource or template registered as `key` (its URI, or its URI template, as
    /// `completion/complete` names it), if the request may read it.
    pub(crate) fn reach_resource_key(&self, view: &RequestView<'_>, key: &str) -> Result<(), Refused> {
        let route = self.catalog().find::<ResourceRoute>(key).ok_or(Refused::Unknown)?;
        self.access(view, &*route)
    }

    /// The server's own method `name`, if the request may call it: a hidden one is
    /// answered as an unknown method.
    pub(crate) fn reach_method(&self, view: &RequestView<'_>, name: &str) -> Result<Arc<MethodRoute>, Error> {
        let route = self.methods.get(name).ok_or_else(|| Error::method_not_found(name))?;
        self.access(view, &**route).map_err(|refused| refused.or_unknown(|| Error::method_not_found(name)))?;
        Ok(route.clone())
    }
}

/// [`Engine::access`] for the resources a server's own method lists or serves (skills):
/// one request's view, asking what `resources/read` would decide (audit C7: skills were
/// listed to callers `resources/read` would refuse).
#[derive(Debug)]
pub(crate) struct MethodResources {
    engine: Engine,
    meta: Arc<RequestMeta>,
    delivery: Delivery,
}

impl MethodResources {
    pub(crate) fn new(engine: &Engine, meta: &Arc<RequestMeta>, delivery: &Delivery) -> Arc<Self> {
        Arc::new(Self { engine: engine.clone(), meta: meta.clone(), delivery: delivery.clone() })
    }
}

impl ResourceAccess for MethodResources {
    fn readable(&self, uri: &str) -> Readable {
        let view = RequestView::new(&self.meta, &self.delivery);
        readable(self.engine.reach_resource(&self.engine.catalog(), &view, uri).map(drop))
    }

    fn registered(&self, uri: &str) -> Readable {
        readable(self.engine.reach_resource_key(&RequestView::new(&self.meta, &self.delivery), uri))
    }
}

fn readable(decided: Result<(), Refused>) -> Readable {
    match decided {
        Ok(()) => Readable::Granted,
        Err(Refused::Forbidden(error)) => Readable::Forbidden(error),
        Err(Refused::Unknown) => Readable::Hidden,
    }
}
