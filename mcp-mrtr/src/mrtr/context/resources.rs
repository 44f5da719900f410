//! The door a server's own methods (skills) take to the access decision of
//! `resources/read`: the core defines it, dispatch implements it (`dispatch/access.rs`),
//! and a `Ctx` carries one for a custom method's call.

use std::sync::Arc;

use super::Ctx;
use crate::base::error::Error;

/// What `resources/read` of one URI would do for a request, as its access decision says.
#[derive(Debug)]
pub(crate) enum Readable {
    /// A visible route serves it, and the caller holds its scopes.
    Granted,
    /// Visible (so lists show it), but the caller lacks a scope: this error is the answer.
    Forbidden(Error),
    /// No visible route serves it: answered like a URI nothing serves.
    Hidden,
}

/// The access decision of `resources/read`, for a method of the server's own that lists
/// or serves resources (skills): the core defines this door and dispatch implements it,
/// so such a method shows exactly what `resources/read` would serve.
pub(crate) trait ResourceAccess: Send + Sync + std::fmt::Debug {
    /// What `resources/read` of `uri` would do: the first visible route that serves it.
    fn readable(&self, uri: &str) -> Readable;
    /// The same decision about the route registered as `uri` alone, as `resources/list`
    /// lists it: a template that would serve the URI too does not count.
    fn registered(&self, uri: &str) -> Readable;
}

impl Ctx {
    /// This context, deciding resource access through `resources` (made for it, before
    /// any clone).
    pub(crate) fn with_resource_access(mut self, resources: Arc<dyn ResourceAccess>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.resources = Some(resources);
        }
        self
    }

    /// What `resources/read` of `uri` would do for this request; `Hidden` where no
    /// decision was given (only a server's own methods get one).
    pub(crate) fn readable(&self, uri: &str) -> Readable {
        self.inner.resources.as_ref().map_or(Readable::Hidden, |resources| resources.readable(uri))
    }

    /// The decision about the resource registered as `uri` (see [`ResourceAccess::registered`]).
    pub(crate) fn registered(&self, uri: &str) -> Readable {
        self.inner.resources.as_ref().map_or(Readable::Hidden, |resources| resources.registered(uri))
    }
}
