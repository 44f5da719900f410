//! The `everything` binary over real stdio: a child process, its stdin and stdout.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

#[test]
fn the_binary_serves_newline_delimited_json_on_stdio() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_everything"))
        .arg("--stdio")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start everything --stdio");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut stdin = child.stdin.take().unwrap();
    for (id, method, params) in [
        (1, "server/discover", json!({ "_meta": meta })),
        (2, "tools/call", json!({ "name": "test_simple_text", "_meta": meta })),
    ] {
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        writeln!(stdin, "{line}").unwrap();
    }
    // Closing stdin ends the server once it has answered what it read.
    drop(stdin);
    let replies: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(child.wait().unwrap().success());
    let mut ids: Vec<_> = replies.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);
    assert!(replies.iter().all(|r| r["result"]["resultType"] == "complete"));
}

#[test]
fn help_prints_usage_and_succeeds_while_a_bad_flag_fails() {
    let help = Command::new(env!("CARGO_BIN_EXE_everything")).arg("--help").output().expect("run everything --help");
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--port N"));
    let bad = Command::new(env!("CARGO_BIN_EXE_everything")).arg("--bogus").output().expect("run everything --bogus");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("usage:"));
}
