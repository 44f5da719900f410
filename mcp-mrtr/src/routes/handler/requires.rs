//! What a route requires before its handler runs: the application state it reads, the
//! scopes a caller needs, and the client capabilities its asks need. Each is declared on
//! the route (the macros declare what they can see) and checked in one place: state when
//! serving starts, scopes and capabilities by dispatch, before the handler runs.

use crate::intake::capability::Capability;
use crate::intake::state_values::StateNeed;

/// A route's requirements (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Requires {
    /// The `State<T>` types the handler reads.
    pub(crate) state: Vec<StateNeed>,
    /// The OAuth scopes a caller needs, every one.
    pub(crate) scopes: Vec<String>,
    /// The client capabilities the handler's asks need, every one.
    pub(crate) client: Vec<Capability>,
}

macro_rules! requirements {
    ($($route:ty),*) => {$(
        impl $route {
            /// Declares that the handler reads `State<T>`, so a server never given a `T`
            /// refuses to start serving instead of failing calls. The macros declare it
            /// for every `State<T>` parameter.
            pub fn requires_state<T: 'static>(mut self) -> Self {
                self.requires.state.push(StateNeed::of::<T>());
                self
            }

            /// Declares the OAuth scopes a caller needs: a caller without every one of
            /// them (or a request with no caller) is refused before the handler runs,
            /// with HTTP 403 and an `insufficient_scope` challenge naming them. The
            /// scopes are listed in the protected resource metadata (see [`crate::auth`]).
            /// `#[tool(scopes = [...])]` declares them for macro handlers.
            pub fn requires_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
                for scope in scopes.into_iter().map(Into::into) {
                    if !self.requires.scopes.contains(&scope) {
                        self.requires.scopes.push(scope);
                    }
                }
                self
            }

            /// Declares a client capability the handler's asks need: a request whose
            /// client did not declare it fails with `-32021` (naming every missing one)
            /// before the handler runs, so nothing the handler does before its first ask
            /// happens for a client that could never answer it.
            ///
            /// The macros declare it for every `ask!` that every successful call of the
            /// handler reaches, unless the body calls `ctx.client_supports(..)` (it then
            /// decides for itself). Asks behind a condition or an early `return`, and asks
            /// in helper functions, are gated where they are reached.
            pub fn requires_client_capability(mut self, capability: Capability) -> Self {
                if !self.requires.client.contains(&capability) {
                    self.requires.client.push(capability);
                }
                self
            }
        }
    )*};
}

requirements!(super::ToolRoute, super::PromptRoute, super::ResourceRoute, super::MethodRoute);
