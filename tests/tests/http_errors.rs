//! Every error row of the 2026-07-28 HTTP pipeline, over real HTTP on 127.0.0.1: its
//! JSON-RPC code, its HTTP status, and the request id echoed.

use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::{meta, Rpc, TestServer};
use serde_json::{json, Value};

async fn expect_error(server: &TestServer, rpc: &Rpc, status: u16, code: i64) -> Value {
    let response = server.send(rpc).await;
    assert_eq!(response.status, status, "{}", response.body);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let reply = response.reply();
    assert_eq!(reply["error"]["code"], code, "{reply}");
    assert!(reply["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    reply
}

#[tokio::test]
async fn incomplete_envelope_is_invalid_params_with_400_and_the_id() {
    let server = TestServer::everything().await;
    let version = "io.modelcontextprotocol/protocolVersion";
    let caps = "io.modelcontextprotocol/clientCapabilities";
    let cases = [
        (json!(101), Value::Null),
        (json!("s-102"), json!({ caps: {} })),
        (json!(104), json!({ version: "2026-07-28" })),
        (json!(105), json!({ version: "2026-07-28", caps: { "sampling": "yes" } })),
    ];
    for (id, meta) in cases {
        let rpc = Rpc::new("server/discover").id(id.clone()).meta_value(meta);
        let reply = expect_error(&server, &rpc, 400, -32602).await;
        assert_eq!(reply["id"], id);
    }
}

#[tokio::test]
async fn client_info_is_optional() {
    let server = TestServer::everything().await;
    let mut bare = meta(json!({}));
    bare.as_object_mut().unwrap().remove("io.modelcontextprotocol/clientInfo");
    let reply = server.call(&Rpc::new("server/discover").meta_value(bare)).await;
    assert_eq!(reply["result"]["resultType"], "complete");
}

#[tokio::test]
async fn missing_or_mismatched_headers_are_header_mismatch() {
    let server = TestServer::everything().await;
    let tool = || Rpc::call_tool("test_simple_text", json!({})).id(json!(7));
    // Each case, and what the error must tell the client to send (nothing to add where the
    // value itself is broken).
    let version = mcp_mrtr::protocol::PROTOCOL_VERSION;
    let cases = [
        (tool().header("mcp-protocol-version", None), format!("`MCP-Protocol-Version: {version}`")),
        (tool().header("mcp-method", None), "`Mcp-Method: tools/call`".to_owned()),
        (tool().header("mcp-name", None), "`Mcp-Name: test_simple_text`".to_owned()),
        (tool().header("mcp-method", Some("TOOLS/CALL")), "`Mcp-Method: tools/call`".to_owned()),
        (tool().header("mcp-name", Some("test_image_content")), "`Mcp-Name: test_simple_text`".to_owned()),
        (tool().header("mcp-name", Some("=?base64?!!?=")), "base64".to_owned()),
        // The method's mismatch comes first: which Mcp-Name it needs depends on it.
        (
            tool().header("mcp-method", Some("prompts/get")).header("mcp-name", None),
            "`Mcp-Method: tools/call`".to_owned(),
        ),
        (
            Rpc::new("server/discover").meta_key("io.modelcontextprotocol/protocolVersion", json!("v999.0.0")),
            String::new(),
        ),
    ];
    for (rpc, says) in cases {
        let reply = expect_error(&server, &rpc, 400, -32020).await;
        assert_eq!(reply["id"], rpc.body().as_slice().pipe_id());
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&says), "the error should say {says}: {message}");
    }
}

trait PipeId {
    fn pipe_id(&self) -> Value;
}

impl PipeId for [u8] {
    fn pipe_id(&self) -> Value {
        serde_json::from_slice::<Value>(self).unwrap()["id"].clone()
    }
}

