//! `#[mcp(extract)]` resolves a parameter whose type does not read as an extractor: an
//! alias of `State<T>`. The state is still required before the server serves.
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;

struct Pool {
    name: &'static str,
}

type Db = State<Pool>;

/// Names the database.
#[tool]
async fn database(#[mcp(extract)] db: Db) -> Result<String, ToolError> {
    Ok(db.name.to_owned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = Server::new("ui", "0.0.0").with_state(Pool { name: "main" }).tool(database);
    let client = TestClient::new(server);
    let tools = client.list_tools().await.unwrap();
    assert!(tools[0].input_schema["properties"].get("db").is_none(), "an extractor is no argument");
    let done = client.call_tool("database", serde_json::json!({})).start().await;
    assert_eq!(done.text().as_deref(), Some("main"));
    // Without the state the server refuses, as for `State<Pool>` spelled out. (The hook
    // keeps that expected panic's message out of the test's output.)
    std::panic::set_hook(Box::new(|_| {}));
    let stateless = std::panic::catch_unwind(|| TestClient::new(Server::new("ui", "0.0.0").tool(database)));
    assert!(stateless.is_err(), "a server without a Pool must refuse to serve");
}
