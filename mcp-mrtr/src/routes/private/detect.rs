//! What the macros cannot see: whether a type they read by its spelling is really ours.
//!
//! A macro sees tokens, not types. It takes a parameter spelled `State<T>`, `Extension<T>`
//! or `Caller` for one of our extractors and one spelled `Ctx` for the context; the traits
//! here make a misreading (a user's own `struct Caller`) fail the build with a message
//! that says so, instead of an unrelated trait error. Where a question can be answered by
//! the type alone (does an extractor need state, is a tool's result structured), the
//! [`Probe`] answers it and the spelling does not matter.

use std::marker::PhantomData;
use std::ops::Deref;

use schemars::JsonSchema;
use serde_json::Value;

use crate::base::caller::Caller;
use crate::base::error::ToolError;
use crate::mrtr::context::Ctx;
use crate::mrtr::extract::{Extension, FromCtx, State};
use crate::routes::handler::Json;
use crate::routes::handler::{PromptRoute, ResourceRoute, ToolRoute};
use crate::routes::private::output_schema;

/// mcp_mrtr's own extractors: what a parameter the macros read as one, by its spelling,
/// must be. Resolution goes through [`FromCtx`], so both always agree on what resolves.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is read as one of mcp_mrtr's extractors, by its name, but it is not one",
    label = "taken for mcp_mrtr's `State<T>`, `Extension<T>` or `Caller`, resolved from the request",
    note = "a parameter typed `State<T>`, `Extension<T>` or `Caller` (or an `Option` of the last two) is resolved from the server and the request, not read from the call's arguments",
    note = "to take a type of your own as an argument, write `#[mcp(arg)]` on the parameter"
)]
pub trait Extractor: Sized {
    /// Resolves the value for this request.
    fn extract(ctx: &Ctx) -> Result<Self, ToolError>;
}

// `where Self: FromCtx` rather than a copy of each `FromCtx` impl's bounds: a state that
// is not `Sync` is reported once, as `FromCtx` words it. Written out rather than made by a
// `macro_rules!`, which would show in the help of every such error.
impl<T> Extractor for State<T>
where
    Self: FromCtx,
{
    fn extract(ctx: &Ctx) -> Result<Self, ToolError> {
        Self::from_ctx(ctx)
    }
}

impl<T> Extractor for Extension<T>
where
    Self: FromCtx,
{
    fn extract(ctx: &Ctx) -> Result<Self, ToolError> {
        Self::from_ctx(ctx)
    }
}

impl<T> Extractor for Option<Extension<T>>
where
    Self: FromCtx,
{
    fn extract(ctx: &Ctx) -> Result<Self, ToolError> {
        Self::from_ctx(ctx)
    }
}

impl Extractor for Caller {
    fn extract(ctx: &Ctx) -> Result<Self, ToolError> {
        Self::from_ctx(ctx)
    }
}

impl Extractor for Option<Caller> {
    fn extract(ctx: &Ctx) -> Result<Self, ToolError> {
        Self::from_ctx(ctx)
    }
}

/// The request context, by value or by reference: what a parameter the macros read as
/// the context, by its spelling, must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is read as mcp_mrtr's request context, by its name, but it is not `mcp_mrtr::Ctx`",
    label = "a parameter typed `Ctx` or `&Ctx` receives the request context",
    note = "to take a type of your own named `Ctx` as an argument, write `#[mcp(arg)]` on the parameter"
)]
pub trait Context<'a> {
    /// The parameter's value, from the handler's context.
    fn bind(ctx: &'a Ctx) -> Self;
}

impl<'a> Context<'a> for &'a Ctx {
    fn bind(ctx: &'a Ctx) -> Self {
        ctx
    }
}

impl Context<'_> for Ctx {
    fn bind(ctx: &Ctx) -> Self {
        ctx.clone()
    }
}

