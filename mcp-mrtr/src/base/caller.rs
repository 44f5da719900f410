//! [`Caller`]: who is calling, as an authentication layer established it.
//!
//! Authentication belongs to the HTTP layer: the bundled OAuth resource server, or the
//! application's own middleware, verifies the request and inserts a `Caller` into the
//! request's extensions. The runtime only consumes it: it binds request states and
//! legacy sessions to the caller, and handlers read it (`caller: Caller` as a parameter,
//! or [`Ctx::caller`](crate::Ctx::caller)).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::base::error::Error;

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

/// Refuses a call whose caller lacks one of `required`, before its handler runs. No
/// caller at all (stdio, or HTTP without authentication) lacks every scope: a route
/// that declares scopes is never open to anonymous callers.
///
/// Entry points do not call this directly: they ask `dispatch/access.rs`, which runs
/// the visibility filter first.
pub(crate) fn authorize(required: &[String], caller: Option<&Caller>) -> Result<(), Error> {
    let granted = |scope: &String| caller.is_some_and(|c| c.has_scope(scope));
    if required.iter().all(granted) {
        return Ok(());
    }
    tracing::debug!(caller = caller.map(Caller::id), ?required, "refused a call for insufficient scope");
    Err(insufficient_scope(required))
}

/// `-32600` on HTTP 403 (like the other refusals of the transport, a bad `Origin`),
/// with `data.requiredScopes`: every scope the call needs, which the HTTP layer also
/// puts in the `insufficient_scope` challenge.
fn insufficient_scope(required: &[String]) -> Error {
    Error::invalid_request(format!("Forbidden: insufficient scope; this call needs {}", required.join(" ")))
        .with_data(json!({ REQUIRED_SCOPES: required }))
        .with_status(403)
}

const REQUIRED_SCOPES: &str = "requiredScopes";

/// The scopes an insufficient-scope error names.
pub(crate) fn required_scopes(error: &Error) -> Option<Vec<String>> {
    if error.http_status() != 403 {
        return None;
    }
    let scopes = error.data()?.get(REQUIRED_SCOPES)?.as_array()?;
    Some(scopes.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_with_scopes_needs_all_of_them_and_a_caller() {
        let needed = vec!["notes:read".to_owned(), "notes:write".to_owned()];
        let both = Caller::new("a").with_scopes(["notes:read", "notes:write", "extra"]);
        let one = Caller::new("b").with_scopes(["notes:read"]);
        assert!(authorize(&needed, Some(&both)).is_ok());
        assert!(authorize(&[], None).is_ok());
        for refused in [authorize(&needed, Some(&one)), authorize(&needed, None)] {
            let error = refused.expect_err("refused");
            assert_eq!(error.http_status(), 403);
            assert_eq!(required_scopes(&error), Some(needed.clone()));
        }
        assert_eq!(required_scopes(&Error::invalid_request("other")), None);
    }
}
