#![no_main]
//! `_meta.traceparent`, `tracestate` and `baggage` (one a line): kept only when valid,
//! the same by both envelope readers (audit C1 was a panic here).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| mcp_mrtr::fuzzing::trace_context(bytes));