/// A question about a concrete type, answered by which method a call finds: called as
/// `probe::<X>().method()`, a method of an inherent impl for `Probe<Shape>` (the shapes
/// that matter) is found first; for any other `X` the call derefs the probe to
/// [`Otherwise`], which has the fallback. Handlers are never generic, so `X` is always
/// concrete and the answer is the type's, whatever the user called it (an alias of
/// `State<T>` included, a user's own `State` excluded).
///
/// Inherent methods and a deref rather than two traits and `&&` (autoref
/// specialisation), and a function rather than `Probe::<X>::new()`: the expansion needs
/// no `use` block and no lookup among `Probe`'s impls, which cost each `#[tool]` a
/// measurable share of its compile time.
pub struct Probe<T>(PhantomData<fn() -> T>);

/// A probe of `T`.
pub const fn probe<T>() -> Probe<T> {
    Probe(PhantomData)
}

impl<T> Deref for Probe<T> {
    type Target = Otherwise;
    fn deref(&self) -> &Otherwise {
        &Otherwise
    }
}

/// What a [`Probe`] of a type of no shape that matters answers.
pub struct Otherwise;

/// A route that can declare the state its handler reads.
pub trait RequiresState {
    /// [`ToolRoute::requires_state`] and its siblings.
    fn requires_state_of<T: 'static>(self) -> Self;
}

macro_rules! requires_state {
    ($($route:ty),*) => {$(
        impl RequiresState for $route {
            fn requires_state_of<T: 'static>(self) -> Self {
                self.requires_state::<T>()
            }
        }
    )*};
}

requires_state!(ToolRoute, PromptRoute, ResourceRoute);

/// An extractor that is `State<T>` (however it is spelled: an alias under
/// `#[mcp(extract)]` too) makes the route require a `T`, so a server never given one
/// refuses to serve.
impl<T> Probe<State<T>> {
    /// `route`, requiring the state. (The bound is here rather than on the impl, so a
    /// `T` that cannot be required is reported, not passed over to the fallback.)
    pub fn require<R: RequiresState>(&self, route: R) -> R
    where
        T: 'static,
    {
        route.requires_state_of::<T>()
    }
}

/// A tool's result that is `Json<T>` or `Result<Json<T>, _>` (however spelled: an alias
/// included, a user's own `Json` excluded) is structured, with `T`'s schema.
impl<T> Probe<Json<T>> {
    /// What makes `T`'s schema, the tool's `outputSchema` (a function, for
    /// `__private::tool` to call). The bound is here rather than on the impl, so a `T`
    /// without a schema is reported as that, not passed over to the fallback, which
    /// would quietly list no schema.
    pub fn output_schema(&self) -> Option<fn() -> Value>
    where
        T: JsonSchema,
    {
        Some(output_schema::<T>)
    }
}

impl<T, E> Probe<Result<Json<T>, E>> {
    /// What makes `T`'s schema, as for `Json<T>`.
    pub fn output_schema(&self) -> Option<fn() -> Value>
    where
        T: JsonSchema,
    {
        Some(output_schema::<T>)
    }
}

impl Otherwise {
    /// Any other extractor needs no state: `route`, as it is.
    pub fn require<R>(&self, route: R) -> R {
        route
    }

    /// Any other result is unstructured: no `outputSchema`.
    pub fn output_schema(&self) -> Option<fn() -> Value> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_state_needs_state() {
        struct Db;
        type Pool = State<Db>;
        let route =
            crate::protocol::Tool::new("t").handler(|_ctx, _args: serde_json::Value| async { Ok::<_, ToolError>("") });
        let route = probe::<Pool>().require(route);
        let route = probe::<Caller>().require(route);
        assert_eq!(route.requires.state.len(), 1);
    }

    #[test]
    fn structured_output_is_found_by_type() {
        #[derive(schemars::JsonSchema)]
        struct Weather {
            _celsius: f64,
        }
        type Report = Json<Weather>;
        struct UserJson;
        let schema = probe::<Report>().output_schema().map(|schema| schema());
        assert_eq!(schema.unwrap()["properties"]["_celsius"]["type"], "number");
        assert!(probe::<Result<Json<Weather>, ToolError>>().output_schema().is_some());
        assert!(probe::<UserJson>().output_schema().is_none());
        assert!(probe::<String>().output_schema().is_none());
    }
}
