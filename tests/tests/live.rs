//! Live servers over real HTTP on 127.0.0.1: a catalog changed through the server handle
//! while requests run, `subscriptions/listen` streams (filters, subscription ids,
//! clients that leave, clients too slow to keep up), paginated lists while they change,
//! and lists that differ per caller.

use std::collections::HashSet;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use mcp_mrtr::{
    catalog::CatalogError, catalog::CatalogHandle, catalog::Item, catalog::MemoryFanout, catalog::Subscriptions,
    handler::PromptArguments, protocol::Prompt, protocol::PromptMessage, protocol::Resource,
    protocol::ResourceContents, protocol::ResourceTemplate, protocol::Tool, Caller, Server, ToolError,
};
use mcp_mrtr_tests::client::{self, TIMEOUT};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::listen::ListenStream;
use mcp_mrtr_tests::schema;
use serde_json::{json, Map, Value};
use tokio::io::AsyncBufReadExt as _;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn tool(name: &str) -> Tool {
    Tool::new(name).description(format!("The tool {name}"))
}

fn noop_tool(name: &str) -> mcp_mrtr::ToolRoute {
    tool(name).handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("ok") })
}

fn prompt(name: &str) -> mcp_mrtr::PromptRoute {
    Prompt::new(name)
        .description("A prompt")
        .handler(|_ctx, _: PromptArguments| async { Ok::<_, ToolError>(vec![PromptMessage::user("hi")]) })
}

fn resource(uri: &str) -> mcp_mrtr::ResourceRoute {
    let owned = uri.to_owned();
    Resource::new(uri, "r").handler(move |_ctx| {
        let uri = owned.clone();
        async move { Ok::<_, ToolError>(ResourceContents::text(uri, "text/plain", "content")) }
    })
}

/// A server with a tool, a prompt and a resource that serves listen streams.
fn live_server() -> Server {
    Server::new("live", "0")
        .subscriptions(Subscriptions::default())
        .tool(noop_tool("a"))
        .prompt(prompt("p"))
        .resource(resource("r://a"))
}

/// A listen stream from 127.0.0.1 with request id `id` and this filter.
async fn listen(addr: std::net::SocketAddr, id: Value, filter: Value) -> ListenStream {
    let rpc = Rpc::new("subscriptions/listen").id(id).param("notifications", filter);
    ListenStream::open(addr, None, &rpc).await
}

fn tag(message: &Value) -> &Value {
    &message["params"]["_meta"][SUBSCRIPTION_ID]
}

#[tokio::test]
async fn a_stream_is_acknowledged_first_and_carries_only_what_its_filter_asked_for() {
    let server = live_server();
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["r://a"], "unknownKind": true});
    let mut listener = listen(server.addr, json!("listen-1"), filter).await;
    let ack = listener.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(tag(&ack), "listen-1");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true, "resourceSubscriptions": ["r://a"]}));

    // Changes the filter did not ask for come first: a stream that leaked one would show it.
    handle.prompts().add(prompt("q")).unwrap();
    handle.resource_updated("r://other");
    handle.resources().add(resource("r://b")).unwrap();
    handle.tools().add(noop_tool("b")).unwrap();
    handle.resource_updated("r://a");

    let tools = listener.next().await;
    assert_eq!(tools["method"], "notifications/tools/list_changed");
    assert_eq!(tag(&tools), "listen-1");
    let updated = listener.next().await;
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "r://a");
    assert_eq!(tag(&updated), "listen-1");
}

#[tokio::test]
async fn the_subscription_id_keeps_the_json_type_of_the_listen_request_id() {
    let server = live_server();
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let mut listener = listen(server.addr, json!(7), json!({"promptsListChanged": true})).await;
    assert_eq!(tag(&listener.next().await), &json!(7));
    handle.prompts().remove("p");
    let changed = listener.next().await;
    assert_eq!(changed["method"], "notifications/prompts/list_changed");
    assert_eq!(tag(&changed), &json!(7), "a number stays a number");
}

#[tokio::test]
async fn an_idle_stream_gets_keep_alive_comments() {
    let server = Server::new("idle", "0")
        .subscriptions(Subscriptions::default().keep_alive(Duration::from_millis(20)))
        .tool(noop_tool("a"));
    let server = TestServer::start(server).await;
    let mut listener = listen(server.addr, json!(1), json!({"toolsListChanged": true})).await;
    listener.next().await;
    assert!(listener.read_until("\n: keep-alive\n\n").await, "{}", listener.seen());
}

