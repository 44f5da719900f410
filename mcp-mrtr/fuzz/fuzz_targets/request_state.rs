#![no_main]
//! A presented `requestState`: never opens unless the server sealed it for this call;
//! after `seal:`, a payload that must survive sealing and opening, and nothing else.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| mcp_mrtr::fuzzing::request_state(bytes));
