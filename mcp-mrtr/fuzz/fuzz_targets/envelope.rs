#![no_main]
//! A message body, read as HTTP and stdio read it: its JSON values are never counted below
//! what the parser makes, and the fast envelope reader and the general one (framing, era,
//! `_meta`, version) must agree wherever the fast one accepts.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| mcp_mrtr::fuzzing::envelope(bytes));
