//! The `everything` binary over real stdio: a child process, its stdin and stdout, and
//! what it says at start-up about its request-state keys.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

fn everything(keys: Option<&str>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_everything"));
    command.arg("--stdio").env("RUST_LOG", "warn");
    match keys {
        Some(keys) => command.env("MCP_MRTR_STATE_KEYS", keys),
        None => command.env_remove("MCP_MRTR_STATE_KEYS"),
    };
    command
}

#[test]
fn the_binary_serves_newline_delimited_json_on_stdio() {
    let mut server = common::Server::start(everything(None));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (id, method, params) in [
        (1, "server/discover", json!({ "_meta": meta })),
        (2, "tools/call", json!({ "name": "test_simple_text", "_meta": meta })),
    ] {
        server.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
    }
    let replies: Vec<Value> = vec![server.next(), server.next()];
    // Closing stdin ends the server once it has answered what it read.
    let (succeeded, rest, stderr) = server.finish();
    assert!(succeeded && rest.is_empty(), "{rest:?} {stderr}");
    let mut ids: Vec<_> = replies.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);
    assert!(replies.iter().all(|r| r["result"]["resultType"] == "complete"));
    // Over stdio a random key costs nothing (one process, one client, states that never
    // leave it), so a host's log does not get a warning at every start (issue 50)…
    assert_eq!(stderr.matches("MCP_MRTR_STATE_KEYS is not set").count(), 0, "{stderr}");
}

/// …while over HTTP, where another instance or a restart must open the states, it does.
#[test]
fn over_http_a_random_key_is_announced_once() {
    let instance = crate::instance::Instance::start(None);
    instance.terminate();
    let (_, log) = instance.exit_within(crate::instance::TIMEOUT);
    assert_eq!(log.matches("MCP_MRTR_STATE_KEYS is not set").count(), 1, "{log}");
}

/// The process's stdin and stdout, pipes here, are read and written on the runtime: what
/// reaches them is what a client wrote, whole lines in order, however it was split.
#[test]
fn the_process_pipes_carry_every_line_whatever_its_size_or_timing() {
    let mut server = common::Server::start(everything(None));
    let call = |id: u64| {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "test_simple_text", "_meta": meta } })
        .to_string()
    };
    // A line past the 4 MiB limit, then one that must still be answered.
    let mut too_long = vec![b'x'; 4 * 1024 * 1024 + 10];
    too_long.push(b'\n');
    server.write(&too_long);
    server.write(format!("{}\n", call(1)).as_bytes());
    let refused = server.next();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("longer than"), "{refused}");
    assert_eq!(server.next()["id"], 1);
    // 300 requests in one write, answered one each; the last line has no newline and is
    // answered when stdin closes.
    let burst: Vec<String> = (2..=301).map(call).collect();
    let burst = burst.join("\n");
    server.write(burst.as_bytes());
    let mut ids: Vec<u64> = (2..=300).map(|_| server.next()["id"].as_u64().unwrap()).collect();
    server.close_input();
    ids.push(server.next()["id"].as_u64().unwrap());
    let (succeeded, rest, stderr) = server.finish();
    assert!(succeeded && rest.is_empty(), "{rest:?} {stderr}");
    ids.sort_unstable();
    assert_eq!(ids, (2..=301).collect::<Vec<_>>());
}

