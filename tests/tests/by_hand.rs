//! Rounds built by hand (`ctx.input_required`), held to the guarantees `ask!` has: over
//! real HTTP on 127.0.0.1, over a stdio pipe and through the 2025-11-25 bridge, each for a
//! tool, a prompt and a resource; the handler's own state sealed (tampered, foreign,
//! expired, rebound and replayed states refused); requests gated on capabilities; a
//! result that could not be sent, and the wrong mix of styles, failing with what is wrong.

use mcp_mrtr::context::InputRequired;
use mcp_mrtr::prelude::*;
use mcp_mrtr::protocol::{InputRequest, InputRequiredResult};
use mcp_mrtr::question::Elicit;
use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
use mcp_mrtr_tests::harness::{Rpc, TestServer, REJECTED, USED};
use mcp_mrtr_tests::legacy::Legacy;
use mcp_mrtr_tests::pipe::Pipe;
use serde_json::{json, Value};

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

#[derive(Serialize, Deserialize)]
struct Step {
    env: String,
}

fn confirm(env: &str) -> Elicit<Confirm> {
    Elicit::new(format!("Deploy to {env}?"))
}

/// Deploys after a confirmation, as an explicit state machine with a single-use state.
#[tool]
async fn deploy(ctx: &Ctx, env: String) -> Result<String, ToolError> {
    let Some(step) = ctx.request_state::<Step>().await? else {
        let first = InputRequired::new().ask("confirm", &confirm(&env)).state(&Step { env }).single_use();
        return ctx.input_required(first).await;
    };
    match ctx.answer("confirm", &confirm(&step.env)) {
        Some(Ok(Confirm { yes: true })) => Ok(format!("deployed to {}", step.env)),
        Some(_) => Ok("not deployed".into()),
        None => ctx.input_required(InputRequired::new().ask("confirm", &confirm(&step.env)).state(&step)).await,
    }
}

/// A brief on a topic the user names, asked with a request written as JSON.
#[prompt]
async fn brief(ctx: &Ctx) -> Result<Vec<PromptMessage>, ToolError> {
    if ctx.request_state::<bool>().await? != Some(true) {
        let topic = json!({
            "method": "elicitation/create",
            "params": { "mode": "form", "message": "Which topic?", "requestedSchema": {
                "type": "object", "properties": { "topic": { "type": "string" } }, "required": ["topic"] } }
        });
        return ctx.input_required(InputRequired::new().request_json("topic", topic).state(&true)).await;
    }
    let answer = ctx.input_response("topic").unwrap_or_default();
    let topic = answer["content"]["topic"].as_str().unwrap_or("nothing").to_owned();
    Ok(vec![PromptMessage::user(format!("Brief me on {topic}"))])
}

/// The client's roots, asked with the protocol's own result type, its state a string.
#[resource(uri = "workspace://roots", mime_type = "text/plain")]
async fn roots(ctx: &Ctx) -> Result<ResourceContents, ToolError> {
    if ctx.request_state::<String>().await?.as_deref() != Some("asked") {
        let requests = [("roots".to_owned(), InputRequest::ListRoots(serde_json::Map::new()))].into();
        let result = InputRequiredResult::new(requests, Some("asked".into()));
        return ctx.input_required(result.into()).await;
    }
    let answer = ctx.input_response("roots").unwrap_or_default();
    let uris: Vec<&str> = answer["roots"].as_array().into_iter().flatten().filter_map(|r| r["uri"].as_str()).collect();
    Ok(ResourceContents::text("workspace://roots", "text/plain", uris.join("\n")))
}

/// Asks for nothing and keeps nothing: not a result the protocol allows.
#[tool]
async fn empty(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.input_required(InputRequired::new()).await
}

/// Asks the client to call a tool: not a request a server may embed.
#[tool]
async fn reentrant(ctx: &Ctx) -> Result<String, ToolError> {
    let call = json!({ "method": "tools/call", "params": { "name": "deploy" } });
    ctx.input_required(InputRequired::new().request_json("again", call).state(&1)).await
}

/// Asks "x" by hand, then under the same key with `ask!`: the wrong mix.
#[tool]
async fn mixed(ctx: &Ctx) -> Result<String, ToolError> {
    if ctx.request_state::<u8>().await?.is_none() {
        return ctx.input_required(InputRequired::new().ask("x", &confirm("x")).state(&1_u8)).await;
    }
    let again: Confirm = ask!(key = "x", elicit "Again?")?;
    Ok(again.yes.to_string())
}

/// Asks the client's model by hand.
#[tool]
async fn sampler(ctx: &Ctx) -> Result<String, ToolError> {
    let sample = mcp_mrtr::question::Sample::new("Say hi");
    if let Some(reply) = ctx.answer("hi", &sample) {
        return Ok(reply?.text());
    }
    ctx.input_required(InputRequired::new().ask("hi", &sample)).await
}

