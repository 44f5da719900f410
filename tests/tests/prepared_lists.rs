//! Lists and discovery are served from bodies prepared once per catalog and visible set:
//! over real HTTP, a change made through the server handle, or a filter that changes its
//! mind, shows in the very next answer, and callers who see different things never get
//! one another's list.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcp_mrtr::{
    catalog::Item, handler::PromptArguments, protocol::Prompt, protocol::PromptMessage, protocol::Resource,
    protocol::ResourceContents, protocol::ResourceTemplate, protocol::Tool, Server, ToolError,
};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use serde_json::{json, Map, Value};

fn tool(name: &str) -> mcp_mrtr::ToolRoute {
    Tool::new(name).description("t").handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("ok") })
}

fn prompt(name: &str) -> mcp_mrtr::PromptRoute {
    Prompt::new(name)
        .description("p")
        .handler(|_ctx, _: PromptArguments| async { Ok::<_, ToolError>(vec![PromptMessage::user("hi")]) })
}

fn resource(uri: &str) -> mcp_mrtr::ResourceRoute {
    Resource::new(uri, "r")
        .handler(|_ctx| async { Ok::<_, ToolError>(ResourceContents::text("r://x", "text/plain", "x")) })
}

fn template(uri_template: &str) -> mcp_mrtr::ResourceRoute {
    ResourceTemplate::new(uri_template, "t").handler(|_ctx, _: Map<String, Value>| async {
        Ok::<_, ToolError>(ResourceContents::text("r://x", "text/plain", "x"))
    })
}

/// The names (or URIs) of a list answer, after checking its stamps.
async fn listed(server: &TestServer, rpc: Rpc, member: &str, key: &str) -> Vec<String> {
    let reply = server.call(&rpc).await;
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete", "{reply}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "prepared", "{reply}");
    let entries = result[member].as_array().unwrap_or_else(|| panic!("no {member}: {reply}"));
    entries.iter().map(|entry| entry[key].as_str().unwrap().to_owned()).collect()
}

async fn tools(server: &TestServer) -> Vec<String> {
    listed(server, Rpc::new("tools/list"), "tools", "name").await
}

#[tokio::test]
async fn every_change_through_the_handle_shows_in_the_next_list() {
    let server = Server::new("prepared", "0").tool(tool("a")).resource(resource("r://a"));
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    // Twice each, so the second answer comes from the prepared body.
    for _ in 0..2 {
        assert_eq!(tools(&server).await, ["a"]);
    }
    handle.tools().add(tool("b")).unwrap();
    assert_eq!(tools(&server).await, ["a", "b"]);
    assert_eq!(tools(&server).await, ["a", "b"]);
    assert!(handle.tools().disable("a"));
    assert_eq!(tools(&server).await, ["b"]);
    assert!(handle.tools().enable("a"));
    assert_eq!(tools(&server).await, ["a", "b"]);
    assert!(handle.tools().remove("b"));
    assert_eq!(tools(&server).await, ["a"]);

    let resources = || listed(&server, Rpc::new("resources/list"), "resources", "uri");
    let templates = || listed(&server, Rpc::new("resources/templates/list"), "resourceTemplates", "uriTemplate");
    assert_eq!(resources().await, ["r://a"]);
    assert!(templates().await.is_empty());
    handle.resources().add(template("r://t/{id}")).unwrap();
    handle.resources().add(resource("r://b")).unwrap();
    assert_eq!(resources().await, ["r://a", "r://b"]);
    assert_eq!(templates().await, ["r://t/{id}"]);
}

#[tokio::test]
async fn discovery_follows_the_kinds_registered() {
    let server = Server::new("prepared", "0").tool(tool("a"));
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let capabilities = || async { server.call(&Rpc::new("server/discover")).await["result"]["capabilities"].clone() };
    assert!(capabilities().await.get("prompts").is_none());
    assert!(capabilities().await.get("prompts").is_none());
    handle.prompts().add(prompt("p")).unwrap();
    assert_eq!(capabilities().await["prompts"], json!({}));
    assert_eq!(listed(&server, Rpc::new("prompts/list"), "prompts", "name").await, ["p"]);
    assert!(handle.prompts().remove("p"));
    // With its last prompt gone, the server no longer offers prompts.
    assert!(capabilities().await.get("prompts").is_none());
}

#[tokio::test]
async fn pages_are_prepared_per_cursor_and_follow_changes() {
    let server = Server::new("prepared", "0").page_size(2).tools(["a", "b", "c"].map(tool));
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let first = server.call(&Rpc::new("tools/list")).await["result"].clone();
    let cursor = first["nextCursor"].clone();
    let second = || listed(&server, Rpc::new("tools/list").param("cursor", cursor.clone()), "tools", "name");
    assert_eq!(second().await, ["c"]);
    assert_eq!(second().await, ["c"]);
    handle.tools().add(tool("d")).unwrap();
    assert_eq!(second().await, ["c", "d"]);
    assert_eq!(tools(&server).await, ["a", "b"], "the first page did not change");
}

#[tokio::test]
async fn callers_who_see_different_tools_never_share_a_list() {
    let audit_open = Arc::new(AtomicBool::new(false));
    let open = audit_open.clone();
    let server =
        Server::new("prepared", "0").tools(["public", "red_only", "audit"].map(tool)).visible(move |view, item| {
            let team = view.http_headers().and_then(|h| h.get("x-team")).and_then(|v| v.to_str().ok());
            match item {
                Item::Tool(tool) if tool.name == "red_only" => team == Some("red"),
                Item::Tool(tool) if tool.name == "audit" => open.load(Ordering::SeqCst),
                _ => true,
            }
        });
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let as_team =
        |team: &'static str| listed(&server, Rpc::new("tools/list").header("x-team", Some(team)), "tools", "name");
    for _ in 0..2 {
        assert_eq!(as_team("red").await, ["public", "red_only"]);
        assert_eq!(as_team("blue").await, ["public"]);
    }
    // The filter changes its mind with no catalog change: the next lists follow it.
    audit_open.store(true, Ordering::SeqCst);
    assert_eq!(as_team("blue").await, ["public", "audit"]);
    assert_eq!(as_team("red").await, ["public", "red_only", "audit"]);
    handle.tools().add(tool("new")).unwrap();
    assert_eq!(as_team("blue").await, ["public", "audit", "new"]);
    assert!(handle.tools().disable("red_only"));
    assert_eq!(as_team("red").await, ["public", "audit", "new"]);
    let reply = server.call(&Rpc::new("tools/list").header("x-team", Some("red"))).await;
    assert_eq!(reply["result"]["cacheScope"], "private", "a list that varies by caller is not shared: {reply}");
}