/// Audit C1 (2026-12-02): a `traceparent` with a multi-byte character where a field
/// boundary goes panicked the envelope parser before dispatch, and the process exited
/// with 101 on this one line. Now each gets an answer and the server reads the next.
#[test]
fn a_traceparent_that_panicked_the_parser_is_one_answer_and_the_server_goes_on() {
    let mut server = common::Server::start(everything(None));
    let traceparents = [format!("\u{20ac}{}", "0".repeat(53)), format!("0\u{20ac}{}", "0".repeat(52))];
    for (id, traceparent) in (1..).zip(&traceparents) {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": traceparent,
        });
        server.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": { "_meta": meta } }));
        let reply = server.next();
        assert_eq!(reply["id"], id, "{reply}");
        assert!(reply["result"]["tools"].is_array(), "an invalid traceparent is as if absent: {reply}");
    }
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    server.send(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "test_simple_text", "_meta": meta } }));
    let reply = server.next();
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    let (succeeded, rest, stderr) = server.finish();
    assert!(succeeded && rest.is_empty(), "{rest:?} {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn malformed_or_weak_keys_fail_at_start_up_without_quoting_the_secret() {
    let zeros = format!("k:{}", "A".repeat(43));
    for (keys, says) in [
        ("not-a-key-list", "MCP_MRTR_STATE_KEYS entry 1"),
        ("k:c2VjcmV0LXNlY3JldC1zZWNyZXQ", "must decode to 32 bytes"),
        (zeros.as_str(), "must be random"),
    ] {
        let (succeeded, stdout, stderr) = common::Server::start(everything(Some(keys))).finish();
        assert!(!succeeded, "started with {keys:?}");
        assert!(stdout.is_empty(), "answered with bad keys: {stdout:?}");
        assert!(stderr.contains(says), "{keys:?}: {stderr}");
        assert!(!stderr.contains("c2VjcmV0"), "the error quotes the secret: {stderr}");
    }
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

/// The fifth audit's D4: a client that writes requests and never reads the answers used
/// to have every line read and held (20,000 lines: 8 → 346 MiB). Now at most
/// `Stdio::max_requests` run; then stdin is not read, and the client's own pipe holds it
/// back. Once it reads, every request is answered.
#[test]
fn a_client_that_does_not_read_its_answers_is_held_back_by_its_pipe() {
    use std::io::{BufRead as _, Write as _};

    const LINES: u64 = 20_000;
    let mut child = everything(None)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start everything");
    let (mut stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let (written, progress) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {} });
        for id in 1..=LINES {
            let line = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": { "_meta": meta } });
            if stdin.write_all(format!("{line}\n").as_bytes()).is_err() {
                return;
            }
            let _ = written.send(id);
        }
    });
    // Nobody reads: the server stops reading, and the writer is stuck far from the end.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let stuck_at = progress.try_iter().last().unwrap_or(0);
    eprintln!("with nobody reading its answers, the client wrote {stuck_at} of {LINES} lines");
    assert!(stuck_at < LINES / 4, "the server read {stuck_at} of {LINES} lines nobody took the answers of");

    // Reading now, every request is answered, once.
    let mut answered = std::collections::BTreeSet::new();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(2);
    while answered.len() < usize::try_from(LINES).unwrap() && std::time::Instant::now() < deadline {
        let reply: Value = serde_json::from_str(&lines.next().expect("a line").expect("readable")).unwrap();
        assert!(reply["result"]["tools"].is_array(), "{reply}");
        assert!(answered.insert(reply["id"].as_u64().unwrap()), "answered twice: {reply}");
    }
    assert_eq!(answered.len(), usize::try_from(LINES).unwrap());
    writer.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
}

/// The sixth audit's E3: a request slot was taken before a line was read, so calls that
/// wait for their client's answers, one per slot, left no slot to read the answers with;
/// `notifications/cancelled` and `ping` went unread too, and every call hung until the
/// bridge's 5-minute timeout. Now a line is read first, and only a request for a handler
/// takes a slot.
#[test]
fn with_every_slot_held_by_a_call_that_asks_answers_cancellations_and_pings_get_through() {
    const PROMPTLY: Duration = Duration::from_secs(10);
    let slots = i64::try_from(mcp_mrtr::stdio::MAX_REQUESTS).unwrap();
    let mut server = common::Server::start(everything(None));
    server.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "host", "version": "1"}}}));
    assert_eq!(server.next()["id"], 0);
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for id in 1..=slots {
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": format!("call {id}")}}}));
    }
    // Every call asks its question, and holds its slot while it waits for the answer.
    let mut questions = BTreeMap::new();
    for _ in 1..=slots {
        let asked = server.next();
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        let message = asked["params"]["message"].as_str().expect("the question's message");
        questions.insert(message.strip_prefix("call ").unwrap().parse::<i64>().unwrap(), asked);
    }

    server.send(&json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}));
    assert_eq!(server.next_within(PROMPTLY), json!({"jsonrpc": "2.0", "id": "ping", "result": {}}));
    // The cancellation is read: call 1 ends without a word, and its slot serves a listing.
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "the user gave up"}}));
    server.send(&json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}));
    let listed = server.next_within(PROMPTLY);
    assert!(listed["id"] == "list" && listed["result"]["tools"].is_array(), "{listed}");
    // Every other call's answer is read, and its call completes.
    let content = json!({"username": "ada", "email": "ada@example.com"});
    for asked in questions.values().skip(1) {
        server.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
            "result": {"action": "accept", "content": content}}));
    }
    let mut completed = BTreeSet::new();
    for _ in 2..=slots {
        let reply = server.next_within(PROMPTLY);
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("User response: action=accept"), "{reply}");
        completed.insert(reply["id"].as_i64().expect("a call's reply"));
    }
    assert_eq!(completed, (2..=slots).collect());
    let (succeeded, rest, stderr) = server.finish();
    assert!(succeeded && rest.is_empty(), "the cancelled call said nothing: {rest:?} {stderr}");
}

