//! What a request state promises, checked over HTTP on 127.0.0.1 (audit 2026-11-30):
//! `once!` steps do not run again when an older state is replayed, every rejection looks
//! the same, a state opens only for what it was sealed for (server included), and
//! neither a panic nor a hostile answer takes anything down or grows the state.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::answer;
use mcp_mrtr::{
    request_state::KeyRing, request_state::MemoryGuard, request_state::StateConfig, request_state::StateKey,
};
use mcp_mrtr_tests::harness::{Rpc, TestServer, REJECTED, USED};
use serde_json::{json, Map, Value};

fn fixture() -> Server {
    mcp_mrtr_examples::everything::server()
}

fn keyed(server: Server, key: &StateKey) -> Server {
    server.request_state(StateConfig::new(KeyRing::new(key.clone())))
}

/// `tools/call` with these answers and state.
fn retry(rpc: &Rpc, answers: Value, state: &Value) -> Rpc {
    rpc.clone().param("inputResponses", answers).param("requestState", state.clone())
}

fn ok() -> Value {
    answer::accept(json!({ "ok": true }))
}

/// Runs `test_once_side_effect` to the round after its `once!` step, and returns the
/// call, the state of round 1 (before the step) and of round 2 (after it).
async fn once_call(server: &TestServer, call_id: &str) -> (Rpc, Value, Value) {
    let rpc = Rpc::call_tool("test_once_side_effect", json!({ "call_id": call_id }));
    let first = server.call(&rpc).await["result"]["requestState"].clone();
    let second = server.call(&retry(&rpc, json!({ "start": ok() }), &first)).await;
    assert_eq!(second["result"]["inputRequests"]["finish"]["params"]["message"], "Step 1 done. Finish?", "{second}");
    (rpc, first, second["result"]["requestState"].clone())
}

#[tokio::test]
async fn replaying_an_older_state_never_runs_a_once_step_again() {
    let server = Arc::new(TestServer::start(fixture()).await);
    let (rpc, before_step, after_step) = once_call(&server, "replay-serial-and-parallel").await;
    let replay = retry(&rpc, json!({ "start": ok() }), &before_step);
    for _ in 0..3 {
        assert_eq!(server.call(&replay).await["error"]["message"], USED);
    }
    let mut parallel = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (server, replay) = (server.clone(), replay.clone());
        parallel.spawn(async move { server.call(&replay).await });
    }
    while let Some(reply) = parallel.join_next().await {
        assert_eq!(reply.unwrap()["error"]["message"], USED);
    }
    let done = server.call(&retry(&rpc, json!({ "finish": ok() }), &after_step)).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "call replay-serial-and-parallel: the once step ran 1 time(s), finished=true"
    );
}

#[tokio::test]
async fn with_reusable_states_a_replay_runs_the_once_step_again() {
    // The documented opt-out, and the control that shows the test above can fail.
    let server = TestServer::start(fixture().request_state(StateConfig::default().reusable(true))).await;
    let (rpc, before_step, after_step) = once_call(&server, "replay-reusable").await;
    let replayed = server.call(&retry(&rpc, json!({ "start": ok() }), &before_step)).await;
    assert_eq!(replayed["result"]["resultType"], "input_required");
    let done = server.call(&retry(&rpc, json!({ "finish": ok() }), &after_step)).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "call replay-reusable: the once step ran 2 time(s), finished=true"
    );
}

/// On four worker threads, so a race inside the guard itself (not only between awaits)
/// would show (audit 2026-12-01, test quality).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_presentations_of_one_state_take_its_once_step_exactly_once() {
    let server = Arc::new(TestServer::start(fixture()).await);
    let rpc = Rpc::call_tool("test_once_side_effect", json!({ "call_id": "parallel-claims" }));
    let state = server.call(&rpc).await["result"]["requestState"].clone();
    let round_two = retry(&rpc, json!({ "start": ok() }), &state);
    let mut parallel = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (server, round_two) = (server.clone(), round_two.clone());
        parallel.spawn(async move { server.call(&round_two).await });
    }
    let mut after_step = Vec::new();
    while let Some(reply) = parallel.join_next().await {
        let reply = reply.unwrap();
        if reply["result"]["resultType"] == "input_required" {
            after_step.push(reply["result"]["requestState"].clone());
        } else {
            assert_eq!(reply["error"]["message"], USED, "{reply}");
        }
    }
    assert_eq!(after_step.len(), 1, "one presentation claims the state");
    let done = server.call(&retry(&rpc, json!({ "finish": ok() }), &after_step[0])).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "call parallel-claims: the once step ran 1 time(s), finished=true"
    );
}

