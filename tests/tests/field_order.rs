//! What a person sees in a host that renders forms in wire order (issue 33): every
//! generated schema lists its properties in the order the code declares them, read off
//! the raw bytes over real HTTP on 127.0.0.1 and over a stdio pipe, never re-parsed.

use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::harness::{meta, Rpc, TestServer};
use mcp_mrtr_tests::pipe::Pipe;
use serde_json::json;

/// Who signs up.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code, reason = "only its schema is read")]
struct Account {
    /// Your user name.
    username: String,
    /// Where we write to you.
    email: String,
    /// How old you are.
    age: Option<u8>,
}

/// Signs a person up.
#[tool]
async fn sign_up(
    /// The team to join.
    team: String,
    /// Who invited them.
    referrer: Option<String>,
) -> Result<String, ToolError> {
    let account: Account = ask!(elicit "Your account?")?;
    Ok(format!("{} joined {team} (via {referrer:?})", account.username))
}

/// Where each name first appears in `text`, which must hold all of them in this order.
fn assert_in_order(text: &str, names: &[&str]) {
    let at: Vec<usize> = names
        .iter()
        .map(|name| text.find(&format!("\"{name}\":")).unwrap_or_else(|| panic!("no {name} in {text}")))
        .collect();
    assert!(at.windows(2).all(|pair| pair[0] < pair[1]), "{names:?} out of order at {at:?}: {text}");
}

#[tokio::test]
async fn a_form_and_a_tool_list_their_fields_in_declaration_order_over_http() {
    let server = TestServer::start(Server::new("order", "0").tool(sign_up)).await;
    let listed = server.send(&Rpc::new("tools/list")).await.body;
    let input = &listed[listed.find("\"inputSchema\"").expect("an input schema")..];
    assert_in_order(input, &["team", "referrer"]);

    let call = Rpc::call_tool("sign_up", json!({ "team": "core" })).caps(json!({ "elicitation": {} }));
    let body = server.send(&call).await.body;
    let form = &body[body.find("\"requestedSchema\"").expect("a form")..];
    assert_in_order(form, &["username", "email", "age"]);
}

#[tokio::test]
async fn the_same_order_over_stdio() {
    let mut pipe = Pipe::start(Server::new("order", "0").tool(sign_up));
    pipe.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta(json!({})) } }))
        .await;
    // The raw line, not a re-serialized value: the order is the server's.
    assert_in_order(&pipe.next_line().await, &["team", "referrer"]);
}
