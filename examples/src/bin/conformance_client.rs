//! The client under test of the official conformance suite's client scenarios, built on
//! `mcp_mrtr::client`: `conformance_client URL`, with the scenario in
//! `MCP_CONFORMANCE_SCENARIO` (and its data in `MCP_CONFORMANCE_CONTEXT`), as the suite runs
//! any SDK's client. Each scenario is a short script of ordinary client calls; what the
//! suite checks (the envelope, the headers, the rounds) is the library's own behaviour.
//!
//! ```text
//! npx @modelcontextprotocol/conformance@0.2.0-alpha.12 client \
//!     --command "target/debug/conformance_client" --requirements 2026-07-28
//! ```

use anyhow::Context as _;
use mcp_mrtr::client::{Answers, Client};
use mcp_mrtr::protocol::{CreateMessageResult, ElicitResult, ListRootsResult, Root};
use serde_json::{json, Value};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let url = std::env::args().next_back().context("usage: conformance_client URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // The version the suite asks for is the one spoken: no fallback to hide behind.
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2026-07-28".into());
    let client = Client::http(url).versions([version]).answers(answers()).connect().await?;
    match scenario.as_str() {
        "tools_call" => {
            client.list_tools().await?;
            client.call_tool("add_numbers", json!({"a": 5, "b": 3})).await?;
        }
        "sep-2322-client-request-state" => {
            for tool in
                ["test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"]
            {
                client.call_tool(tool, json!({})).await?;
            }
        }
        "http-standard-headers" => {
            if let Some(tool) = client.list_tools().await?.first() {
                client.call_tool(&tool.name, json!({})).await?;
            }
            if let Some(resource) = client.list_resources().await?.first() {
                client.read_resource(&resource.uri).await?;
            }
            if let Some(prompt) = client.list_prompts().await?.first() {
                client.get_prompt(&prompt.name, json!({})).await?;
            }
        }
        "http-custom-headers" => {
            client.list_tools().await?;
            let context: Value = serde_json::from_str(&std::env::var("MCP_CONFORMANCE_CONTEXT")?)?;
            for call in context["toolCalls"].as_array().context("the context names no tool calls")? {
                let name = call["name"].as_str().context("a tool call without a name")?;
                client.call_tool(name, &call["arguments"]).await?;
            }
        }
        "http-invalid-tool-headers" => {
            // Only the tools whose annotations are valid are listed, so only they are called.
            for tool in client.list_tools().await? {
                client.call_tool(&tool.name, json!({"region": "us-west1"})).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.list_tools().await?;
            let focal = tools.iter().find(|tool| tool.name == "json_schema_2020_12_tool").context("no focal tool")?;
            client.call_tool("json_schema_echo", json!({"schema": focal.input_schema})).await?;
        }
        "elicitation-sep1034-client-defaults" => {
            client.list_tools().await?;
            client.call_tool("test_client_elicitation_defaults", json!({})).await?;
        }
        "sse-retry" => {
            client.list_tools().await?;
            client.call_tool("test_reconnection", json!({})).await?;
        }
        // initialize, request-metadata, json-schema-ref-no-deref and any other: connect
        // (done) and list.
        _ => {
            client.list_tools().await?;
        }
    }
    Ok(())
}

/// Every kind of question answered, so every capability is declared.
fn answers() -> Answers {
    Answers::new()
        .forms(|question| async move {
            // Each property without a default answered with a value of its type (`confirmed:
            // true` and the like); the library fills in the defaults (SEP-1034).
            let mut content = serde_json::Map::new();
            for (name, field) in question.schema["properties"].as_object().into_iter().flatten() {
                if field.get("default").is_some() {
                    continue;
                }
                let value = match (field["type"].as_str(), field["enum"].get(0)) {
                    (_, Some(first)) => first.clone(),
                    (Some("boolean"), _) => json!(true),
                    (Some("integer" | "number"), _) => json!(1),
                    _ => json!("conformance"),
                };
                content.insert(name.clone(), value);
            }
            Ok(ElicitResult::accept(content))
        })
        .urls(|_| async { Ok(ElicitResult::accepted()) })
        .sampling(|_| async { Ok(CreateMessageResult::from_text("conformance-model", "ok")) })
        .roots(|| async { Ok(ListRootsResult::new(vec![Root::new("file:///conformance")])) })
}
