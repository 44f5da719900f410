//! A user who declines or cancels a form has made a choice, not broken the server
//! (issue 33): the call ends with a complete result that says so, for a tool (`isError`,
//! which the model reads), a prompt (no messages) and a resource (one text saying it was
//! not read), over real HTTP on 127.0.0.1 and over a stdio pipe. Hosts print a `-32603`
//! as the server's failure.

use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::harness::{meta, Rpc, TestServer};
use mcp_mrtr_tests::pipe::Pipe;
use serde_json::{json, Value};

/// What to write about.
#[derive(Deserialize, JsonSchema)]
struct Topic {
    topic: String,
}

/// Writes about a topic the user picks.
#[tool]
async fn write() -> Result<String, ToolError> {
    let Topic { topic } = ask!(key = "topic", elicit "Write about what?")?;
    Ok(format!("an essay on {topic}"))
}

/// A summary of a topic the user picks.
#[prompt]
async fn summary() -> Result<Vec<PromptMessage>, ToolError> {
    let Topic { topic } = ask!(key = "topic", elicit "Summarise what?")?;
    Ok(vec![PromptMessage::user(format!("Summarise {topic}"))])
}

/// A note on a topic the user picks.
#[resource(uri = "notes://picked", mime_type = "text/plain")]
async fn picked() -> Result<ResourceContents, ToolError> {
    let Topic { topic } = ask!(key = "topic", elicit "Which note?")?;
    Ok(ResourceContents::text("notes://picked", "text/plain", topic))
}

fn server() -> Server {
    Server::new("choices", "0").tool(write).prompt(summary).resource(picked)
}

/// The requests, each with the answer of its second round still to add.
fn requests() -> [(&'static str, Value); 3] {
    [
        ("tools/call", json!({ "name": "write" })),
        ("prompts/get", json!({ "name": "summary" })),
        ("resources/read", json!({ "uri": "notes://picked" })),
    ]
}

/// What each method's complete result says of the user's choice.
fn assert_says_so(method: &str, result: &Value, choice: &str) {
    assert_eq!(result["resultType"], "complete", "{method}: {result}");
    let said = match method {
        "tools/call" => {
            assert_eq!(result["isError"], true, "{result}");
            &result["content"][0]["text"]
        }
        "prompts/get" => {
            assert_eq!(result["messages"], json!([]), "nothing to send: {result}");
            &result["description"]
        }
        _ => &result["contents"][0]["text"],
    };
    assert!(said.as_str().is_some_and(|text| text.contains(choice)), "{method}: {result}");
}

fn answer(action: &str) -> Value {
    json!({ "action": action })
}

#[tokio::test]
async fn a_declined_or_cancelled_form_completes_every_method_over_http() {
    let server = TestServer::start(server()).await;
    for (method, params) in requests() {
        for (action, choice) in [("decline", "declined"), ("cancel", "cancelled")] {
            let mut rpc = Rpc::new(method).caps(json!({ "elicitation": {} }));
            for (key, value) in params.as_object().unwrap() {
                rpc = rpc.param(key, value.clone());
            }
            let first = server.call(&rpc).await["result"].clone();
            let (key, _) = first["inputRequests"].as_object().unwrap().iter().next().expect("one ask");
            let retry = rpc
                .param("inputResponses", json!({ key.clone(): answer(action) }))
                .param("requestState", first["requestState"].clone());
            let reply = server.call(&retry).await;
            assert!(reply.get("error").is_none(), "{method} {action}: {reply}");
            assert_says_so(method, &reply["result"], choice);
        }
    }
}

#[tokio::test]
async fn a_cancelled_form_completes_every_method_over_stdio() {
    let mut pipe = Pipe::start(server());
    for (id, (method, mut params)) in (1..).zip(requests()) {
        params["_meta"] = meta(json!({ "elicitation": {} }));
        let request = |params: &Value| json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let first = pipe.round(&request(&params)).await["result"].clone();
        let (key, _) = first["inputRequests"].as_object().unwrap().iter().next().expect("one ask");
        params["inputResponses"] = json!({ key.clone(): answer("cancel") });
        params["requestState"] = first["requestState"].clone();
        let reply = pipe.round(&request(&params)).await;
        assert_says_so(method, &reply["result"], "cancelled");
    }
}