/// A server whose states are bound to the `x-user` header, like the uniform test needs.
fn by_user(name: &str, config: StateConfig) -> Server {
    let server = Server::new(name, "0")
        .tools(tools![mcp_mrtr_examples::everything::mrtr::test_input_required_result_request_state]);
    server
        .request_state(config)
        .principal(|headers| headers.get("x-user").and_then(|v| v.to_str().ok()).map(str::to_owned))
}

#[tokio::test]
async fn every_rejected_state_gets_the_same_answer() {
    let key = StateKey::random();
    let config = StateConfig::new(KeyRing::new(key.clone()));
    let server = TestServer::start(by_user("uniform", config.clone())).await;
    let expiring = TestServer::start(by_user("uniform", config.clone().ttl(Duration::ZERO))).await;
    let other = TestServer::start(by_user("other", config)).await;
    let rpc = Rpc::call_tool("test_input_required_result_request_state", json!({})).header("x-user", Some("alice"));
    let good = state_of(&server, &rpc).await;
    let (version, rest) = good.split_once('.').unwrap();
    let (_, body) = rest.split_once('.').unwrap();
    let mut tampered = good.clone().into_bytes();
    let middle = tampered.len() - 20;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    // A replay is refused only where it would take a `once!` step again, with this same
    // answer (see the once tests above); this tool takes none.
    let confirm = json!({ "confirm": ok() });
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("tampered", json!(String::from_utf8(tampered).unwrap()), None),
        ("truncated", json!(&good[..good.len() - 1]), None),
        ("unknown key", json!(format!("{version}.nokey.{body}")), None),
        ("wrong version", json!(format!("v9.{rest}")), None),
        ("oversized", json!(format!("{good}{}", "A".repeat(70_000))), None),
        ("expired", json!(state_of(&expiring, &rpc).await), None),
        ("wrong principal", json!(good), Some("mallory")),
        ("no principal", json!(good), Some("")),
        ("other server", json!(state_of(&other, &rpc).await), None),
    ];
    let mut answers = Vec::new();
    for (name, state, user) in cases {
        let mut rpc = retry(&rpc, confirm.clone(), &state);
        if let Some(user) = user {
            rpc = rpc.header("x-user", Some(user).filter(|u| !u.is_empty()));
        }
        let response = server.send(&rpc).await;
        answers.push((name, response.status, response.reply()));
    }
    let expected = json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32602, "message": REJECTED } });
    for (name, status, reply) in &answers {
        assert_eq!((*status, reply), (200, &expected), "{name}");
    }
    // The positive control: the same good state, as sealed, opens.
    assert_eq!(server.call(&retry(&rpc, confirm, &json!(good))).await["result"]["resultType"], "complete");
}

