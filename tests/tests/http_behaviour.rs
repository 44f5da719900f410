//! What a client sees from the `everything` fixture over real HTTP: results stamped as
//! 2026-07-28 requires, notifications on the request's own SSE stream, concurrency, and
//! cancellation by closing the stream.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_mrtr::{protocol::Tool, Server, ToolError};
use mcp_mrtr_tests::client::{self, TIMEOUT};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::DropFlag;
use serde_json::{json, Map, Value};
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn discover_is_stamped_and_matches_what_is_served() {
    let server = TestServer::everything().await;
    let result = server.call(&Rpc::new("server/discover")).await["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-mrtr-everything");
    let caps = result["capabilities"].as_object().unwrap();
    for key in ["tools", "prompts", "resources", "completions", "logging"] {
        assert!(caps.contains_key(key), "{key} not advertised");
    }
}

#[tokio::test]
async fn lists_and_reads_carry_cache_hints_and_calls_do_not() {
    let server = TestServer::everything().await;
    for method in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"] {
        let result = &server.call(&Rpc::new(method)).await["result"];
        assert_eq!((result["resultType"].as_str(), result["ttlMs"].as_u64()), (Some("complete"), Some(0)), "{method}");
    }
    let read = server.call(&Rpc::new("resources/read").param("uri", json!("test://static-text"))).await;
    assert_eq!(read["result"]["cacheScope"], "private");
    assert_eq!(read["result"]["contents"][0]["text"], "This is the content of the static text resource.");
    let call = server.call(&Rpc::call_tool("test_simple_text", json!({}))).await;
    assert!(call["result"].get("ttlMs").is_none());
    assert_eq!(call["result"]["resultType"], "complete");
}

#[tokio::test]
async fn configured_cache_hints_are_not_applied_to_retries() {
    let public = mcp_mrtr_examples::everything::server()
        .cache_hints(mcp_mrtr::protocol::CacheHints { ttl_ms: 60_000, scope: mcp_mrtr::protocol::CacheScope::Public });
    let server = TestServer::start(public).await;
    let read = || Rpc::new("resources/read").param("uri", json!("test://static-text"));
    let first = server.call(&read()).await;
    assert_eq!(
        (first["result"]["ttlMs"].as_u64(), first["result"]["cacheScope"].as_str()),
        (Some(60_000), Some("public"))
    );
    let retry = server.call(&read().param("inputResponses", json!({}))).await;
    assert_eq!((retry["result"]["ttlMs"].as_u64(), retry["result"]["cacheScope"].as_str()), (Some(0), Some("private")));
}

#[tokio::test]
async fn tools_return_each_content_type() {
    let server = TestServer::everything().await;
    let call = |name: &str| {
        let rpc = Rpc::call_tool(name, json!({}));
        let server = &server;
        async move { server.call(&rpc).await }
    };
    assert_eq!(call("test_image_content").await["result"]["content"][0]["mimeType"], "image/png");
    assert_eq!(call("test_audio_content").await["result"]["content"][0]["mimeType"], "audio/wav");
    let embedded = call("test_embedded_resource").await;
    assert_eq!(embedded["result"]["content"][0]["resource"]["uri"], "test://embedded-resource");
    let mixed = call("test_multiple_content_types").await;
    let types: Vec<_> = mixed["result"]["content"].as_array().unwrap().iter().map(|c| c["type"].clone()).collect();
    assert_eq!(types, [json!("text"), json!("image"), json!("resource")]);
    let failed = call("test_error_handling").await;
    assert_eq!(failed["result"]["isError"], true);
    assert!(failed.get("error").is_none());
}

#[tokio::test]
async fn prompts_templates_and_completion_answer() {
    let server = TestServer::everything().await;
    let prompt = Rpc::new("prompts/get")
        .param("name", json!("test_prompt_with_arguments"))
        .param("arguments", json!({ "arg1": "testValue1", "arg2": "testValue2" }));
    let text = server.call(&prompt).await["result"]["messages"][0]["content"]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("testValue1") && text.contains("testValue2"), "{text}");
    let read = Rpc::new("resources/read").param("uri", json!("test://template/123/data"));
    let contents = server.call(&read).await["result"]["contents"][0].clone();
    assert_eq!(contents["mimeType"], "application/json");
    assert!(contents["text"].as_str().unwrap().contains("123"));
    let complete = Rpc::new("completion/complete")
        .param("ref", json!({ "type": "ref/prompt", "name": "test_prompt_with_arguments" }))
        .param("argument", json!({ "name": "arg1", "value": "par" }));
    let completion = server.call(&complete).await["result"]["completion"].clone();
    assert_eq!(completion["values"], json!(["paris", "park", "party"]));
}

