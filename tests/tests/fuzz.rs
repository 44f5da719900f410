//! Random and truncated JSON thrown at the server, over stdio and over HTTP: every
//! input gets a JSON-RPC answer (or, for notifications, none), and nothing panics.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::{meta, TestServer};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A small deterministic generator (xorshift64*), so a failure replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn seeds() -> Vec<Value> {
    let m = meta(json!({ "sampling": {}, "elicitation": {} }));
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": m}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}, "_meta": m}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}, "_meta": m}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "test://template/1/data", "_meta": m}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "completion/complete", "params": {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "p"}, "_meta": m}}),
        json!({"jsonrpc": "2.0", "id": "six", "method": "tools/call", "params": {"name": "test_tool_with_progress", "inputResponses": {"k": null}, "requestState": "x", "_meta": m}}),
    ]
}

/// Replaces a random node of `value` with something of the wrong shape.
fn mutate_tree(value: &mut Value, rng: &mut Rng) {
    let odd = [
        json!(null),
        json!(-1),
        json!(1e308),
        json!("\u{0}\u{ffff}"),
        json!([]),
        json!({}),
        json!(true),
        json!([[[[{}]]]]),
    ];
    match value {
        Value::Object(map) if !map.is_empty() && rng.below(3) > 0 => {
            let key = map.keys().nth(rng.below(map.len())).unwrap().clone();
            mutate_tree(map.get_mut(&key).unwrap(), rng);
        }
        Value::Array(items) if !items.is_empty() && rng.below(3) > 0 => {
            let i = rng.below(items.len());
            mutate_tree(&mut items[i], rng);
        }
        _ => *value = rng.pick(&odd).clone(),
    }
}

/// One fuzz input: a structurally mutated message, a truncated one, or flipped bytes;
/// with the MCP headers of the message it was made from, so most inputs get past the
/// header checks into dispatch.
fn fuzz_input(rng: &mut Rng) -> (Vec<u8>, Vec<(&'static str, String)>) {
    let mut seed = rng.pick(&seeds()).clone();
    let mut headers = vec![
        ("content-type", "application/json".to_owned()),
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", seed["method"].as_str().unwrap().to_owned()),
    ];
    if let Some(name) = seed["params"]["name"].as_str().or(seed["params"]["uri"].as_str()) {
        headers.push(("mcp-name", name.to_owned()));
    }
    let bytes = match rng.below(3) {
        0 => {
            for _ in 0..=rng.below(3) {
                mutate_tree(&mut seed, rng);
            }
            seed.to_string().into_bytes()
        }
        1 => {
            let text = seed.to_string().into_bytes();
            text[..rng.below(text.len())].to_vec()
        }
        _ => {
            let mut text = seed.to_string().into_bytes();
            for _ in 0..=rng.below(4) {
                let i = rng.below(text.len());
                text[i] = u8::try_from(rng.below(256)).unwrap();
            }
            text.retain(|b| *b != b'\n');
            text
        }
    };
    (bytes, headers)
}

fn count_panics() -> Arc<AtomicUsize> {
    let panics = Arc::new(AtomicUsize::new(0));
    let seen = panics.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        seen.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    panics
}

#[tokio::test]
async fn random_input_never_panics_the_server() {
    let panics = count_panics();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    // stdio: every line, then a sentinel request whose answer proves the loop survived.
    let (mut input, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, output) = tokio::io::duplex(1 << 20);
    let server = mcp_mrtr::testing::with_own_keys(mcp_mrtr_examples::everything::server());
    tokio::spawn(server.serve(mcp_mrtr::stdio::Pipe::new(server_in, server_out)));
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(output).lines();
        let mut count = 0usize;
        while let Some(line) = lines.next_line().await.unwrap() {
            let message: Value = serde_json::from_str(&line).expect("every line out is JSON");
            count += 1;
            if message["id"] == "sentinel" {
                return count;
            }
        }
        panic!("the server stopped writing before the sentinel")
    });
    for _ in 0..2000 {
        input.write_all(&fuzz_input(&mut rng).0).await.unwrap();
        input.write_all(b"\n").await.unwrap();
    }
    let sentinel =
        json!({"jsonrpc": "2.0", "id": "sentinel", "method": "server/discover", "params": {"_meta": meta(json!({}))}});
    input.write_all(format!("{sentinel}\n").as_bytes()).await.unwrap();
    let answered = tokio::time::timeout(client::TIMEOUT * 3, reader).await.expect("stdio answered in time").unwrap();
    // Every input is a request (valid or not), so every one gets an answer, then the sentinel.
    assert_eq!(answered, 2001, "answers to 2000 inputs and the sentinel");

    // HTTP: the same kind of bodies, each on its own connection.
    let server = TestServer::everything().await;
    for _ in 0..300 {
        let (body, headers) = fuzz_input(&mut rng);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let response = client::send(server.addr, "POST", &headers, &body).await;
        assert!(matches!(response.status, 200 | 202 | 400 | 404), "status {}", response.status);
        if response.status != 202 {
            let reply = response.reply();
            assert!(reply.get("result").is_some() || reply.get("error").is_some(), "{reply}");
        }
    }
    assert_eq!(panics.load(Ordering::SeqCst), 0, "the server panicked on client input");
}