#[tokio::test]
async fn add_remove_enable_and_disable_change_what_requests_see_and_are_announced() {
    let server = live_server();
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let filter = json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true});
    let mut listener = listen(server.addr, json!(1), filter).await;
    listener.next().await;
    let names = || async {
        let list = server.call(&Rpc::new("tools/list")).await;
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    handle.tools().add(noop_tool("b")).unwrap();
    assert_eq!(listener.next().await["method"], "notifications/tools/list_changed");
    assert_eq!(names().await, ["a", "b"]);

    assert!(handle.tools().disable("a"));
    assert_eq!(listener.next().await["method"], "notifications/tools/list_changed");
    assert_eq!(names().await, ["b"]);
    let hidden = server.call(&Rpc::call_tool("a", json!({}))).await;
    assert_eq!(hidden["error"]["code"], -32602, "a disabled tool is an unknown tool: {hidden}");

    // No change, no notification: the next one must be the prompt's.
    assert!(handle.tools().disable("a"));
    assert!(!handle.tools().remove("missing"));
    assert!(matches!(handle.tools().add(noop_tool("b")), Err(CatalogError::Taken { kind: "tool", .. })));
    // What the builder checks when the server is built, the handle checks on arrival.
    assert_eq!(handle.tools().add(noop_tool("no spaces")), Err(CatalogError::InvalidName("no spaces".into())));
    let headed = tool("headed")
        .input_schema(json!({"type": "object", "properties": {"n": {"type": "object", "x-mcp-header": "N"}}}))
        .handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("ok") });
    assert!(
        matches!(handle.tools().add(headed), Err(CatalogError::InvalidHeader { ref tool, .. }) if tool == "headed"),
        "an x-mcp-header on an object parameter is refused"
    );
    assert!(handle.prompts().disable("p"));
    assert_eq!(listener.next().await["method"], "notifications/prompts/list_changed");

    assert!(handle.tools().enable("a"));
    assert_eq!(listener.next().await["method"], "notifications/tools/list_changed");
    assert_eq!(names().await, ["a", "b"], "an enabled tool is back in its old place");
    assert_eq!(server.call(&Rpc::call_tool("a", json!({}))).await["result"]["content"][0]["text"], "ok");

    assert!(handle.resources().disable("r://a"));
    assert_eq!(listener.next().await["method"], "notifications/resources/list_changed");
    let read = server.call(&Rpc::new("resources/read").param("uri", json!("r://a"))).await;
    assert_eq!(read["error"]["code"], -32602, "a disabled resource is not found: {read}");
    assert!(handle.tools().remove("b"));
    assert_eq!(listener.next().await["method"], "notifications/tools/list_changed");
    assert_eq!(names().await, ["a"]);
}