#[tokio::test]
async fn header_values_are_trimmed_and_base64_decoded() {
    let server = TestServer::everything().await;
    for name in ["  test_simple_text  ", "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?="] {
        let rpc = Rpc::call_tool("test_simple_text", json!({})).header("mcp-name", Some(name));
        let reply = server.call(&rpc).await;
        assert_eq!(reply["result"]["content"][0]["text"], "This is a simple text response for testing.");
    }
}

/// A legacy version header sends the body down the general path (the fast one is only
/// tried for modern headers): a modern envelope still wins, and the header is refused.
#[tokio::test]
async fn a_modern_body_under_a_legacy_version_header_is_read_as_modern() {
    let server = TestServer::everything().await;
    let rpc =
        Rpc::call_tool("test_simple_text", json!({})).id(json!(302)).header("mcp-protocol-version", Some("2025-11-25"));
    let reply = expect_error(&server, &rpc, 400, -32022).await;
    assert_eq!(reply["id"], 302);
    assert_eq!(reply["error"]["data"]["requested"], "2025-11-25");
}

#[tokio::test]
async fn unsupported_version_names_what_is_supported() {
    let server = TestServer::everything().await;
    let rpc = Rpc::new("server/discover")
        .id(json!(301))
        .meta_key("io.modelcontextprotocol/protocolVersion", json!("v999.0.0"))
        .header("mcp-protocol-version", Some("v999.0.0"));
    let reply = expect_error(&server, &rpc, 400, -32022).await;
    assert_eq!(reply["id"], 301);
    assert_eq!(reply["error"]["data"]["requested"], "v999.0.0");
    let discover = server.call(&Rpc::new("server/discover")).await;
    let listed = discover["result"]["supportedVersions"].as_array().unwrap();
    for version in reply["error"]["data"]["supported"].as_array().unwrap() {
        assert!(listed.contains(version), "{version} is not in supportedVersions");
    }
}

#[tokio::test]
async fn unknown_and_removed_methods_are_404() {
    let server = TestServer::everything().await;
    for method in [
        "unknown/method",
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
    ] {
        let reply = expect_error(&server, &Rpc::new(method).id(json!(method)), 404, -32601).await;
        assert_eq!(reply["id"], method);
    }
}

#[tokio::test]
async fn methods_of_unadvertised_capabilities_are_404() {
    let bare = mcp_mrtr::Server::new("bare", "0");
    let server = TestServer::start(bare).await;
    let discover = server.call(&Rpc::new("server/discover")).await;
    assert_eq!(discover["result"]["capabilities"], json!({}));
    for method in ["tools/list", "prompts/list", "resources/list", "completion/complete", "subscriptions/listen"] {
        expect_error(&server, &Rpc::new(method), 404, -32601).await;
    }
}

#[tokio::test]
async fn missing_client_capability_is_32021_with_400() {
    let server = TestServer::everything().await;
    let rpc = Rpc::call_tool("test_missing_capability", json!({})).id(json!(401)).caps(json!({}));
    let reply = expect_error(&server, &rpc, 400, -32021).await;
    assert_eq!(reply["id"], 401);
    assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));
    let with_sampling = Rpc::call_tool("test_missing_capability", json!({})).caps(json!({ "sampling": {} }));
    let asked = server.call(&with_sampling).await["result"].clone();
    assert_eq!(asked["resultType"], "input_required");
    assert_eq!(asked["inputRequests"]["answer"]["method"], "sampling/createMessage");
}

#[tokio::test]
async fn request_errors_travel_on_200() {
    let server = TestServer::everything().await;
    let cases = [
        Rpc::call_tool("no_such_tool", json!({})),
        Rpc::new("tools/list").param("cursor", json!("never-issued")),
        Rpc::new("prompts/get")
            .param("name", json!("test_prompt_with_arguments"))
            .param("arguments", json!({ "arg1": "x" })),
        Rpc::new("prompts/get").param("name", json!("test_simple_prompt")).param("arguments", json!({ "n": 1 })),
        Rpc::call_tool("test_simple_text", json!(["not", "an", "object"])),
    ];
    for rpc in cases {
        expect_error(&server, &rpc, 200, -32602).await;
    }
}

