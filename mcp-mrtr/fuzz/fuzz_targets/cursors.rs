#![no_main]
//! A `cursor` for every `*/list` and `skills/list`: refused as invalid params, or a page
//! whose own next cursors are accepted in turn.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| mcp_mrtr::fuzzing::cursors(bytes));