/// A modern `tools/call` of `test_simple_text` with id `id`, as one line.
fn simple_call(id: u64) -> String {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "test_simple_text", "_meta": meta } });
    format!("{call}\n")
}

/// The ids of the answers among `lines`, sorted, each checked to be a completed call.
fn answered(lines: impl IntoIterator<Item = String>) -> Vec<u64> {
    let mut ids: Vec<u64> = lines
        .into_iter()
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
        .filter(|reply| reply.get("id").is_some())
        .map(|reply| {
            assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
            reply["id"].as_u64().unwrap()
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// The lines the server writes to `stream`, one a call, each read within
/// [`common::TIMEOUT`].
#[cfg(unix)]
fn lines_from(stream: std::os::unix::net::UnixStream) -> impl FnMut() -> String {
    use std::io::BufRead as _;
    stream.set_read_timeout(Some(common::TIMEOUT)).unwrap();
    let mut replies = std::io::BufReader::new(stream);
    move || {
        let mut line = String::new();
        replies.read_line(&mut line).expect("the server answers in time");
        line
    }
}

/// A host written for Node gives its child socket pairs, not pipes, for stdin and stdout:
/// they are served on the runtime too, large lines and bursts alike, and closing the
/// client's end of stdin ends the server.
#[cfg(unix)]
#[test]
fn socket_pairs_for_stdin_and_stdout_carry_every_line() {
    use std::io::Write as _;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    let (mut to_server, server_in) = UnixStream::pair().unwrap();
    let (from_server, server_out) = UnixStream::pair().unwrap();
    let mut command = everything(None);
    command.stdin(OwnedFd::from(server_in)).stdout(OwnedFd::from(server_out)).stderr(std::process::Stdio::null());
    let mut child = command.spawn().unwrap();
    // The server's ends live in the child alone, as a host leaves them.
    drop(command);
    let mut next = lines_from(from_server);
    let mut too_long = vec![b'x'; 4 * 1024 * 1024 + 10];
    too_long.push(b'\n');
    to_server.write_all(&too_long).unwrap();
    to_server.write_all(simple_call(1).as_bytes()).unwrap();
    let refused: Value = serde_json::from_str(&next()).unwrap();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let burst: String = (2..=200).map(simple_call).collect();
    to_server.write_all(burst.as_bytes()).unwrap();
    let lines: Vec<String> = (1..=200).map(|_| next()).collect();
    assert_eq!(answered(lines), (1..=200).collect::<Vec<_>>());
    // Served on the runtime: no thread of its own reads stdin or writes stdout.
    #[cfg(target_os = "linux")]
    {
        let threads = thread_names(child.id());
        assert!(!threads.iter().any(|name| name.starts_with("mcp-mrtr-std")), "{threads:?}");
    }
    to_server.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(common::exited(&mut child));
}

/// Where stdin or stdout cannot be served on the runtime, threads of their own serve
/// them: here stdout is shared with stderr (`2>&1`), which must stay blocking so that a
/// full pipe makes a log line wait rather than fail. (A terminal or a file is served so
/// too.)
#[cfg(target_os = "linux")]
#[test]
fn stdout_shared_with_stderr_is_served_on_threads() {
    use std::io::Write as _;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    let (mut to_server, server_in) = UnixStream::pair().unwrap();
    let (output, server_out) = UnixStream::pair().unwrap();
    let mut command = everything(None);
    command
        .stdin(OwnedFd::from(server_in))
        .stdout(OwnedFd::from(server_out.try_clone().unwrap()))
        .stderr(OwnedFd::from(server_out));
    let mut child = command.spawn().unwrap();
    drop(command);
    let mut next = lines_from(output);
    let burst: String = (1..=50).map(simple_call).collect();
    to_server.write_all(burst.as_bytes()).unwrap();
    let lines: Vec<String> = (1..=50).map(|_| next()).collect();
    assert_eq!(answered(lines), (1..=50).collect::<Vec<_>>());
    let threads = thread_names(child.id());
    assert!(threads.iter().any(|name| name == "mcp-mrtr-stdin"), "{threads:?}");
    assert!(threads.iter().any(|name| name == "mcp-mrtr-stdout"), "{threads:?}");
    to_server.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(common::exited(&mut child));
}

/// The names of process `pid`'s threads.
#[cfg(target_os = "linux")]
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect()
}