#[tokio::test]
async fn progress_streams_as_sse_before_the_result() {
    let server = TestServer::everything().await;
    let rpc = Rpc::call_tool("test_tool_with_progress", json!({}))
        .id(json!(9))
        .meta_key("progressToken", json!("progress-test-1"));
    let response = server.send(&rpc).await;
    assert!(response.is_sse(), "{:?}", response.headers);
    assert_eq!(response.header("x-accel-buffering"), Some("no"));
    let messages = response.messages();
    let progress: Vec<f64> = messages[..messages.len() - 1]
        .iter()
        .map(|m| {
            assert_eq!(m["method"], "notifications/progress");
            assert_eq!(m["params"]["progressToken"], "progress-test-1");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    assert_eq!(messages.last().unwrap()["id"], 9);
    assert!(response.body.lines().filter(|l| l.starts_with("data:")).all(|l| !l[5..].trim().contains('\n')));
}

#[tokio::test]
async fn no_token_no_progress_and_json_only_clients_get_json() {
    let server = TestServer::everything().await;
    let silent = server.send(&Rpc::call_tool("test_tool_with_progress", json!({}))).await;
    assert!(!silent.is_sse());
    let json_only = Rpc::call_tool("test_tool_with_progress", json!({}))
        .meta_key("progressToken", json!(1))
        .header("accept", Some("application/json"));
    let response = server.send(&json_only).await;
    assert!(!response.is_sse());
    assert_eq!(response.reply()["result"]["content"][0]["text"], "Progress complete");
}

#[tokio::test]
async fn logs_reach_only_requests_that_opt_in_at_their_level() {
    let server = TestServer::everything().await;
    let rpc = || Rpc::call_tool("test_logging_tool", json!({}));
    let quiet = server.send(&rpc()).await;
    assert_eq!(quiet.messages().len(), 1);
    let level = "io.modelcontextprotocol/logLevel";
    let loud = server.send(&rpc().meta_key(level, json!("info"))).await;
    let logs: Vec<Value> = loud.messages().into_iter().filter(|m| m["method"] == "notifications/message").collect();
    assert_eq!(logs.len(), 3);
    assert_eq!(logs[0]["params"]["data"], "Tool execution started");
    let above = server.send(&rpc().meta_key(level, json!("error"))).await;
    assert_eq!(above.messages().len(), 1);
    let invalid = server.send(&rpc().meta_key(level, json!("chatty"))).await;
    assert_eq!(invalid.reply()["error"]["code"], -32602);
}

#[tokio::test]
async fn concurrent_requests_all_succeed() {
    let server = Arc::new(TestServer::everything().await);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..24 {
        let server = server.clone();
        tasks.spawn(async move {
            let rpc = if i % 2 == 0 {
                Rpc::new("tools/list").id(json!(1000 + i))
            } else {
                Rpc::call_tool("test_tool_with_progress", json!({}))
                    .id(json!(1000 + i))
                    .meta_key("progressToken", json!(i))
            };
            (i, server.call(&rpc).await)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (i, reply) = joined.unwrap();
        assert_eq!(reply["id"], 1000 + i);
        assert_eq!(reply["result"]["resultType"], "complete");
    }
}

#[tokio::test]
async fn closing_the_stream_cancels_the_handler_and_the_server_carries_on() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let slow = Tool::new("slow").description("Reports progress, then waits a long time").handler(
        move |ctx, _: Map<String, Value>| {
            let guard = DropFlag(flag.clone());
            async move {
                let _guard = guard;
                ctx.progress(1.0).message("started").await;
                tokio::time::sleep(Duration::from_mins(1)).await;
                Ok::<_, ToolError>("finished")
            }
        },
    );
    let server = TestServer::start(Server::new("slow", "0").tool(slow)).await;
    let rpc = Rpc::call_tool("slow", json!({})).meta_key("progressToken", json!("t"));
    let headers = rpc.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let mut stream = client::open(server.addr, &headers, &rpc.body()).await;
    let mut seen = Vec::new();
    tokio::time::timeout(TIMEOUT, async {
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&seen).contains("notifications/progress") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "stream ended before the first notification");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("the first notification arrived");
    assert!(!dropped.load(Ordering::SeqCst));
    drop(stream);
    tokio::time::timeout(TIMEOUT, async {
        while !dropped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the handler was dropped after the client went away");
    let reply = server.call(&Rpc::new("server/discover")).await;
    assert_eq!(reply["result"]["resultType"], "complete");
}

#[tokio::test]
async fn a_panicking_handler_fails_its_request_not_the_server() {
    let boom = Tool::new("boom").description("Panics").handler(|_ctx, _: Map<String, Value>| async {
        let text: &str = std::hint::black_box(None).expect("handler bug");
        Ok::<_, ToolError>(text)
    });
    let server = TestServer::start(Server::new("boom", "0").tool(boom)).await;
    let reply = server.call(&Rpc::call_tool("boom", json!({}))).await;
    assert_eq!(reply["error"]["code"], -32603);
    assert_eq!(server.call(&Rpc::new("server/discover")).await["result"]["resultType"], "complete");
}