/// Audit B18: the app's middleware authenticates some requests (a `Caller` from
/// `x-auth`), and the principal hook names the others (from `x-user`). A state sealed
/// for the caller `alice` does not open for a request whose header says `alice`, nor the
/// other way round.
#[tokio::test]
async fn a_principal_named_by_a_header_is_never_the_caller_of_the_same_name() {
    let server = by_user("namespaces", StateConfig::new(KeyRing::new(StateKey::random())));
    let app = server
        .into_router(mcp_mrtr::http::HttpConfig::default())
        .expect("a router")
        .layer(axum::middleware::from_fn(caller_from_x_auth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let send = |rpc: Rpc| async move {
        let headers = rpc.headers();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        mcp_mrtr_tests::client::send(addr, "POST", &headers, &rpc.body()).await.reply()
    };
    let rpc = Rpc::call_tool("test_input_required_result_request_state", json!({}));
    let confirm = json!({ "confirm": ok() });
    for (sealed_for, presented_by) in [("x-auth", "x-user"), ("x-user", "x-auth")] {
        let first = send(rpc.clone().header(sealed_for, Some("alice"))).await;
        let state = first["result"]["requestState"].clone();
        assert!(state.is_string(), "{first}");
        let retried = retry(&rpc, confirm.clone(), &state);
        let other = send(retried.clone().header(presented_by, Some("alice"))).await;
        assert_eq!(other["error"]["message"], REJECTED, "sealed for {sealed_for}: alice, presented by {presented_by}");
        let same = send(retried.header(sealed_for, Some("alice"))).await;
        assert_eq!(same["result"]["resultType"], "complete", "{same}");
    }
    serving.abort();
}

/// The application's own authentication, for some requests only.
async fn caller_from_x_auth(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let id = request.headers().get("x-auth").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(id) = id {
        request.extensions_mut().insert(Caller::new(id));
    }
    next.run(request).await
}

async fn state_of(server: &TestServer, rpc: &Rpc) -> String {
    server.call(rpc).await["result"]["requestState"].as_str().expect("a state").to_owned()
}

/// Asks for a context, as a tool named like the fixture's prompt.
fn tool_named_like_the_prompt() -> mcp_mrtr::ToolRoute {
    mcp_mrtr::protocol::Tool::new("test_input_required_result_prompt").description("Asks like the prompt does").handler(
        |ctx: Ctx, _args: Map<String, Value>| async move {
            let asked = ctx.ask("user_context", mcp_mrtr::question::Elicit::<Context>::new("What context?")).await;
            Ok::<_, ToolError>(asked.map_or_else(|_| "declined".to_owned(), |c| c.context))
        },
    )
}

#[derive(Deserialize, JsonSchema)]
struct Context {
    context: String,
}

/// Asks which section of a chapter to show.
#[resource(uri = "test://book/{chapter}", mime_type = "text/plain")]
async fn book(chapter: String) -> Result<ResourceContents, ToolError> {
    let section: Context = ask!(elicit "Which section?")?;
    Ok(ResourceContents::text(format!("test://book/{chapter}"), "text/plain", section.context))
}

/// Asks for a name, whatever its arguments.
fn echo_tool() -> mcp_mrtr::ToolRoute {
    mcp_mrtr::protocol::Tool::new("echo").description("Asks a name").handler(
        |ctx: Ctx, args: Map<String, Value>| async move {
            let asked = ctx.ask("who", mcp_mrtr::question::Elicit::<Context>::new("Who?")).await;
            Ok::<_, ToolError>(format!("{} {}", asked.map_or_else(|_| String::new(), |c| c.context), args.len()))
        },
    )
}

#[tokio::test]
async fn a_state_opens_only_for_the_server_method_target_arguments_and_caller_it_was_sealed_for() {
    let key = StateKey::random();
    let server = keyed(fixture(), &key)
        .tool(tool_named_like_the_prompt())
        .tool(echo_tool())
        .resource(book)
        .principal(|headers| headers.get("x-user").and_then(|v| v.to_str().ok()).map(str::to_owned));
    let server = TestServer::start(server).await;
    let answers = json!({ "user_context": answer::accept(json!({ "context": "c" })) });

    // Method: a prompt's state does not open for the tool of the same name.
    let prompt = Rpc::new("prompts/get").param("name", json!("test_input_required_result_prompt"));
    let state = server.call(&prompt).await["result"]["requestState"].clone();
    let as_tool = Rpc::call_tool("test_input_required_result_prompt", json!({}));
    assert_eq!(server.call(&retry(&as_tool, answers.clone(), &state)).await["error"]["message"], REJECTED);

    // Target: a resource's state does not open for another URI of the same template.
    let read = |uri: &str| Rpc::new("resources/read").param("uri", json!(uri));
    let state = server.call(&read("test://book/intro")).await["result"]["requestState"].clone();
    let section = json!({ "section": answer::accept(json!({ "context": "setup" })) });
    let other_uri = retry(&read("test://book/outro"), section.clone(), &state);
    assert_eq!(server.call(&other_uri).await["error"]["message"], REJECTED);
    let same_uri = server.call(&retry(&read("test://book/intro"), section, &state)).await;
    assert_eq!(same_uri["result"]["contents"][0]["text"], "setup");

    // Arguments: the same arguments in another key order still open.
    let echo = Rpc::call_tool("echo", json!({ "a": 1, "b": 2 }));
    let state = server.call(&echo).await["result"]["requestState"].as_str().unwrap().to_owned();
    let who = r#"{"who":{"action":"accept","content":{"context":"Ada"}}}"#;
    let reordered = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"b":2,"a":1}},"inputResponses":{who},"requestState":"{state}","_meta":{}}}}}"#,
        mcp_mrtr_tests::harness::meta(mcp_mrtr_tests::harness::default_caps())
    );
    let headers = echo.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let opened = mcp_mrtr_tests::client::send(server.addr, "POST", &headers, reordered.as_bytes()).await;
    assert_eq!(opened.reply()["result"]["content"][0]["text"], "Ada 2", "{}", opened.body);

    // Caller: sealed for an empty principal, it does not open without one.
    let empty = Rpc::call_tool("test_input_required_result_elicitation", json!({})).header("x-user", Some(""));
    let state = server.call(&empty).await["result"]["requestState"].clone();
    let name = json!({ "user_name": answer::accept(json!({ "name": "Ada" })) });
    let anonymous = retry(&Rpc::call_tool("test_input_required_result_elicitation", json!({})), name, &state);
    assert_eq!(server.call(&anonymous).await["error"]["message"], REJECTED);
}