fn server() -> Server {
    Server::new("by-hand", "0")
        .tools(tools![deploy, empty, reentrant, mixed, sampler])
        .prompts(prompts![brief])
        .resources(resources![roots])
}

fn keyed(key: &StateKey) -> Server {
    server().request_state(StateConfig::new(KeyRing::new(key.clone())))
}

fn yes() -> Value {
    json!({ "action": "accept", "content": { "yes": true } })
}

fn retry(rpc: &Rpc, answers: Value, state: &Value) -> Rpc {
    rpc.clone().param("inputResponses", answers).param("requestState", state.clone())
}

#[tokio::test]
async fn a_tool_a_prompt_and_a_resource_ask_by_hand_over_http() {
    let server = TestServer::start(server()).await;
    let call = Rpc::call_tool("deploy", json!({ "env": "prod" }));
    let first = server.call(&call).await["result"].clone();
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(first["inputRequests"]["confirm"]["params"]["message"], "Deploy to prod?");
    let state = first["requestState"].clone();
    assert!(!state.as_str().unwrap().contains("prod"), "the handler's state is sealed, not sent: {state}");
    let done = server.call(&retry(&call, json!({ "confirm": yes() }), &state)).await;
    assert_eq!(done["result"]["content"][0]["text"], "deployed to prod", "{done}");

    let get = Rpc::new("prompts/get").param("name", json!("brief"));
    let first = server.call(&get).await["result"].clone();
    assert_eq!(first["inputRequests"]["topic"]["method"], "elicitation/create");
    let topic = json!({ "topic": { "action": "accept", "content": { "topic": "tides" } } });
    let done = server.call(&retry(&get, topic, &first["requestState"])).await;
    assert_eq!(done["result"]["messages"][0]["content"]["text"], "Brief me on tides", "{done}");

    let read = Rpc::new("resources/read").param("uri", json!("workspace://roots"));
    let first = server.call(&read).await["result"].clone();
    assert_eq!(first["inputRequests"]["roots"]["method"], "roots/list");
    let roots = json!({ "roots": { "roots": [{ "uri": "file:///a" }, { "uri": "file:///b" }] } });
    let done = server.call(&retry(&read, roots, &first["requestState"])).await;
    assert_eq!(done["result"]["contents"][0]["text"], "file:///a\nfile:///b", "{done}");
}

#[tokio::test]
async fn the_handlers_state_is_refused_as_replay_state_is() {
    let key = StateKey::random();
    let server = TestServer::start(keyed(&key)).await;
    let expiring = TestServer::start(
        keyed(&key).request_state(StateConfig::new(KeyRing::new(key.clone())).ttl(std::time::Duration::ZERO)),
    )
    .await;
    let stranger = TestServer::start(keyed(&StateKey::random())).await;
    let call = Rpc::call_tool("deploy", json!({ "env": "prod" }));
    let state_of = |reply: Value| reply["result"]["requestState"].clone();
    let good = state_of(server.call(&call).await);
    let mut tampered = good.as_str().unwrap().to_owned().into_bytes();
    let middle = tampered.len() - 20;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = json!(String::from_utf8(tampered).unwrap());
    let expired = state_of(expiring.call(&call).await);
    // Bound to the arguments: a state sealed for prod does not deploy to dev.
    let rebound = Rpc::call_tool("deploy", json!({ "env": "dev" }));
    for (name, target, rpc, state) in [
        ("tampered", &server, &call, &tampered),
        ("foreign", &stranger, &call, &good),
        ("expired", &server, &call, &expired),
        ("other arguments", &server, &rebound, &good),
    ] {
        let reply = target.send(&retry(rpc, json!({ "confirm": yes() }), state)).await.reply();
        assert_eq!(reply["error"]["message"], REJECTED, "{name}: {reply}");
    }
    // Single use, as the handler asked: the first retry spends it, a replay is refused.
    let done = server.call(&retry(&call, json!({ "confirm": yes() }), &good)).await;
    assert_eq!(done["result"]["content"][0]["text"], "deployed to prod", "{done}");
    let replayed = server.send(&retry(&call, json!({ "confirm": yes() }), &good)).await.reply();
    assert_eq!(replayed["error"]["message"], USED, "replayed: {replayed}");
}

#[tokio::test]
async fn requests_are_gated_and_a_result_that_cannot_be_sent_is_a_clear_error() {
    let server = TestServer::start(server()).await;
    let no_sampling = Rpc::call_tool("sampler", json!({})).caps(json!({ "elicitation": {} }));
    let refused = server.send(&no_sampling).await.reply();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));
    let sampled = server.call(&Rpc::call_tool("sampler", json!({}))).await;
    assert_eq!(sampled["result"]["inputRequests"]["hi"]["method"], "sampling/createMessage", "{sampled}");

    for (tool, says) in
        [("empty", "needs input requests, a request state, or both"), ("reentrant", "not one a server may send")]
    {
        let reply = server.send(&Rpc::call_tool(tool, json!({}))).await.reply();
        assert!(reply.get("result").is_none(), "{tool}: sent anyway: {reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{tool}: {reply}");
    }

    let call = Rpc::call_tool("mixed", json!({}));
    let first = server.call(&call).await["result"].clone();
    let reply = server.send(&retry(&call, json!({ "x": yes() }), &first["requestState"])).await.reply();
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("asked by input_required") && message.contains("\"x\""), "{reply}");
}

