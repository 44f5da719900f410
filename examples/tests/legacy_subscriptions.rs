//! The sixth audit's E2: a 2025-11-25 session's `resources/subscribe` kept any URI, of any
//! length and naming nothing the server serves, up to 1,024 per session, for the session's
//! life (two sessions held 512 MiB after 6 s of 1 MB subscribes). Now a session subscribes
//! only to what a resource or template serves it, by URIs of at most 2 KiB, and what its
//! subscriptions take is bounded per session and per client, over all its sessions. Real
//! sessions on a real `everything` process, over sockets on 127.0.0.1.

use crate::instance::{Instance, LegacySession};

use serde_json::{json, Value};

/// A URI of the fixture's template `test://template/{id}/data`.
fn template_uri(id: &str) -> String {
    format!("test://template/{id}/data")
}

fn subscribe(session: &LegacySession, id: u64, uri: &str) -> Value {
    let (status, reply) = session.call(id, "resources/subscribe", &json!({ "uri": uri }));
    assert_eq!(status, 200, "a session's errors travel on 200: {reply}");
    reply
}

/// The JSON-RPC error code of a refusal, and its message.
fn refusal(reply: &Value) -> (i64, &str) {
    let error = &reply["error"];
    (error["code"].as_i64().unwrap_or_else(|| panic!("not refused: {reply}")), error["message"].as_str().unwrap_or(""))
}

#[test]
fn a_session_subscribes_only_to_what_the_server_serves_it_by_uris_of_at_most_2_kib() {
    let server = Instance::start(None);
    let session = LegacySession::open(server.addr, "2025-11-25");
    for (id, uri) in [(1, "test://static-text".to_owned()), (2, template_uri("42"))] {
        assert_eq!(subscribe(&session, id, &uri)["result"], json!({}), "{uri}");
    }

    let long = template_uri(&"x".repeat(3_000));
    let refused = subscribe(&session, 3, &long);
    let (code, message) = refusal(&refused);
    assert_eq!(code, -32602, "{refused}");
    assert!(message.contains("at most 2048"), "{message}");

    let unknown = subscribe(&session, 4, "test://nothing-serves-this");
    assert_eq!(refusal(&unknown).0, -32602, "{unknown}");
    assert_eq!(unknown["error"]["data"]["uri"], "test://nothing-serves-this", "as resources/read says it: {unknown}");

    let (_, unsubscribed) = session.call(5, "resources/unsubscribe", &json!({ "uri": "test://static-text" }));
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed}");
}

#[test]
fn a_flood_of_subscriptions_is_refused_past_the_bounds_and_the_server_does_not_grow() {
    let server = Instance::start(None);
    let sessions: Vec<LegacySession> = (0..10).map(|_| LegacySession::open(server.addr, "2025-11-25")).collect();
    // What serving a subscribe allocates once is in the baseline.
    for session in &sessions {
        assert_eq!(subscribe(session, 1, &template_uri("warm"))["result"], json!({}));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before = server.resident_kib();

    // 1 MB URIs, each its own, 64 MB on four sessions: the old server kept every one.
    let mut huge = Vec::new();
    for (s, session) in sessions[..4].iter().enumerate() {
        for n in 0..16 {
            let uri = template_uri(&format!("{s}-{n}-{}", "x".repeat(1_000_000)));
            huge.push(subscribe(session, 100 + n, &uri));
        }
    }
    // Then URIs of 1.9 kB, a hundred on each of the ten sessions of this one client. Each
    // counts its bytes and 64 for keeping it, the warm-up's too.
    let pad = "y".repeat(1_870);
    let mut taken = vec![template_uri("warm").len() + 64; sessions.len()];
    let mut refused = Vec::new();
    for (s, session) in sessions.iter().enumerate() {
        for n in 0..100 {
            let uri = template_uri(&format!("{s}-{n}-{pad}"));
            let reply = subscribe(session, 1_000 + n, &uri);
            if reply.get("result").is_some() {
                taken[s] += uri.len() + 64;
            } else {
                refused.push(reply);
            }
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let grown_mib = server.resident_kib().saturating_sub(before) / 1024;
    eprintln!("64 subscribes of 1 MB and 1,000 of 1.9 kB: {grown_mib} MiB more; bytes kept per session {taken:?}");

    assert!(grown_mib < 24, "the server grew by {grown_mib} MiB");
    for reply in &huge {
        let (code, message) = refusal(reply);
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains("at most 2048"), "{message}");
    }
    assert!(taken.iter().all(|&bytes| bytes <= 128 << 10), "a session kept more than 128 KiB: {taken:?}");
    let client = taken.iter().sum::<usize>();
    assert!(client <= 1 << 20, "the client's sessions kept {client} bytes, more than its 1 MiB: {taken:?}");
    assert!(client > (1 << 20) - 2_000, "its sessions took its share, and no more: {client}");
    assert!(refused.iter().all(|reply| refusal(reply).0 == -32602), "{refused:?}");
    assert!(
        refused.iter().any(|reply| refusal(reply).1.contains("share")),
        "ten sessions of one client together hit its share: {:?}",
        refused.last()
    );
}
