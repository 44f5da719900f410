//! Replay semantics through `mcp_mrtr::testing` (in-process) and, where instances and
//! callers matter, over HTTP: answers before questions, ignored extras, once!, retry
//! later, capability gating, and request states across instances, keys and callers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr::{request_state::KeyRing, request_state::StateConfig, request_state::StateKey};
use mcp_mrtr_tests::harness::{state_body, Rpc, TestServer, REJECTED, USED};
use serde_json::{json, Value};

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

static ORDERS: AtomicUsize = AtomicUsize::new(0);

/// Creates a draft order once, then asks to place it.
#[tool]
async fn order(item: String) -> Result<String, ToolError> {
    let id = once!(ORDERS.fetch_add(1, Ordering::SeqCst) + 1000);
    let ok: Confirm = ask!(elicit format!("Place order {id} for {item}?"))?;
    Ok(format!("order {id}: {}", if ok.yes { "placed" } else { "cancelled" }))
}

/// Asks the user to open a URL.
#[tool]
async fn authorize() -> Result<String, ToolError> {
    ask!(key = "authorize", elicit_url "Authorize access", "https://example.com/auth")?;
    Ok("authorized".into())
}

/// Samples with tools.
#[tool]
async fn agentic() -> Result<String, ToolError> {
    let tool = mcp_mrtr::protocol::Tool::new("lookup").description("Looks things up");
    let reply = ask!(sample "Use the tool", tools = vec![tool], tool_choice = "auto")?;
    Ok(reply.text())
}

/// Needs every kind of input at once.
#[tool]
async fn everything_at_once() -> Result<String, ToolError> {
    let (a, b, c) = join!(
        ask!(key = "form", elicit "Name?"),
        ask!(key = "url", elicit_url "Open", "https://example.com"),
        ask!(key = "roots", roots),
    );
    let a: Name = a?;
    b?;
    Ok(format!("{} {}", a.name, c.len()))
}

static ATTEMPTS: AtomicUsize = AtomicUsize::new(0);

/// Sheds load on a call's first run; the state it hands out says so, and only a run
/// that reads it back from the state goes on.
#[tool]
async fn busy(ctx: &Ctx) -> Result<String, ToolError> {
    let this_run = ATTEMPTS.fetch_add(1, Ordering::SeqCst);
    let shed_on = once!(this_run);
    if shed_on == this_run {
        return ctx.retry_later().await;
    }
    Ok("done".into())
}

/// A resource that asks which section to show.
#[resource(uri = "test://guide/{chapter}", mime_type = "text/plain")]
async fn guide(chapter: String) -> Result<ResourceContents, ToolError> {
    let section: Name = ask!(elicit "Which section?")?;
    Ok(ResourceContents::text(format!("test://guide/{chapter}"), "text/plain", format!("{chapter}/{}", section.name)))
}

fn server() -> Server {
    Server::new("replay", "0")
        .tools(tools![order, authorize, agentic, everything_at_once, busy])
        .resource(guide)
        .prompts(prompts![mcp_mrtr_examples::everything::mrtr::test_input_required_result_prompt])
}

#[tokio::test]
async fn answers_before_questions_count_and_extras_are_ignored() {
    let client = TestClient::new(mcp_mrtr_examples::everything::server());
    let mut call = client.call_tool("test_input_required_result_elicitation", json!({}));
    let done = call
        .answer([
            ("user_name", answer::accept(json!({ "name": "Alice" }))),
            ("unknown_extra_key", answer::accept(json!({ "foo": "bar" }))),
        ])
        .await;
    assert_eq!(done.text().as_deref(), Some("Hello, Alice!"));
    let mut wrong = client.call_tool("test_input_required_result_elicitation", json!({}));
    let again = wrong.answer([("wrong_key", answer::accept(json!({ "name": "Alice" })))]).await;
    assert_eq!(again.keys(), ["user_name"]);
}

#[tokio::test]
async fn with_state_only_the_asked_question_can_be_answered() {
    let client = TestClient::new(mcp_mrtr_examples::everything::server());
    let mut call = client.call_tool("test_input_required_result_multi_round", json!({}));
    assert_eq!(call.start().await.keys(), ["step1"]);
    // Answering step2 early, beside step1, does not count: round 2 still asks it.
    let second = call
        .answer([
            ("step1", answer::accept(json!({ "name": "Ada" }))),
            ("step2", answer::accept(json!({ "color": "red" }))),
        ])
        .await;
    assert_eq!(second.keys(), ["step2"]);
    let done = call.answer([("step2", answer::accept(json!({ "color": "blue" })))]).await;
    assert_eq!(done.text().as_deref(), Some("Ada likes blue"));
}