#[tokio::test]
async fn over_stdio_the_rounds_are_the_same() {
    let mut pipe = Pipe::start(server());
    let meta = mcp_mrtr_tests::harness::meta(mcp_mrtr_tests::harness::default_caps());
    let message = |id: u32, method: &str, params: Value, retry: Option<(Value, &Value)>| {
        let mut params = params;
        params["_meta"] = meta.clone();
        if let Some((answers, state)) = retry {
            params["inputResponses"] = answers;
            params["requestState"] = state.clone();
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    };
    let flows = [
        ("tools/call", json!({ "name": "deploy", "arguments": { "env": "edge" } }), json!({ "confirm": yes() })),
        (
            "prompts/get",
            json!({ "name": "brief" }),
            json!({ "topic": { "action": "accept", "content": { "topic": "ice" } } }),
        ),
        (
            "resources/read",
            json!({ "uri": "workspace://roots" }),
            json!({ "roots": { "roots": [{ "uri": "file:///e" }] } }),
        ),
    ];
    let mut finals = Vec::new();
    for (id, (method, params, answers)) in (1..).step_by(2).zip(flows) {
        let first = pipe.round(&message(id, method, params.clone(), None)).await;
        let state = first["result"]["requestState"].clone();
        assert_eq!(first["result"]["resultType"], "input_required", "{method}: {first}");
        finals.push(pipe.round(&message(id + 1, method, params, Some((answers, &state)))).await["result"].clone());
    }
    assert_eq!(finals[0]["content"][0]["text"], "deployed to edge", "{}", finals[0]);
    assert_eq!(finals[1]["messages"][0]["content"]["text"], "Brief me on ice", "{}", finals[1]);
    assert_eq!(finals[2]["contents"][0]["text"], "file:///e", "{}", finals[2]);
    pipe.finish().await;
}

#[tokio::test]
async fn a_2025_11_25_client_gets_the_requests_through_the_bridge() {
    let server = TestServer::start(server()).await;
    let (legacy, _) = Legacy::connect(server.addr, json!({ "elicitation": {}, "roots": {} })).await;
    let mut stream = legacy.open(2, "tools/call", json!({ "name": "deploy", "arguments": { "env": "lab" } })).await;
    let asked = stream.next().await.expect("the bridge asks");
    assert_eq!(
        (asked["method"].as_str(), asked["params"]["message"].as_str()),
        (Some("elicitation/create"), Some("Deploy to lab?"))
    );
    legacy.answer(&asked, json!({ "action": "accept", "content": { "yes": true } })).await;
    let done = stream.next().await.expect("the result");
    assert_eq!(done["result"]["content"][0]["text"], "deployed to lab", "{done}");

    let mut stream = legacy.open(3, "prompts/get", json!({ "name": "brief" })).await;
    let asked = stream.next().await.expect("the bridge asks for the topic");
    assert_eq!(asked["params"]["message"], "Which topic?", "{asked}");
    legacy.answer(&asked, json!({ "action": "accept", "content": { "topic": "reefs" } })).await;
    let done = stream.next().await.expect("the result");
    assert_eq!(done["result"]["messages"][0]["content"]["text"], "Brief me on reefs", "{done}");

    let mut stream = legacy.open(4, "resources/read", json!({ "uri": "workspace://roots" })).await;
    let asked = stream.next().await.expect("the bridge asks for roots");
    assert_eq!(asked["method"], "roots/list", "{asked}");
    legacy.answer(&asked, json!({ "roots": [{ "uri": "file:///lab" }] })).await;
    let done = stream.next().await.expect("the result");
    assert_eq!(done["result"]["contents"][0]["text"], "file:///lab", "{done}");
}

#[tokio::test]
async fn a_2025_11_25_client_over_stdio_gets_them_through_the_bridge_too() {
    let mut pipe = Pipe::start(server());
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} }, "clientInfo": { "name": "c", "version": "1" } } });
    assert_eq!(pipe.round(&init).await["result"]["protocolVersion"], "2025-11-25");
    pipe.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "deploy", "arguments": { "env": "pipe" } } });
    let asked = pipe.round(&call).await;
    assert_eq!(
        (asked["method"].as_str(), asked["params"]["message"].as_str()),
        (Some("elicitation/create"), Some("Deploy to pipe?")),
        "{asked}"
    );
    let answer =
        json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "action": "accept", "content": { "yes": true } } });
    let done = pipe.round(&answer).await;
    assert_eq!(done["result"]["content"][0]["text"], "deployed to pipe", "{done}");
    pipe.finish().await;
}
