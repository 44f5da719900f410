#![no_main]
//! `inputResponses` (JSON): through dispatch, and decoded into each kind of typed answer,
//! which must read back the same from the state of the next round.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| mcp_mrtr::fuzzing::input_responses(bytes));
