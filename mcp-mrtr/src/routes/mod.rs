//! Handlers and the catalog: the routes a server registers (`handler`: `ToolRoute`, …,
//! `MethodRoute`; `apps`: MCP Apps' interfaces), the catalog that changes at run time and its change fanout
//! (`catalog`), and what the macros' generated code calls (`private`).

pub mod apps;
pub mod catalog;
pub mod handler;
pub(crate) mod private;
