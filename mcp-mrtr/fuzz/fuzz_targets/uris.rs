#![no_main]
//! URI templates and URIs (a line each): matching, then reading the URI from the
//! fixture's resources, templates and skills.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| mcp_mrtr::fuzzing::uris(bytes));
