//! [`Caller`]: who is calling, as an authentication layer established it.
//!
//! Authentication belongs to the HTTP layer: the bundled OAuth resource server, or the
//! application's own middleware, verifies the request and inserts a `Caller` into the
//! request's extensions. The runtime only consumes it: it binds request states and
//! legacy sessions to the caller, and handlers read it (`caller: Caller` as a parameter,
//! or [`Ctx::caller`](crate::Ctx::caller)).

use std::collections::BTreeSet;

/// The authenticated caller of a request.
///
/// ```
/// use mcp_mrtr::Caller;
///
/// let alice = Caller::new("alice").with_scopes(["notes:read", "notes:write"]);
/// assert!(alice.has_scope("notes:write"));
/// assert_eq!(alice.id(), "alice");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    id: String,
    scopes: BTreeSet<String>,
}

impl Caller {
    /// A caller known by `id`: a stable identifier of the principal (a token's `sub`, a
    /// user id), never a secret. Request states and sessions are bound to it.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into(), scopes: BTreeSet::new() }
    }

    /// The scopes the caller was granted.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The caller's identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The scopes the caller was granted, in order.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(String::as_str)
    }

    /// Whether the caller was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }
}