#[tokio::test]
async fn a_state_from_another_server_in_the_same_process_does_not_open() {
    let multi_round = Rpc::call_tool("test_input_required_result_multi_round", json!({}));
    let step1 = json!({ "step1": answer::accept(json!({ "name": "Ada" })) });
    // Default keys: each server has its own random key.
    let public = TestServer::start(
        Server::new("public", "0")
            .tools(tools![mcp_mrtr_examples::everything::mrtr::test_input_required_result_multi_round]),
    )
    .await;
    let admin = TestServer::start(
        Server::new("admin", "0")
            .tools(tools![mcp_mrtr_examples::everything::mrtr::test_input_required_result_multi_round]),
    )
    .await;
    let state = public.call(&multi_round).await["result"]["requestState"].clone();
    assert_eq!(admin.call(&retry(&multi_round, step1.clone(), &state)).await["error"]["message"], REJECTED);
    // Even sharing a key, the server's name is part of what a state is bound to.
    let key = StateKey::random();
    let named = |name: &str| {
        keyed(
            Server::new(name, "0")
                .tools(tools![mcp_mrtr_examples::everything::mrtr::test_input_required_result_multi_round]),
            &key,
        )
    };
    let (public, admin) = (TestServer::start(named("public")).await, TestServer::start(named("admin")).await);
    let state = public.call(&multi_round).await["result"]["requestState"].clone();
    assert_eq!(admin.call(&retry(&multi_round, step1.clone(), &state)).await["error"]["message"], REJECTED);
    let twin = TestServer::start(named("public")).await;
    let continued = twin.call(&retry(&multi_round, step1, &state)).await;
    assert_eq!(continued["result"]["resultType"], "input_required", "same name and key: another instance");
}

#[tokio::test]
async fn an_endless_ttl_with_single_use_states_keeps_serving() {
    let config = StateConfig::new(KeyRing::new(StateKey::random())).ttl(Duration::MAX);
    let server = TestServer::start(fixture().request_state(config)).await;
    let (rpc, before_step, _) = once_call(&server, "endless").await;
    assert_eq!(server.call(&retry(&rpc, json!({ "start": ok() }), &before_step)).await["error"]["message"], USED);
}

#[tokio::test]
async fn a_full_guard_makes_room_instead_of_refusing_and_still_refuses_replays() {
    // One entry for everyone: the second call's claim gives up the first's entry, and
    // the first call's state is refused from then on, never run again.
    let server =
        TestServer::start(fixture().request_state(StateConfig::default().single_use(MemoryGuard::with_capacity(1))))
            .await;
    let (first_rpc, first_before, _) = once_call(&server, "full-1").await;
    let (second_rpc, second_before, second_after) = once_call(&server, "full-2").await;
    for (rpc, state) in [(&first_rpc, &first_before), (&second_rpc, &second_before)] {
        assert_eq!(server.call(&retry(rpc, json!({ "start": ok() }), state)).await["error"]["message"], USED);
    }
    let done = server.call(&retry(&second_rpc, json!({ "finish": ok() }), &second_after)).await;
    assert_eq!(done["result"]["content"][0]["text"], "call full-2: the once step ran 1 time(s), finished=true");
}

