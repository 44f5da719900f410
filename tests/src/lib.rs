//! Test support for mcp-mrtr's integration tests: a real HTTP client on 127.0.0.1, a
//! server harness, request builders and the schema check every server message passes.

// Test support panics on purpose: a failed expectation is a failed test.
#![allow(clippy::missing_panics_doc)]

pub mod client;
mod drop_flag;
pub mod harness;
pub mod legacy;
pub mod listen;
pub mod pipe;
pub mod schema;
pub mod scripted;

pub use drop_flag::DropFlag;
