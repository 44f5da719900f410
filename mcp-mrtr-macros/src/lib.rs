//! Procedural macros for [`mcp-mrtr`](https://docs.rs/mcp-mrtr): `#[tool]`, `#[prompt]`,
//! `#[resource]` and the `ask!` rewrite. Depend on `mcp-mrtr`, which re-exports them;
//! this crate is an implementation detail.
