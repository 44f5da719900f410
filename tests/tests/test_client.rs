//! `TestClient` beyond calls: every page of each list as this client sees it, and a
//! listen stream that hears the server's changes.

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;
use mcp_mrtr::{
    catalog::Subscriptions, handler::PromptArguments, protocol::Prompt, protocol::PromptMessage,
    protocol::ResourceContents, protocol::ResourceTemplate, protocol::Tool,
};
use serde_json::{json, Map, Value};

type NoArgs = Map<String, Value>;

fn tool(name: &str) -> Tool {
    Tool::new(name).description("A tool")
}

fn server() -> Server {
    let mut server = Server::new("lists", "1").page_size(2).subscriptions(Subscriptions::default());
    for name in ["a", "b", "c", "d", "e"] {
        server = server.tool(tool(name).handler(|_ctx, _args: NoArgs| async { Ok::<_, ToolError>("ok") }));
    }
    server
        .prompt(
            Prompt::new("greeting")
                .description("Greets")
                .handler(|_ctx, _args: PromptArguments| async { Ok::<_, ToolError>(vec![PromptMessage::user("hi")]) }),
        )
        .resource(ResourceTemplate::new("note://{title}", "note").handler(|_ctx, _vars: NoArgs| async {
            Ok::<_, ToolError>(ResourceContents::text("note://x", "text/plain", "body"))
        }))
}

#[tokio::test]
async fn lists_come_whole_across_their_pages() {
    let client = TestClient::new(server());
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"], "three pages of two");
    assert_eq!(client.list_prompts().await.unwrap()[0].name, "greeting");
    assert_eq!(client.list_resource_templates().await.unwrap()[0].uri_template, "note://{title}");
    assert!(client.list_resources().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_listen_stream_hears_what_it_asked_for_and_nothing_else() {
    let server = server();
    let handle = server.catalog();
    let client = TestClient::new(server);
    let mut stream = client.listen(json!({ "toolsListChanged": true })).await.unwrap();
    assert_eq!(stream.acknowledged()["notifications"]["toolsListChanged"], true, "{}", stream.acknowledged());

    assert!(handle.prompts().disable("greeting"), "not asked for: not heard");
    assert!(handle.tools().disable("c"));
    let note = stream.next().await.unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a", "b", "d", "e"]);
}

#[tokio::test]
async fn listening_on_a_server_that_does_not_serve_it_is_an_error() {
    let client = TestClient::new(
        Server::new("quiet", "1").tool(tool("a").handler(|_ctx, _args: NoArgs| async { Ok::<_, ToolError>("ok") })),
    );
    let refused = client.listen(json!({ "toolsListChanged": true })).await.unwrap_err();
    assert_eq!(refused.code(), mcp_mrtr::ErrorCode::METHOD_NOT_FOUND, "{refused:?}");
}
