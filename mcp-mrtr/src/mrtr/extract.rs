//! What a handler takes besides its arguments, resolved by the runtime from the server
//! and the request: application state ([`State`]), what the app's middleware attached to
//! the request ([`Extension`]) and the authenticated [`Caller`].
//!
//! In a `#[tool]`, `#[prompt]` or `#[resource]` function, a parameter whose type is
//! `State<T>`, `Extension<T>`, `Caller`, or an `Option` of the last two, is one of these,
//! not an argument of the call:
//!
//! ```
//! use mcp_mrtr::prelude::*;
//!
//! struct Db { greeting: String }
//!
//! /// Greets the caller.
//! #[tool]
//! async fn greet(State(db): State<Db>, caller: Option<Caller>) -> Result<String, ToolError> {
//!     let who = caller.as_ref().map_or("stranger", Caller::id);
//!     Ok(format!("{}, {who}!", db.greeting))
//! }
//!
//! let server = Server::new("greeter", "1.0.0")
//!     .with_state(Db { greeting: "Hello".into() })
//!     .tool(greet);
//! # let _ = server;
//! ```
//!
//! State is looked up afresh each round (a handler that asks runs again from the top), so
//! what it reads may change between rounds; a side effect that must not repeat goes
//! through `once!`. A handler that takes `State<T>` of a server never given a `T` is
//! refused when the server starts serving, never on a client's call.

use std::any::type_name;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::base::caller::Caller;
use crate::base::error::Error;
use crate::base::error::ToolError;
use crate::mrtr::context::Ctx;

/// Application state a handler takes as a parameter: `State(db): State<Db>` after
/// [`Server::with_state`](crate::Server::with_state)`(db)`.
///
/// Holds the server's one `Arc<T>`: taking it costs a reference count, never a copy.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
///
/// /// Shared by every call, so what changes sits behind an atomic (or a lock).
/// struct Visits(AtomicU64);
///
/// /// Counts a visit.
/// #[tool]
/// async fn visit(State(visits): State<Visits>) -> Result<String, ToolError> {
///     Ok(format!("visit {}", visits.0.fetch_add(1, Ordering::Relaxed) + 1))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::new("counter", "1.0.0").with_state(Visits(AtomicU64::new(0))).tool(visit);
/// let client = TestClient::new(server);
/// client.call_tool("visit", serde_json::json!({})).start().await;
/// let second = client.call_tool("visit", serde_json::json!({})).start().await;
/// assert_eq!(second.text().as_deref(), Some("visit 2"));
/// # }
/// ```
pub struct State<T>(pub Arc<T>);

impl<T> Deref for State<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "State<{}>", type_name::<T>())
    }
}

/// A value the application's HTTP middleware attached to the request (verified claims,
/// a tenant, a trace id): `Extension(tenant): Extension<Tenant>`.
///
/// Take it as `Option<Extension<T>>` where some requests lack it (stdio has none); a
/// plain `Extension<T>` missing from a request fails the call with `-32603`, since that
/// is a server misconfiguration, not the client's fault.
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
///
/// /// Set by the app's middleware, e.g. from a verified header.
/// #[derive(Clone)]
/// struct Tenant(String);
///
/// /// Names the tenant the request belongs to.
/// #[tool]
/// async fn whoami(Extension(tenant): Extension<Tenant>) -> Result<String, ToolError> {
///     Ok(tenant.0)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Over HTTP a middleware layered on `server.into_router(config)?` inserts it into the
/// // request's extensions; here the test client stands in.
/// let client = TestClient::new(Server::new("saas", "1.0.0").tool(whoami))
///     .with_extension(Tenant("acme".into()));
/// let done = client.call_tool("whoami", serde_json::json!({})).start().await;
/// assert_eq!(done.text().as_deref(), Some("acme"));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Extension<T>(pub T);

impl<T> Deref for Extension<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Types a handler can take as a parameter, resolved from the server and the request.
///
/// Implemented for [`State`], [`Extension`], [`Caller`] and `Option`s of the last two;
/// the macros call it for parameters of those types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be resolved from the request: it does not implement `FromCtx`",
    label = "resolved from the server and the request, through `mcp_mrtr::extract::FromCtx`",
    note = "extractors are `State<T>`, `Extension<T>`, `Caller` and `Option`s of the last two (or aliases of them), and types of your own that implement `FromCtx`; for an argument of the call, write `#[mcp(arg)]` instead"
)]
pub trait FromCtx: Sized {
    /// Resolves the value for this request.
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError>;
}

impl<T: Send + Sync + 'static> FromCtx for State<T> {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        ctx.state::<T>().map(State).ok_or_else(|| {
            // Servers check this before serving; only a handler registered in a way that
            // skipped the check gets here.
            missing(format!("the server was given no state of type {}: call Server::with_state", type_name::<T>()))
        })
    }
}

impl<T: Clone + Send + Sync + 'static> FromCtx for Extension<T> {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        ctx.extension::<T>().cloned().map(Extension).ok_or_else(|| {
            missing(format!(
                "the request carries no {} extension: add the middleware that sets it, or take an Option",
                type_name::<T>()
            ))
        })
    }
}

impl<T: Clone + Send + Sync + 'static> FromCtx for Option<Extension<T>> {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        Ok(ctx.extension::<T>().cloned().map(Extension))
    }
}

impl FromCtx for Caller {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        ctx.caller().cloned().ok_or_else(|| {
            missing("this handler needs an authenticated caller, and the request has none: put it behind authentication, or take an Option<Caller>".into())
        })
    }
}

impl FromCtx for Option<Caller> {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        Ok(ctx.caller().cloned())
    }
}

fn missing(message: String) -> ToolError {
    tracing::error!("{message}");
    ToolError::protocol(Error::internal(message))
}
