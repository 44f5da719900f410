//! Example servers for mcp-mrtr. Each binary in `src/bin` is a thin `main` around a
//! server built here, so the integration tests can drive the very same servers.

pub mod deploy;
pub mod everything;
pub mod flows;
pub mod notes;
pub mod ported;
pub mod process;
pub mod reports;
pub mod soak;
pub mod stats;
