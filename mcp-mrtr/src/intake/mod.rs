//! What a request arrives with, read and checked before any handler runs: its envelope
//! and protocol version, its sealed `requestState`, the capabilities its client declared,
//! its MCP headers, its span; and the application's typed values it will be served with.

pub(crate) mod capability;
pub(crate) mod envelope;
pub(crate) mod param_headers;
pub mod request_state;
pub(crate) mod state_values;
pub(crate) mod telemetry;
