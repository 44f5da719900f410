//! Procedural macros for [`mcp-mrtr`](https://docs.rs/mcp-mrtr): `#[tool]`, `#[prompt]`
//! and `#[resource]`, which turn an `async fn` into a registered handler and rewrite its
//! `ask!` calls. Depend on `mcp-mrtr`, which re-exports them and documents them; this
//! crate is an implementation detail.

mod ask;
mod attr;
mod check;
mod docs;
mod emit;
mod model;
mod needs;
mod param;
mod toolbox;

use proc_macro::TokenStream;

/// See `mcp_mrtr::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    emit::expand(attr::Kind::Tool, args.into(), item.into()).into()
}

/// See `mcp_mrtr::prompt`.
#[proc_macro_attribute]
pub fn prompt(args: TokenStream, item: TokenStream) -> TokenStream {
    emit::expand(attr::Kind::Prompt, args.into(), item.into()).into()
}

/// See `mcp_mrtr::resource`.
#[proc_macro_attribute]
pub fn resource(args: TokenStream, item: TokenStream) -> TokenStream {
    emit::expand(attr::Kind::Resource, args.into(), item.into()).into()
}

/// See `mcp_mrtr::toolbox`.
#[proc_macro_attribute]
pub fn toolbox(args: TokenStream, item: TokenStream) -> TokenStream {
    toolbox::expand(&args.into(), item.into()).into()
}
