//! The fifth audit's D3: a held request kept its whole `arguments` tree for the handler's
//! life, unused members included, at about 40 times the bytes of its body (a 1 MiB body:
//! 42 MiB; 8 held calls took `everything` from 11 to 347 MiB). What a held request keeps
//! is what its handler read. Resident memory of a real server, over real sockets.

use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use crate::instance::{self, Instance};

fn slow_call(pad: usize) -> serde_json::Value {
    // `slow_compute` reads `seconds` and `label`; `pad` is what it never reads.
    let arguments = json!({ "seconds": 30, "pad": vec![0u8; pad] });
    let mut call =
        instance::request("tools/call", json!({ "name": "slow_compute", "arguments": arguments }), &json!({}));
    // Its first progress report, a second in, says the handler holds the call.
    call["params"]["_meta"]["progressToken"] = json!("held");
    call
}

#[test]
fn a_held_call_keeps_what_its_handler_reads_not_its_unused_arguments() {
    let server = Instance::start(None);
    // 90,000 values, under the bound: 180 KB of body, about 6.5 MiB as a tree.
    let call = slow_call(90_000);
    // One call first, so what serving a call allocates once is in the baseline.
    drop(instance::open(server.addr, &call));
    std::thread::sleep(Duration::from_millis(500));
    let before = server.resident_kib();
    let mut held: Vec<TcpStream> = (0..32).map(|_| instance::open(server.addr, &call)).collect();
    // Measured once every handler has reported: no body is still being read or parsed,
    // however slowly a loaded machine serves them.
    for socket in &mut held {
        instance::read_until(socket, &mut String::new(), "notifications/progress");
    }
    let grown_mib = server.resident_kib().saturating_sub(before) / 1024;
    eprintln!("32 held calls with 180 KB of unused arguments: {grown_mib} MiB more");
    // Each held call keeps its body (until it ends), its handler's few bytes and its
    // connection's buffers: about 6 MiB for the 32, where their trees were 200 MiB. The
    // bound leaves room for the allocator keeping a few freed trees (6.5 MiB each) on a
    // busy machine: CI once saw 24 MiB.
    assert!(grown_mib < 48, "32 held calls took {grown_mib} MiB more");
    drop(held);
}

/// A body whose values would parse to 36 times its size is refused before it is parsed.
#[test]
fn a_body_with_more_json_values_than_the_bound_is_refused_unparsed() {
    let server = Instance::start(None);
    let (status, messages) = instance::finish(instance::open(server.addr, &slow_call(520_000)), String::new());
    assert_eq!(status, 413, "{messages:?}");
    assert_eq!(messages[0]["error"]["code"], -32600, "{messages:?}");
    assert!(messages[0]["error"]["message"].as_str().unwrap().contains("more than the 100000"), "{messages:?}");
}