#[tokio::test]
async fn a_listener_that_goes_away_is_dropped() {
    let server = live_server();
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let mut listener = listen(server.addr, json!(1), json!({"toolsListChanged": true})).await;
    listener.next().await;
    assert_eq!(handle.listeners(), 1);
    drop(listener);
    // The server notices when it next writes to the stream; each toggle is one write.
    tokio::time::timeout(TIMEOUT, async {
        for round in 0.. {
            if handle.listeners() == 0 {
                return;
            }
            if round % 2 == 0 {
                handle.tools().disable("a");
            } else {
                handle.tools().enable("a");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the stream of a client that left is closed");
    assert_eq!(server.call(&Rpc::new("tools/list")).await["result"]["resultType"], "complete");
}

#[tokio::test]
async fn a_listener_that_does_not_read_is_ended_with_the_listen_result() {
    // A stream honours only URIs its caller may read: long ones are served by a template.
    let long = ResourceTemplate::new("r://{id}", "long").handler(|_ctx, _: Map<String, Value>| async {
        Ok::<_, ToolError>(ResourceContents::text("r://long", "text/plain", "content"))
    });
    let server =
        Server::new("slow", "0").subscriptions(Subscriptions::default().fanout(MemoryFanout::new(64))).resource(long);
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    // Long URIs fill the socket's buffers after a few hundred notifications.
    let uri = format!("r://{}", "x".repeat(16 * 1024));
    let mut listener = listen(server.addr, json!("slow"), json!({"resourceSubscriptions": [uri]})).await;
    let ack = listener.next().await;
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([uri]), "honoured");
    let mut published = 0;
    tokio::time::timeout(TIMEOUT, async {
        while handle.listeners() > 0 {
            assert!(published < 100_000, "the listener was never ended");
            for _ in 0..100 {
                handle.resource_updated(uri.clone());
            }
            published += 100;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a listener that does not read is ended");
    // What it was sent before the end is still there to read, then the listen result.
    let mut last = listener.next().await;
    while last.get("method").is_some() {
        last = listener.next().await;
    }
    assert_eq!(last["id"], "slow");
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(last["result"]["_meta"][SUBSCRIPTION_ID], "slow");
}

#[tokio::test]
async fn pages_stay_consistent_while_the_list_changes() {
    let server =
        Server::new("paged", "0").page_size(3).prompt(prompt("p")).tools((0..10).map(|i| noop_tool(&format!("t{i}"))));
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let page = |cursor: Option<String>| {
        let rpc = match cursor {
            Some(cursor) => Rpc::new("tools/list").param("cursor", json!(cursor)),
            None => Rpc::new("tools/list"),
        };
        let server = &server;
        async move { server.call(&rpc).await["result"].clone() }
    };
    let first = page(None).await;
    let mut seen: Vec<String> = names_of(&first);
    assert_eq!(seen, ["t0", "t1", "t2"]);
    // Between pages: one already sent goes, one not yet sent goes, one is added, one hides.
    assert!(handle.tools().remove("t1"));
    assert!(handle.tools().remove("t4"));
    handle.tools().add(noop_tool("t10")).unwrap();
    assert!(handle.tools().disable("t5"));
    let mut cursor = first["nextCursor"].as_str().map(str::to_owned);
    for _ in 0..10 {
        let Some(next) = cursor.take() else { break };
        let result = page(Some(next)).await;
        assert!(names_of(&result).len() <= 3);
        seen.extend(names_of(&result));
        cursor = result["nextCursor"].as_str().map(str::to_owned);
    }
    assert!(cursor.is_none(), "the last page has no nextCursor");
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no tool twice: {seen:?}");
    for always in ["t0", "t2", "t3", "t6", "t7", "t8", "t9"] {
        assert!(seen.iter().any(|s| s == always), "{always} existed throughout: {seen:?}");
    }
    assert!(!seen.iter().any(|s| s == "t4" || s == "t5"), "{seen:?}");

    for bad in [json!("not-a-cursor"), json!(""), json!(12)] {
        let error = server.call(&Rpc::new("tools/list").param("cursor", bad.clone())).await;
        assert_eq!(error["error"]["code"], -32602, "{bad}: {error}");
    }
    let tools_cursor = first["nextCursor"].clone();
    let prompts = server.call(&Rpc::new("prompts/list").param("cursor", tools_cursor)).await;
    assert_eq!(prompts["error"]["code"], -32602, "a cursor of another list: {prompts}");
}

fn names_of(list: &Value) -> Vec<String> {
    list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// `Authorization: Bearer <name>[:admin]` names the caller (and grants `admin`).
async fn authenticate(mut request: Request, next: Next) -> Response {
    let caller = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|who| match who.split_once(':') {
            Some((name, scope)) => Caller::new(name).with_scopes([scope]),
            None => Caller::new(who),
        });
    if let Some(caller) = caller {
        request.extensions_mut().insert(caller);
    }
    next.run(request).await
}

#[tokio::test]
async fn each_caller_sees_and_calls_only_its_own_tools() {
    let server =
        Server::new("per-caller", "0").tools([noop_tool("public"), noop_tool("admin_reset")]).visible(|view, item| {
            match item {
                Item::Tool(tool) if tool.name.starts_with("admin_") => {
                    view.caller().is_some_and(|c| c.has_scope("admin"))
                }
                _ => true,
            }
        });
    let app = server
        .into_router(mcp_mrtr::http::HttpConfig::default())
        .expect("a router")
        .layer(axum::middleware::from_fn(authenticate));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let send = |rpc: Rpc, who: &'static str| async move {
        let mut headers = rpc.headers();
        headers.push(("authorization".into(), format!("Bearer {who}")));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let response = client::send(addr, "POST", &headers, &rpc.body()).await;
        let reply = response.reply();
        schema::assert_valid_message(&rpc.method, &reply);
        reply
    };
    let for_bob = send(Rpc::new("tools/list"), "bob").await;
    assert_eq!(names_of(&for_bob["result"]), ["public"]);
    assert_eq!(for_bob["result"]["cacheScope"], "private", "a list that varies by caller is not shared");
    let for_ada = send(Rpc::new("tools/list"), "ada:admin").await;
    assert_eq!(names_of(&for_ada["result"]), ["public", "admin_reset"]);
    let denied = send(Rpc::call_tool("admin_reset", json!({})), "bob").await;
    assert_eq!(denied["error"]["code"], -32602, "a hidden tool is an unknown tool: {denied}");
    let allowed = send(Rpc::call_tool("admin_reset", json!({})), "ada:admin").await;
    assert_eq!(allowed["result"]["content"][0]["text"], "ok");
    serving.abort();
}

#[tokio::test]
async fn capabilities_say_exactly_whether_listen_is_served() {
    let plain = TestServer::start(Server::new("plain", "0").tool(noop_tool("a")).resource(resource("r://a"))).await;
    let caps = plain.call(&Rpc::new("server/discover")).await["result"]["capabilities"].clone();
    assert_eq!(caps["tools"], json!({}));
    assert_eq!(caps["resources"], json!({}));
    let listen = plain.send(&Rpc::new("subscriptions/listen").param("notifications", json!({}))).await;
    assert_eq!((listen.status, listen.reply()["error"]["code"].clone()), (404, json!(-32601)));

    let live = TestServer::start(live_server()).await;
    let caps = live.call(&Rpc::new("server/discover")).await["result"]["capabilities"].clone();
    assert_eq!(caps["tools"], json!({"listChanged": true}));
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(caps["resources"], json!({"listChanged": true, "subscribe": true}));
    let no_filter = live.call(&Rpc::new("subscriptions/listen")).await;
    assert_eq!(no_filter["error"]["code"], -32602, "{no_filter}");
}

#[tokio::test]
async fn a_handler_changes_the_catalog_through_its_context() {
    let server = Server::new("self-changing", "0").subscriptions(Subscriptions::default()).tool(tool("grow").handler(
        |ctx: mcp_mrtr::Ctx, _: Map<String, Value>| async move {
            let handle: CatalogHandle = ctx.catalog();
            let added = handle.tools().add(noop_tool("grown")).is_ok();
            Ok::<_, ToolError>(if added { "grown" } else { "already grown" })
        },
    ));
    let server = TestServer::start(server).await;
    let mut listener = listen(server.addr, json!(3), json!({"toolsListChanged": true})).await;
    listener.next().await;
    assert_eq!(server.call(&Rpc::call_tool("grow", json!({}))).await["result"]["content"][0]["text"], "grown");
    assert_eq!(listener.next().await["method"], "notifications/tools/list_changed");
    assert_eq!(server.call(&Rpc::call_tool("grown", json!({}))).await["result"]["content"][0]["text"], "ok");
}

/// stdio: listen streams share stdout with every answer, told apart by subscription id;
/// `notifications/cancelled` ends one, and closing stdin ends the rest.
#[tokio::test]
async fn over_stdio_streams_are_demultiplexed_by_subscription_id_and_cancelled() {
    use tokio::io::{AsyncWriteExt, BufReader};

    let server = live_server();
    let handle = server.catalog();
    let (mut input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(1 << 16);
    let serving = tokio::spawn(server.serve(mcp_mrtr::stdio::Pipe::new(server_in, server_out)));
    let mut lines = BufReader::new(output).lines();
    let meta = mcp_mrtr_tests::harness::meta(json!({}));
    for (id, filter) in
        [(json!("tools"), json!({"toolsListChanged": true})), (json!(2), json!({"promptsListChanged": true}))]
    {
        let listen = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": filter}});
        input.write_all(format!("{listen}\n").as_bytes()).await.unwrap();
        let ack = next_line(&mut lines).await;
        assert_eq!((ack["method"].as_str(), tag(&ack)), (Some("notifications/subscriptions/acknowledged"), &id));
    }
    handle.tools().disable("a");
    handle.prompts().disable("p");
    let (first, second) = (next_line(&mut lines).await, next_line(&mut lines).await);
    assert_eq!((first["method"].as_str(), tag(&first)), (Some("notifications/tools/list_changed"), &json!("tools")));
    assert_eq!((second["method"].as_str(), tag(&second)), (Some("notifications/prompts/list_changed"), &json!(2)));

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "tools"}});
    input.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
    tokio::time::timeout(TIMEOUT, async {
        while handle.listeners() > 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the cancelled stream ends");
    handle.tools().enable("a");
    handle.prompts().enable("p");
    let only = next_line(&mut lines).await;
    assert_eq!(tag(&only), &json!(2), "the cancelled stream sends nothing more: {only}");
    drop(input);
    tokio::time::timeout(TIMEOUT, serving).await.expect("closing stdin ends the open streams").unwrap().unwrap();
    assert_eq!(handle.listeners(), 0);
}

async fn next_line(lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::DuplexStream>>) -> Value {
    let line = tokio::time::timeout(TIMEOUT, lines.next_line()).await.expect("a line in time");
    let message = serde_json::from_str(&line.unwrap().expect("the server is still writing")).unwrap();
    schema::assert_valid_message("subscriptions/listen", &message);
    message
}