#[tokio::test]
async fn once_runs_its_step_once_across_rounds() {
    let client = TestClient::new(server());
    let mut call = client.call_tool("order", json!({ "item": "tea" }));
    let before = ORDERS.load(Ordering::SeqCst);
    let first = call.start().await;
    let Some(mcp_mrtr::protocol::InputRequest::Elicit(mcp_mrtr::protocol::ElicitParams::Form { message, .. })) =
        first.request("ok")
    else {
        panic!("expected a form for `ok`: {first:?}")
    };
    let done = call.answer([("ok", answer::accept(json!({ "yes": true })))]).await;
    assert_eq!(ORDERS.load(Ordering::SeqCst), before + 1, "the step ran again");
    let id = message.trim_start_matches("Place order ").split(' ').next().unwrap().to_owned();
    assert_eq!(done.text(), Some(format!("order {id}: placed")));
}

#[tokio::test]
async fn retry_later_answers_with_state_only() {
    let client = TestClient::new(server());
    let mut call = client.call_tool("busy", json!({}));
    let first = call.start().await;
    let state_only = first.input_required().expect("input_required");
    assert!(state_only.input_requests.is_none() && state_only.request_state.is_some());
    // Without the state, the call starts over and sheds again.
    let again = client.call_tool("busy", json!({})).start().await;
    assert!(again.input_required().is_some_and(|r| r.input_requests.is_none()), "{again:?}");
    let done = call.answer(Vec::<(String, Value)>::new()).await;
    assert_eq!(done.text().as_deref(), Some("done"));
}

#[tokio::test]
async fn each_round_reports_its_keys_kinds_and_capabilities() {
    let client = TestClient::new(server());
    let mut call = client.call_tool("everything_at_once", json!({}));
    let first = call.start().await;
    assert_eq!(first.keys(), ["form", "roots", "url"]);
    assert_eq!(first.kinds()["roots"], "roots/list");
    assert_eq!(first.capabilities()["url"], Capability::ElicitationUrl);
    let script: BTreeMap<&str, Value> = [
        ("form", answer::accept(json!({ "name": "Ada" }))),
        ("url", answer::accept_url()),
        ("roots", answer::roots(&["file:///r"])),
    ]
    .into();
    let rounds = client.call_tool("everything_at_once", json!({})).run(&script, 5).await;
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[1].text().as_deref(), Some("Ada 1"));
}

#[tokio::test]
async fn asks_the_client_cannot_answer_are_32021_with_everything_missing() {
    let form_only = TestClient::new(server()).with_capabilities(json!({ "elicitation": {}, "sampling": {} }));
    let url = form_only.call_tool("authorize", json!({})).start().await;
    let error = url.error().expect("-32021");
    assert_eq!(error.data().unwrap()["requiredCapabilities"], json!({ "elicitation": { "url": {} } }));
    let tools = form_only.call_tool("agentic", json!({})).start().await;
    assert_eq!(tools.error().unwrap().data().unwrap()["requiredCapabilities"], json!({ "sampling": { "tools": {} } }));
    let url_only = TestClient::new(server()).with_capabilities(json!({ "elicitation": { "url": {} } }));
    let merged = url_only.call_tool("everything_at_once", json!({})).start().await;
    assert_eq!(
        merged.error().unwrap().data().unwrap()["requiredCapabilities"],
        json!({ "elicitation": { "form": {} }, "roots": {} })
    );
}

#[tokio::test]
async fn resources_and_prompts_ask_too() {
    let client = TestClient::new(server());
    let mut read = client.read_resource("test://guide/intro");
    assert_eq!(read.start().await.keys(), ["section"]);
    let done = read.answer([("section", answer::accept(json!({ "name": "setup" })))]).await;
    let result = done.complete().expect("complete");
    assert_eq!(result["contents"][0]["text"], "intro/setup");
    assert_eq!((result["ttlMs"].as_u64(), result["cacheScope"].as_str()), (Some(0), Some("private")));
    let mut prompt = client.get_prompt("test_input_required_result_prompt", json!({}));
    assert_eq!(prompt.start().await.keys(), ["user_context"]);
    let done = prompt.answer([("user_context", answer::accept(json!({ "context": "security" })))]).await;
    assert!(done.text().unwrap().contains("security"));
}

fn keyed(key: &StateKey) -> Server {
    mcp_mrtr_examples::everything::server().request_state(StateConfig::new(KeyRing::new(key.clone())))
}

async fn first_state(server: &TestServer) -> Value {
    let rpc = Rpc::call_tool("test_input_required_result_multi_round", json!({}));
    server.call(&rpc).await["result"]["requestState"].clone()
}

async fn second_round(server: &TestServer, state: &Value, name: &str) -> Value {
    let rpc = Rpc::call_tool("test_input_required_result_multi_round", json!({}))
        .param("inputResponses", json!({ "step1": answer::accept(json!({ "name": name })) }))
        .param("requestState", state.clone());
    server.call(&rpc).await
}

