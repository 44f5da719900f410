//! What a person is shown (issue 49): every tool, prompt and resource has a title read
//! from its name unless it was given one or had it removed (a host drops a tool without
//! one), and icons (SEP-973) from the macros, the builders and the server, on both
//! revisions' lists, valid against both official schemas.

use mcp_mrtr::prelude::*;
use mcp_mrtr::protocol::{Icon, ResourceContents, Theme, Tool};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Map, Value};

/// Gets the forecast.
#[tool(icon = "https://weather.example/icons/forecast.svg")]
async fn get_forecast(city: String) -> Result<String, ToolError> {
    Ok(format!("Sunny in {city}"))
}

/// Says the time.
#[tool(title = "What time is it?")]
async fn now() -> Result<String, ToolError> {
    Ok("noon".into())
}

/// Drafts a release note.
#[prompt(name = "releaseNote", icon = "data:image/png;base64,iVBORw0KGgo=")]
async fn release_note() -> Result<Vec<PromptMessage>, ToolError> {
    Ok(vec![PromptMessage::user("Draft it")])
}

/// The changelog.
#[resource(uri = "docs://changelog", name = "CHANGELOG")]
async fn changelog() -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text("docs://changelog", "text/plain", "all of it"))
}

fn server() -> Server {
    let raw = Tool::new("raw_ping")
        .without_title()
        .icon(Icon::new("https://ops.example/ping.png").mime_type("image/png").size("48x48").theme(Theme::Dark))
        .handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("pong") });
    Server::new("shown", "1")
        .icon(Icon::new("https://weather.example/icon.svg").size("any"))
        .tool(get_forecast)
        .tool(now)
        .tool(raw)
        .tool(now_again().title("Clock").icon(Icon::new("https://ops.example/clock.png")))
        .prompt(release_note)
        .resource(changelog)
}

/// Says the time again.
#[tool]
async fn now_again() -> Result<String, ToolError> {
    Ok("still noon".into())
}

fn by_name<'a>(list: &'a Value, member: &str, name: &str) -> &'a Value {
    list[member].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("{name}: {list}"))
}

fn check(tools: &Value, prompts: &Value, resources: &Value) {
    let forecast = by_name(tools, "tools", "get_forecast");
    assert_eq!(forecast["title"], "Get forecast", "read from the name: {forecast}");
    assert_eq!(forecast["icons"], json!([{"src": "https://weather.example/icons/forecast.svg"}]));
    assert_eq!(by_name(tools, "tools", "now")["title"], "What time is it?");
    let raw = by_name(tools, "tools", "raw_ping");
    assert!(raw.get("title").is_none(), "removed: {raw}");
    assert_eq!(
        raw["icons"],
        json!([{"src": "https://ops.example/ping.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}])
    );
    let clock = by_name(tools, "tools", "now_again");
    assert_eq!(
        (&clock["title"], &clock["icons"][0]["src"]),
        (&json!("Clock"), &json!("https://ops.example/clock.png"))
    );
    let note = by_name(prompts, "prompts", "releaseNote");
    assert_eq!(
        (&note["title"], &note["icons"][0]["src"]),
        (&json!("Release note"), &json!("data:image/png;base64,iVBORw0KGgo="))
    );
    assert_eq!(by_name(resources, "resources", "CHANGELOG")["title"], "CHANGELOG");
}

#[tokio::test]
async fn titles_and_icons_reach_both_revisions() {
    let server = TestServer::start(server()).await;
    let modern = |method: &'static str| {
        let server = &server;
        async move { server.call(&Rpc::new(method)).await["result"].clone() }
    };
    let (tools, prompts, resources) =
        (modern("tools/list").await, modern("prompts/list").await, modern("resources/list").await);
    check(&tools, &prompts, &resources);
    let discovered = server.call(&Rpc::new("server/discover")).await;
    assert_eq!(
        discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["icons"],
        json!([{"src": "https://weather.example/icon.svg", "sizes": ["any"]}]),
        "{discovered}"
    );

    // Legacy lists go through the same prepared bodies; `send` checks them against the
    // 2025-11-25 schema, `call` against 2026-07-28's.
    let (legacy, init) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(init["serverInfo"]["icons"][0]["src"], "https://weather.example/icon.svg");
    let list = |id, method| {
        let legacy = &legacy;
        async move { legacy.call(id, method, json!({})).await["result"].clone() }
    };
    check(&list(1, "tools/list").await, &list(2, "prompts/list").await, &list(3, "resources/list").await);
}