#[tokio::test]
async fn the_state_keeps_the_answer_not_the_junk_sent_with_it() {
    let server = TestServer::start(fixture()).await;
    let rpc = Rpc::call_tool("test_input_required_result_multi_round", json!({}));
    let next_state_len = |answer: Value| {
        let (server, rpc) = (&server, &rpc);
        async move {
            let state = server.call(rpc).await["result"]["requestState"].clone();
            let reply = server.call(&retry(rpc, json!({ "step1": answer }), &state)).await;
            reply["result"]["requestState"].as_str().expect("round 2 asks again").len()
        }
    };
    let clean = next_state_len(answer::accept(json!({ "name": "Ada" }))).await;
    let junk = "x".repeat(40_000);
    let mut noisy = answer::accept(json!({ "name": "Ada", "junk": junk }));
    noisy["extra"] = json!(junk);
    assert_eq!(next_state_len(noisy).await, clean);
}

#[tokio::test]
async fn a_state_over_the_cap_is_an_error_that_tells_a_stranger_nothing() {
    let key = StateKey::new("k", *b"a-32-byte-test-key-for-the-cap!!");
    let capped = |max| fixture().request_state(StateConfig::new(KeyRing::new(key.clone())).max_bytes(max));
    let rpc = Rpc::call_tool("test_once_side_effect", json!({ "call_id": "over-the-cap" }));
    let roomy = TestServer::start(capped(64 * 1024)).await;
    let first_len = roomy.call(&rpc).await["result"]["requestState"].as_str().unwrap().len();
    // Room for round 1's state only: round 2 (with the once! result) cannot be sealed.
    let tight = TestServer::start(capped(first_len)).await;
    let first = tight.call(&rpc).await["result"]["requestState"].clone();
    let failed = tight.call(&retry(&rpc, json!({ "start": ok() }), &first)).await;
    let message = failed["error"]["message"].as_str().unwrap();
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    for secret in [first_len.to_string().as_str(), "bytes", "max_bytes", "StateConfig"] {
        assert!(!message.contains(secret), "the error tells {secret}: {message}");
    }
    assert!(message.contains("once!"), "the error says the once! step is not recorded: {message}");
}

static CHARGES: AtomicU32 = AtomicU32::new(0);

/// Charges, then needs the client's model.
#[tool]
async fn charge_then_sample() -> Result<String, ToolError> {
    let charge = once!(CHARGES.fetch_add(1, Ordering::SeqCst));
    let reply = ask!(sample "Summarize the charge")?;
    Ok(format!("{charge}: {}", reply.text()))
}

static HAND_CHARGES: AtomicU32 = AtomicU32::new(0);

/// Charges, then asks the client's model by hand (which no macro sees ahead of time).
#[tool]
async fn charge_then_sample_by_hand(ctx: &Ctx) -> Result<String, ToolError> {
    once!(HAND_CHARGES.fetch_add(1, Ordering::SeqCst));
    let sample = mcp_mrtr::question::Sample::new("Summarize the charge");
    ctx.input_required(mcp_mrtr::context::InputRequired::new().ask("summary", &sample)).await
}

#[tokio::test]
async fn a_round_that_fails_after_a_once_step_says_the_step_is_not_recorded() {
    let tools = tools![charge_then_sample, charge_then_sample_by_hand];
    let server = TestServer::start(Server::new("charges", "0").tools(tools)).await;
    // The asks a macro sees are checked before the handler runs: no charge at all.
    let before = CHARGES.load(Ordering::SeqCst);
    let no_sampling = Rpc::call_tool("charge_then_sample", json!({})).caps(json!({ "elicitation": {} }));
    let error = server.send(&no_sampling).await.reply()["error"].clone();
    assert_eq!(error["code"], -32021, "{error}");
    assert!(!error["message"].as_str().unwrap().contains("once!"), "{error}");
    assert_eq!(CHARGES.load(Ordering::SeqCst), before, "the step ran for a client that cannot sample");
    // A request built by hand is checked when the round ends, after the step ran: the
    // error says the step is not recorded.
    let no_sampling = Rpc::call_tool("charge_then_sample_by_hand", json!({})).caps(json!({ "elicitation": {} }));
    let response = server.send(&no_sampling).await;
    assert_eq!(response.status, 400);
    let error = response.reply()["error"].clone();
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(error["data"]["requiredCapabilities"], json!({ "sampling": {} }));
    assert!(error["message"].as_str().unwrap().contains("once!"), "{error}");
}