#[tokio::test]
async fn instances_sharing_a_key_continue_each_others_rounds() {
    let shared = StateKey::random();
    let (a, b) = (TestServer::start(keyed(&shared)).await, TestServer::start(keyed(&shared)).await);
    let state = first_state(&a).await;
    let on_b = second_round(&b, &state, "Ada").await;
    assert_eq!(on_b["result"]["inputRequests"]["step2"]["method"], "elicitation/create");
    let stranger = TestServer::start(keyed(&StateKey::random())).await;
    assert_eq!(second_round(&stranger, &state, "Ada").await["error"]["message"], REJECTED);
    let newer = StateKey::random();
    let rotated = mcp_mrtr_examples::everything::server()
        .request_state(StateConfig::new(KeyRing::new(newer.clone()).with_previous(shared)));
    let rotated = TestServer::start(rotated).await;
    // b used `state` already (states are single-use): the rotated instance continues a
    // fresh round 1 of a, sealed with the old key.
    let continued = second_round(&rotated, &first_state(&a).await, "Ada").await;
    let next = continued["result"]["requestState"].as_str().unwrap();
    assert!(next.starts_with(&format!("v3.{}.", newer.id())), "new states are sealed with the new key: {next}");
}

#[tokio::test]
async fn sealed_states_hide_answers_and_expire() {
    let key = StateKey::random();
    let server = TestServer::start(keyed(&key)).await;
    let state = first_state(&server).await;
    let secret = "hunter2-very-secret";
    let next = second_round(&server, &state, secret).await["result"]["requestState"].clone();
    let body = state_body(next.as_str().unwrap());
    assert!(!body.windows(secret.len()).any(|w| w == secret.as_bytes()), "the answer is in the state's bytes");
    // Two servers alike but for the TTL. What the zero-TTL one seals is refused by both;
    // what the long-TTL one seals opens on both: the token's own expiry is the difference.
    let sealed_with = |ttl| {
        let config = StateConfig::new(KeyRing::new(key.clone())).ttl(ttl);
        mcp_mrtr_examples::everything::server().request_state(config)
    };
    let brief = TestServer::start(sealed_with(Duration::ZERO)).await;
    let lasting = TestServer::start(sealed_with(Duration::from_mins(10))).await;
    for opener in [&brief, &lasting] {
        let expired = second_round(opener, &first_state(&brief).await, "Ada").await;
        assert_eq!(expired["error"]["message"], REJECTED, "{expired}");
        let fresh = second_round(opener, &first_state(&lasting).await, "Ada").await;
        assert_eq!(fresh["result"]["inputRequests"]["step2"]["method"], "elicitation/create", "{fresh}");
    }
}

#[tokio::test]
async fn states_are_bound_to_the_caller() {
    let by_user = mcp_mrtr_examples::everything::server()
        .principal(|headers| headers.get("x-user").and_then(|v| v.to_str().ok()).map(str::to_owned));
    let server = TestServer::start(by_user).await;
    let rpc = Rpc::call_tool("test_input_required_result_multi_round", json!({}));
    let state = server.call(&rpc.clone().header("x-user", Some("alice"))).await["result"]["requestState"].clone();
    let retry = rpc
        .param("inputResponses", json!({ "step1": answer::accept(json!({ "name": "Ada" })) }))
        .param("requestState", state);
    assert_eq!(server.call(&retry.clone().header("x-user", Some("mallory"))).await["error"]["message"], REJECTED);
    assert_eq!(server.call(&retry.clone()).await["error"]["message"], REJECTED);
    let alice = server.call(&retry.header("x-user", Some("alice"))).await;
    assert_eq!(alice["result"]["resultType"], "input_required");
}

#[tokio::test]
async fn single_use_states_are_claimed_only_by_rounds_that_take_a_once_step() {
    let once = mcp_mrtr_examples::everything::server()
        .request_state(StateConfig::default().single_use(mcp_mrtr::request_state::MemoryGuard::new()));
    let server = TestServer::start(once).await;
    let state = first_state(&server).await;
    let second = second_round(&server, &state, "Ada").await;
    assert_eq!(second["result"]["inputRequests"]["step2"]["method"], "elicitation/create");
    // No once! step in this round: presenting its state again runs it again, harmlessly.
    let again = second_round(&server, &state, "Ada").await;
    assert_eq!(again["result"]["inputRequests"]["step2"]["method"], "elicitation/create");
    assert_eq!(second_round(&server, &json!("forged"), "Ada").await["error"]["message"], REJECTED);
    let rpc = Rpc::call_tool("test_input_required_result_multi_round", json!({}))
        .param("inputResponses", json!({ "step2": answer::accept(json!({ "color": "red" })) }))
        .param("requestState", second["result"]["requestState"].clone());
    assert_eq!(server.call(&rpc).await["result"]["content"][0]["text"], "Ada likes red");
    // A round that takes a once! step claims it for the call: the second presentation is
    // refused.
    let once = Rpc::call_tool("test_once_side_effect", json!({ "call_id": "replay-rs" }));
    let first = server.call(&once).await["result"]["requestState"].clone();
    let start = once.param("inputResponses", json!({ "start": answer::accept(json!({ "ok": true })) }));
    let start = start.param("requestState", first);
    assert_eq!(server.call(&start).await["result"]["resultType"], "input_required");
    assert_eq!(server.call(&start).await["error"]["message"], USED);
}
