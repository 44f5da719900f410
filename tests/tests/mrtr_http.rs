//! Multi round-trip requests end to end over HTTP on 127.0.0.1, every message checked
//! against the schema: rounds, joined asks, decline and cancel, malformed answers, and
//! questions that never settle.

use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_mrtr::prelude::*;
use mcp_mrtr::protocol::LoggingLevel;
use mcp_mrtr::testing::answer;
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use serde_json::{json, Value};

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Color {
    color: String,
}

#[derive(Deserialize, JsonSchema)]
struct Size {
    size: u32,
}

/// Three questions in three rounds; the last answer names the first.
#[tool]
async fn three_rounds() -> Result<String, ToolError> {
    let name: Name = ask!(elicit "Name?")?;
    let color: Color = ask!(elicit format!("{}, which colour?", name.name))?;
    let size: Size = ask!(elicit "Which size?")?;
    Ok(format!("{} wants a {} {}", name.name, size.size, color.color))
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

/// Deletes a branch after confirmation.
#[tool]
async fn delete_branch(branch: String) -> Result<String, ToolError> {
    match ask!(key = "confirm", elicit format!("Delete {branch}?")) {
        Ok(Confirm { yes: true }) => Ok(format!("deleted {branch}")),
        Ok(_) | Err(Declined::Decline) => Ok("kept".into()),
        Err(Declined::Cancel) => Err(ToolError::cancelled()),
    }
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A buggy tool: its question changes every time it runs.
#[tool]
async fn restless() -> Result<String, ToolError> {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let answer: Name = ask!(elicit format!("Question number {n}?"))?;
    Ok(answer.name)
}

fn server() -> Server {
    mcp_mrtr_examples::everything::server().tools(tools![three_rounds, delete_branch, restless])
}

/// Sends `rpc` with these answers and state, returning the result object.
async fn round(server: &TestServer, rpc: &Rpc, answers: Value, state: Option<&Value>) -> Value {
    let mut rpc = rpc.clone().param("inputResponses", answers);
    if let Some(state) = state {
        rpc = rpc.param("requestState", state.clone());
    }
    server.call(&rpc).await
}

#[tokio::test]
async fn round_three_still_sees_round_one() {
    let server = TestServer::start(server()).await;
    let rpc = Rpc::call_tool("three_rounds", json!({}));
    let first = server.call(&rpc).await["result"].clone();
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(first["inputRequests"]["name"]["params"]["message"], "Name?");
    assert!(first.get("ttlMs").is_none() && first.get("cacheScope").is_none());
    let second =
        round(&server, &rpc, json!({ "name": answer::accept(json!({ "name": "Ada" })) }), Some(&first["requestState"]))
            .await;
    let second = second["result"].clone();
    assert_eq!(second["inputRequests"]["color"]["params"]["message"], "Ada, which colour?");
    assert_ne!(second["requestState"], first["requestState"]);
    let third = round(
        &server,
        &rpc,
        json!({ "color": answer::accept(json!({ "color": "green" })) }),
        Some(&second["requestState"]),
    )
    .await;
    let third = third["result"].clone();
    assert_eq!(third["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["size"]);
    let done =
        round(&server, &rpc, json!({ "size": answer::accept(json!({ "size": 9 })) }), Some(&third["requestState"]))
            .await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada wants a 9 green");
}

#[tokio::test]
async fn joined_asks_go_out_in_one_round() {
    let server = TestServer::start(server()).await;
    let rpc = Rpc::call_tool("test_input_required_result_multiple_inputs", json!({}));
    let first = server.call(&rpc).await["result"].clone();
    let requests = first["inputRequests"].as_object().unwrap();
    let methods: Vec<(&str, &str)> =
        requests.iter().map(|(k, v)| (k.as_str(), v["method"].as_str().unwrap())).collect();
    assert_eq!(
        methods,
        [("client_roots", "roots/list"), ("greeting", "sampling/createMessage"), ("user_name", "elicitation/create")]
    );
    assert_eq!(requests["greeting"]["params"]["maxTokens"], 50);
    let answers = json!({
        "user_name": answer::accept(json!({ "name": "Ada" })),
        "greeting": answer::sampled("Hello there"),
        "client_roots": answer::roots(&["file:///a", "file:///b"]),
    });
    let done = round(&server, &rpc, answers, Some(&first["requestState"])).await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada: Hello there (2 roots)");
}

#[tokio::test]
async fn decline_and_cancel_are_values() {
    let server = TestServer::start(server()).await;
    let rpc = Rpc::call_tool("delete_branch", json!({ "branch": "main" }));
    // States are single-use: each answer goes to a call of its own.
    let answered = |answer: Value| {
        let (server, rpc) = (&server, &rpc);
        async move {
            let first = server.call(rpc).await["result"].clone();
            assert_eq!(first["inputRequests"]["confirm"]["params"]["message"], "Delete main?");
            round(server, rpc, json!({ "confirm": answer }), Some(&first["requestState"])).await
        }
    };
    assert_eq!(answered(answer::decline()).await["result"]["content"][0]["text"], "kept");
    assert_eq!(answered(answer::cancel()).await["result"]["isError"], true);
    let deleted = answered(answer::accept(json!({ "yes": true }))).await;
    assert_eq!(deleted["result"]["content"][0]["text"], "deleted main");
}

#[tokio::test]
async fn a_malformed_answer_is_asked_again() {
    let server = TestServer::start(server()).await;
    let rpc = Rpc::call_tool("test_input_required_result_elicitation", json!({}));
    let mut state = server.call(&rpc).await["result"]["requestState"].clone();
    for malformed in [
        answer::accept(json!({ "nom": "Ada" })),
        answer::accept(json!({ "name": 42 })),
        json!({ "action": "maybe" }),
        answer::sampled("not an elicitation result"),
    ] {
        let again = round(&server, &rpc, json!({ "user_name": malformed }), Some(&state)).await;
        assert_eq!(again["result"]["resultType"], "input_required", "{again}");
        assert!(again["result"]["inputRequests"]["user_name"].is_object());
        state = again["result"]["requestState"].clone();
    }
    let done =
        round(&server, &rpc, json!({ "user_name": answer::accept(json!({ "name": "Ada" })) }), Some(&state)).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
}

#[tokio::test]
async fn structurally_invalid_responses_are_errors() {
    let server = TestServer::start(server()).await;
    let rpc = Rpc::call_tool("test_input_required_result_elicitation", json!({}));
    for invalid in [json!(null), json!([]), json!({ "user_name": 12345 }), json!({ "user_name": "Ada" })] {
        let reply = server.call(&rpc.clone().param("inputResponses", invalid.clone())).await;
        assert_eq!(reply["error"]["code"], -32602, "{invalid}: {reply}");
    }
}

#[tokio::test]
async fn a_question_that_changes_every_round_ends_in_an_error() {
    let server = TestServer::start(server()).await;
    let rpc = Rpc::call_tool("restless", json!({}));
    let mut state = server.call(&rpc).await["result"]["requestState"].clone();
    for round_number in 2..=10 {
        let reply =
            round(&server, &rpc, json!({ "answer": answer::accept(json!({ "name": "x" })) }), Some(&state)).await;
        if let Some(error) = reply.get("error") {
            assert_eq!(error["code"], -32603);
            assert!(error["message"].as_str().unwrap().contains("changes every round"), "{error}");
            assert!(round_number <= 3, "the error came only in round {round_number}");
            return;
        }
        state = reply["result"]["requestState"].clone();
    }
    panic!("the restless question never ended in an error");
}

#[tokio::test]
async fn tampered_and_misdirected_states_are_one_uniform_error() {
    let server = TestServer::start(server()).await;
    let rpc = Rpc::call_tool("test_input_required_result_request_state", json!({}));
    let state = server.call(&rpc).await["result"]["requestState"].as_str().unwrap().to_owned();
    let confirm = json!({ "confirm": answer::accept(json!({ "ok": true })) });
    let mut errors = Vec::new();
    for (rpc, state) in [
        (rpc.clone(), format!("{state}-TAMPERED")),
        (rpc.clone(), state[..state.len() - 1].to_owned()),
        (Rpc::call_tool("test_input_required_result_tampered_state", json!({})), state.clone()),
        (Rpc::call_tool("test_input_required_result_request_state", json!({ "extra": 1 })), state.clone()),
    ] {
        let reply = round(&server, &rpc, confirm.clone(), Some(&json!(state))).await;
        errors.push(reply["error"].clone());
    }
    assert!(errors.iter().all(|e| e["code"] == -32602 && *e == errors[0]), "{errors:?}");
    let ok = round(&server, &rpc, confirm, Some(&json!(state))).await;
    assert_eq!(ok["result"]["content"][0]["text"], "state-ok: confirmed=true");
}

/// Reports progress and logs around two asks: a replay reaches the earlier ones again.
#[tool]
async fn reported(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.progress(1.0).of(3.0).message("started").await;
    ctx.log(LoggingLevel::Info, None, "looking things up").await;
    let name: Name = ask!(elicit "Name?")?;
    ctx.progress(2.0).of(3.0).message("named").await;
    let color: Color = ask!(elicit "Colour?")?;
    // A handler that reports less than before must not move the client's bar back.
    ctx.progress(1.5).of(3.0).message("rechecking").await;
    ctx.progress(3.0).of(3.0).message("done").await;
    Ok(format!("{} {}", name.name, color.color))
}

#[tokio::test]
async fn notifications_before_an_ask_reach_the_client_once_over_three_rounds() {
    let server = TestServer::start(server().logging(true).tool(reported)).await;
    let rpc = Rpc::call_tool("reported", json!({}))
        .meta_key("progressToken", json!("bar"))
        .meta_key("io.modelcontextprotocol/logLevel", json!("info"));
    let answers = [
        json!({}),
        json!({ "name": answer::accept(json!({ "name": "Ada" })) }),
        json!({ "color": answer::accept(json!({ "color": "red" })) }),
    ];
    let (mut state, mut seen) = (None::<Value>, Vec::new());
    for answers in answers {
        let mut next = rpc.clone().param("inputResponses", answers);
        if let Some(state) = &state {
            next = next.param("requestState", state.clone());
        }
        let mut messages = server.send(&next).await.messages();
        let reply = messages.pop().expect("a reply");
        seen.extend(messages.into_iter().map(|m| match m["method"].as_str() {
            Some("notifications/progress") => format!("progress {}", m["params"]["progress"]),
            Some(other) => other.to_owned(),
            None => panic!("not a notification: {m}"),
        }));
        state = reply["result"].get("requestState").cloned();
        if state.is_none() {
            assert_eq!(reply["result"]["content"][0]["text"], "Ada red", "{reply}");
        }
    }
    assert_eq!(seen, ["progress 1.0", "notifications/message", "progress 2.0", "progress 3.0"]);
}
