//! The crate's `macro_rules!` macros: `ask!` (as `__ask`, which lib.rs re-exports under its
//! name with its docs), `once!`, `require_client_capability!`, and `tools!`, `prompts!`,
//! `resources!`. Each expands to calls through `$crate::__private`; inside a `#[tool]`
//! body the attribute rewrites `ask!` and `once!` first (see `mcp-mrtr-macros`).

#[doc(hidden)]
#[macro_export]
macro_rules! __ask {
    (@__mcp $ctx:ident, $key:expr; elicit $message:expr $(, $option:ident = $value:expr)* $(,)?) => {
        $ctx.ask($key, $crate::__private::Elicit::new($message) $(.$option($value))*)
    };
    (@__mcp $ctx:ident, $key:expr; elicit_url $message:expr, $url:expr $(,)?) => {
        $ctx.ask($key, $crate::__private::ElicitUrl::new($message, $url))
    };
    (@__mcp $ctx:ident, $key:expr; sample $prompt:expr $(, $option:ident = $value:expr)* $(,)?) => {
        $ctx.ask($key, $crate::__private::Sample::new($prompt) $(.$option($value))*)
    };
    (@__mcp $ctx:ident, $key:expr; roots $(,)?) => {
        $ctx.ask($key, $crate::__private::Roots)
    };
    (@__mcp $ctx:ident, $key:expr; $($rest:tt)*) => {
        ::core::compile_error!("ask! expects `elicit MESSAGE`, `elicit_url MESSAGE, URL`, `sample PROMPT[, option = value]` or `roots`")
    };
    ($ctx:ident, key = $key:expr, fresh, $($rest:tt)+) => {
        $crate::__ask!(@__mcp $ctx, $key; $($rest)+).fresh().await
    };
    ($ctx:ident, fresh, key = $key:expr, $($rest:tt)+) => {
        $crate::__ask!(@__mcp $ctx, $key; $($rest)+).fresh().await
    };
    ($ctx:ident, key = $key:expr, $($rest:tt)+) => {
        $crate::__ask!(@__mcp $ctx, $key; $($rest)+).await
    };
    ($ctx:ident, $($rest:tt)+) => {
        ::core::compile_error!("in a helper fn, ask! needs a key after the context: ask!(ctx, key = \"name\", …)")
    };
    ($($rest:tt)*) => {
        ::core::compile_error!("ask! can only be used inside a #[tool], #[prompt] or #[resource] function; in a helper async fn, pass the context: ask!(ctx, key = \"name\", elicit \"…\")")
    };
}

/// Runs a step once across all rounds of a multi-round call: its result is sealed into
/// the request state and reused when the handler runs again. `let id = once!(create().await?);`
///
/// Request states are single-use by default, so replaying an older round does not run the
/// step again; starting the call over without a state does (see [`Ctx::once`](crate::Ctx::once)).
///
/// ```
/// use mcp_mrtr::prelude::*;
///
/// # async fn charge(_cents: u32) -> std::io::Result<String> { Ok("ch_1".into()) }
/// #[derive(Deserialize, JsonSchema)]
/// struct Receipt { email: String }
///
/// /// Charges the card, then asks where to send the receipt.
/// #[tool]
/// async fn pay(cents: u32) -> Result<String, ToolError> {
///     // Charged in the first round only; the next round reads the id from the state.
///     let charge = once!(charge(cents).await?);
///     let receipt: Receipt = ask!(elicit "Where should the receipt go?")?;
///     Ok(format!("{charge}: receipt sent to {}", receipt.email))
/// }
/// # let _ = Server::new("shop", "1.0.0").tool(pay);
/// ```
#[macro_export]
macro_rules! once {
    (@__mcp $ctx:ident, $key:expr; $step:expr) => {
        match $crate::__private::begin_once(&$ctx, $key).await {
            ::core::result::Result::Ok(::core::option::Option::Some(done)) => done,
            ::core::result::Result::Ok(::core::option::Option::None) => {
                let done = $step;
                $crate::__private::record_once(&$ctx, $key, &done).await;
                done
            }
            ::core::result::Result::Err(halted) => halted.await,
        }
    };
    ($($rest:tt)*) => {
        ::core::compile_error!(
            "once! can only be used inside a #[tool], #[prompt] or #[resource] function; elsewhere use Ctx::once"
        )
    };
}

/// Returns `-32021` from the handler unless the client declared the capability on this
/// request: `require_client_capability!(ctx, Sampling);`
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::ErrorCode;
///
/// /// Connects the user's calendar, which takes a browser.
/// #[tool]
/// async fn connect_calendar(ctx: &Ctx) -> Result<String, ToolError> {
///     // Refused before anything is done, naming what is missing.
///     require_client_capability!(ctx, ElicitationUrl);
///     ask!(key = "connect", elicit_url "Connect your calendar", "https://example.com/connect")?;
///     Ok("connected".into())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let forms_only = serde_json::json!({ "elicitation": { "form": {} } });
/// let client = TestClient::new(Server::new("cal", "1.0.0").tool(connect_calendar)).with_capabilities(forms_only);
/// let refused = client.call_tool("connect_calendar", serde_json::json!({})).start().await;
/// assert_eq!(refused.error().unwrap().code(), ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
/// # }
/// ```
#[macro_export]
macro_rules! require_client_capability {
    ($ctx:expr, $capability:ident) => {
        $ctx.require($crate::__private::Capability::$capability)?
    };
}

/// Routes for several `#[tool]` functions at once: `server.tools(tools![a, b, c])`.
///
/// ```
/// use mcp_mrtr::prelude::*;
///
/// /// Adds two numbers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> Result<String, ToolError> {
///     Ok((a + b).to_string())
/// }
///
/// /// Subtracts `b` from `a`.
/// #[tool]
/// async fn sub(a: i64, b: i64) -> Result<String, ToolError> {
///     Ok((a - b).to_string())
/// }
///
/// let server = Server::new("calc", "1.0.0").tools(tools![add, sub]);
/// # let _ = server;
/// ```
#[macro_export]
macro_rules! tools {
    ($($tool:expr),* $(,)?) => { [$($crate::__private::ToolRoute::from($tool)),*] };
}

/// Routes for several `#[prompt]` functions at once: `server.prompts(prompts![a, b])`.
#[macro_export]
macro_rules! prompts {
    ($($prompt:expr),* $(,)?) => { [$($crate::__private::PromptRoute::from($prompt)),*] };
}

/// Routes for several `#[resource]` functions at once: `server.resources(resources![a, b])`.
#[macro_export]
macro_rules! resources {
    ($($resource:expr),* $(,)?) => { [$($crate::__private::ResourceRoute::from($resource)),*] };
}