static STALE_RUNS: AtomicU32 = AtomicU32::new(0);

#[tokio::test]
async fn a_recorded_once_result_that_no_longer_decodes_is_an_error_not_a_second_run() {
    // Two deployments of one tool: the first records a text, the second expects a number.
    let key = StateKey::random();
    let deployment = |route: mcp_mrtr::ToolRoute| keyed(Server::new("orders", "0").tool(route), &key);
    let v1 = mcp_mrtr::protocol::Tool::new("order").description("v1").handler(
        |ctx: Ctx, _: Map<String, Value>| async move {
            let id: String = ctx.once("id", async { "order-1".to_owned() }).await;
            let _ = ctx.ask("go", mcp_mrtr::question::Elicit::<Context>::new("Go?")).await;
            Ok::<_, ToolError>(id)
        },
    );
    let v2 = mcp_mrtr::protocol::Tool::new("order").description("v2").handler(
        |ctx: Ctx, _: Map<String, Value>| async move {
            let id: u32 = ctx.once("id", async { STALE_RUNS.fetch_add(1, Ordering::SeqCst) }).await;
            let _ = ctx.ask("go", mcp_mrtr::question::Elicit::<Context>::new("Go?")).await;
            Ok::<_, ToolError>(id.to_string())
        },
    );
    let (old, new) = (TestServer::start(deployment(v1)).await, TestServer::start(deployment(v2)).await);
    let rpc = Rpc::call_tool("order", json!({}));
    let state = old.call(&rpc).await["result"]["requestState"].clone();
    let go = json!({ "go": answer::accept(json!({ "context": "yes" })) });
    let reply = new.call(&retry(&rpc, go, &state)).await;
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("no longer decodes"), "{reply}");
    assert_eq!(STALE_RUNS.load(Ordering::SeqCst), 0, "the step ran again");
}

#[tokio::test]
async fn a_state_is_refused_before_any_handler_code_runs_even_where_nothing_asks() {
    // A tool that never asks never issued a state, so any state sent to it is foreign:
    // refused like every other (the project's rule; spec §2.8 would ignore it).
    let server = TestServer::start(fixture()).await;
    for tool in ["test_simple_text", "test_input_required_result_elicitation"] {
        let rpc = Rpc::call_tool(tool, json!({})).param("requestState", json!("v3.nokey.not-a-state"));
        assert_eq!(server.call(&rpc).await["error"]["message"], REJECTED, "{tool}");
    }
}

#[tokio::test]
async fn answers_sent_without_a_state_count_for_every_ask_the_handler_reaches() {
    // Documented (docs/replay.md): the conformance scenarios answer before being asked.
    let server = TestServer::start(fixture()).await;
    let rpc = Rpc::call_tool("test_input_required_result_multi_round", json!({})).param(
        "inputResponses",
        json!({
            "step1": answer::accept(json!({ "name": "Ada" })),
            "step2": answer::accept(json!({ "color": "red" })),
        }),
    );
    assert_eq!(server.call(&rpc).await["result"]["content"][0]["text"], "Ada likes red");
}

#[tokio::test]
async fn panics_in_application_code_fail_the_request_and_the_server_carries_on() {
    let eager = mcp_mrtr::protocol::Tool::new("eager").description("Panics before its future exists").handler(
        |_ctx: Ctx, args: Map<String, Value>| {
            assert!(args.is_empty(), "eager panics on arguments");
            async { Ok::<_, ToolError>("calm") }
        },
    );
    let server = Server::new("panics", "0")
        .tool(eager)
        .principal(|headers| headers.get("x-boom").map(|_| panic!("the principal function panicked")));
    let server = TestServer::start(server).await;
    let internal = |reply: &Value| reply["error"]["code"] == -32603;
    let sync_panic = server.call(&Rpc::call_tool("eager", json!({ "x": 1 }))).await;
    assert!(internal(&sync_panic), "{sync_panic}");
    let principal_panic = server.call(&Rpc::call_tool("eager", json!({})).header("x-boom", Some("1"))).await;
    assert!(internal(&principal_panic), "{principal_panic}");
    assert_eq!(server.call(&Rpc::call_tool("eager", json!({}))).await["result"]["content"][0]["text"], "calm");
}