#[tokio::test]
async fn missing_resource_is_invalid_params_with_the_uri() {
    let server = TestServer::everything().await;
    let uri = "test://nonexistent-resource-for-conformance-testing";
    let rpc = Rpc::new("resources/read").param("uri", json!(uri));
    let reply = expect_error(&server, &rpc, 200, -32602).await;
    assert_eq!(reply["error"]["data"]["uri"], uri);
}

#[tokio::test]
async fn malformed_bodies_are_400_without_an_id_when_unreadable() {
    let server = TestServer::everything().await;
    let headers = [("content-type", "application/json"), ("mcp-protocol-version", "2026-07-28")];
    for (body, code, id) in [
        (&b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\""[..], -32700, Value::Null),
        (b"\xff\xfe not utf-8", -32700, Value::Null),
        (b"[]", -32600, Value::Null),
        (b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}", -32600, json!(9)),
        (b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}", -32600, Value::Null),
    ] {
        let response = client::send(server.addr, "POST", &headers, body).await;
        assert_eq!(response.status, 400, "{}", String::from_utf8_lossy(body));
        let reply = response.reply();
        mcp_mrtr_tests::schema::assert_valid_message("server/discover", &reply);
        assert_eq!(reply["error"]["code"], code);
        assert_eq!(reply.get("id").cloned().unwrap_or(Value::Null), id);
    }
}

#[tokio::test]
async fn oversized_bodies_get_413_and_a_clear_error() {
    let server = TestServer::everything().await;
    let padding = "x".repeat(2 * 1024 * 1024);
    let rpc = Rpc::call_tool("test_simple_text", json!({ "padding": padding }));
    let response = server.send(&rpc).await;
    assert_eq!(response.status, 413);
    let reply = response.reply();
    assert_eq!(reply["error"]["code"], -32600);
    assert!(reply["error"]["message"].as_str().unwrap().contains("limit"), "{reply}");
}

#[tokio::test]
async fn requests_with_no_era_are_refused_clearly() {
    let server = TestServer::everything().await;
    let bare = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    let response =
        client::send(server.addr, "POST", &[("content-type", "application/json")], bare.to_string().as_bytes()).await;
    assert_eq!(response.status, 400);
    assert_eq!(response.reply()["error"]["code"], -32020);
    assert_eq!(response.reply()["id"], 3);
}

#[tokio::test]
async fn notifications_are_accepted_and_get_and_delete_are_405() {
    let server = TestServer::everything().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let response =
        client::send(server.addr, "POST", &[("content-type", "application/json")], note.to_string().as_bytes()).await;
    assert_eq!((response.status, response.body.as_str()), (202, ""));
    for method in ["GET", "DELETE"] {
        let response = client::send(server.addr, method, &[("accept", "text/event-stream")], b"").await;
        assert_eq!(response.status, 405, "{method}");
        assert_eq!(response.header("allow"), Some("POST"));
        assert!(response.header("mcp-session-id").is_none());
    }
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_forbidden() {
    let server = TestServer::everything().await;
    let discover = Rpc::new("server/discover");
    let evil =
        discover.clone().header("host", Some("evil.example.com")).header("origin", Some("http://evil.example.com"));
    let forbidden = |response: client::HttpResponse| {
        assert_eq!(response.status, 403, "{}", response.body);
        let reply: Value = serde_json::from_str(&response.body).unwrap();
        assert!(reply.get("id").is_none_or(Value::is_null), "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
    };
    forbidden(server.send(&evil).await);
    let evil_origin = discover.clone().header("origin", Some("http://evil.example.com"));
    forbidden(server.send(&evil_origin).await);
    let local = format!("http://localhost:{}", server.addr.port());
    let good = discover.header("origin", Some(&local));
    assert_eq!(server.send(&good).await.status, 200);
}
