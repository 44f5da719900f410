#![no_main]
//! MCP request headers. After `H`, a whole POST (headers, an empty line, the body) to the
//! fixture's HTTP endpoint: `Host`/`Origin`, content type, the envelope, and the
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` checks against it
//! (`transport/http/headers.rs`, reachable only that way). Otherwise, `Mcp-Param-*`
//! values against an argument (see `mcp_mrtr::fuzzing::param_headers`).

use libfuzzer_sys::fuzz_target;
use mcp_mrtr_fuzz::{head_and_body, open_router, post, send};

fuzz_target!(|bytes: &[u8]| {
    match bytes.strip_prefix(b"H") {
        Some(request) => {
            let (head, body) = head_and_body(request);
            send(open_router(), post(head, body));
        }
        None => mcp_mrtr::fuzzing::param_headers(bytes),
    }
});
