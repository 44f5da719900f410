//! Mounting another server's tools (`mcp_mrtr::mount`): `everything` as the upstream, a
//! gateway of this crate in front of it, both over real HTTP on loopback, and the crate's
//! client calling the gateway in either era. The upstream's questions cross the hop as the
//! gateway's rounds, its state sealed inside the gateway's.

use std::sync::Arc;

use futures_util::StreamExt as _;
use mcp_mrtr::catalog::Subscriptions;
use mcp_mrtr::client::{Client, ClientError};
use mcp_mrtr::mount::{Mount, UpstreamErrors};
use mcp_mrtr::protocol::Tool;
use mcp_mrtr::{ErrorCode, Server, ToolError};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::scripted::{self, Shown};
use serde_json::{json, Map, Value};

/// The gateway: a tool of its own, and the upstream's under `up_`.
async fn gateway(upstream: &TestServer, mount: impl FnOnce(Mount) -> Mount) -> TestServer {
    let client = Client::http(upstream.url()).connect().await.unwrap();
    let mounted = mount(Mount::new(client).prefix("up_")).load().await.unwrap();
    let own = Tool::new("own").handler(|_ctx, _args: Map<String, Value>| async { Ok::<_, ToolError>("mine") });
    let server = Server::new("gateway", "1.0.0").subscriptions(Subscriptions::default()).tool(own).mount(mounted);
    TestServer::start(server).await
}

#[tokio::test]
async fn an_upstream_s_tools_are_served_beside_the_gateway_s_own() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| {
        mount.only(["greet", "test_simple_text", "test_simple_prompt"]).rename("greet", "hello")
    })
    .await;
    let client = Client::http(gateway.url()).connect().await.unwrap();
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|tool| tool.name).collect();
    // The upstream's tools in the upstream's order, after the gateway's own.
    assert_eq!(names, ["own", "up_test_simple_text", "up_hello"]);
    assert_eq!(client.call_tool("up_hello", json!({"name": "Ada"})).await.unwrap().all_text(), "Hello, Ada!");
    assert_eq!(client.call_tool("own", json!({})).await.unwrap().all_text(), "mine");
    // The upstream's prompts under the prefix too, its resources at their own URIs.
    let prompts: Vec<String> = client.list_prompts().await.unwrap().into_iter().map(|prompt| prompt.name).collect();
    assert_eq!(prompts, ["up_test_simple_prompt"]);
    assert!(!client.get_prompt("up_test_simple_prompt", json!({})).await.unwrap().messages.is_empty());
    let direct = Client::http(upstream.url()).connect().await.unwrap();
    let resources = client.list_resources().await.unwrap();
    assert_eq!(resources.len(), direct.list_resources().await.unwrap().len());
    let uri = &resources[0].uri;
    let (through, at_source) = (client.read_resource(uri).await.unwrap(), direct.read_resource(uri).await.unwrap());
    assert_eq!(serde_json::to_value(through.contents).unwrap(), serde_json::to_value(at_source.contents).unwrap());
    // A template's reads reach the upstream at the URI they asked for.
    assert_eq!(
        client.list_resource_templates().await.unwrap().len(),
        direct.list_resource_templates().await.unwrap().len()
    );
    let uri = "test://template/a%20b/data";
    let (through, at_source) = (client.read_resource(uri).await.unwrap(), direct.read_resource(uri).await.unwrap());
    assert_eq!(serde_json::to_value(through.contents).unwrap(), serde_json::to_value(at_source.contents).unwrap());

    // A tool the upstream does not list cannot be mounted.
    let upstream_client = Client::http(upstream.url()).connect().await.unwrap();
    let error = Mount::new(upstream_client).only(["nope"]).load().await.unwrap_err();
    assert!(matches!(error, ClientError::Config(_)), "{error}");
}

#[tokio::test]
async fn the_upstream_s_questions_are_asked_as_the_gateway_s_rounds_in_either_era() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    for versions in [["2026-07-28"], ["2025-11-25"]] {
        let shown = Shown::default();
        let client =
            Client::http(gateway.url()).versions(versions).answers(scripted::answers(&shown)).connect().await.unwrap();
        let result = client.call_tool("up_test_input_required_result_multi_round", json!({})).await.unwrap();
        assert_eq!(result.all_text(), "Ada likes green", "{versions:?}");
        let result = client.call_tool("up_test_input_required_result_sampling", json!({})).await.unwrap();
        assert!(result.all_text().contains("Paris"), "{versions:?}: {}", result.all_text());
        // A prompt asks across the hop the same way.
        let prompt = client.get_prompt("up_test_input_required_result_prompt", json!({})).await.unwrap();
        assert!(serde_json::to_string(&prompt.messages).unwrap().contains("the diff"), "{versions:?}");
        assert_eq!(shown.lock().unwrap().len(), 3, "{versions:?}");
    }
}

#[tokio::test]
async fn the_upstream_s_state_travels_sealed_and_a_tampered_state_is_refused() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    let first = gateway.call(&Rpc::call_tool("up_test_input_required_result_elicitation", json!({}))).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    // The upstream's question, under the upstream's own key.
    let keys: Vec<&String> = result["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["user_name"], "{first}");
    let state = result["requestState"].as_str().unwrap();
    // Tampered: refused by the gateway, which opens its own state before anything else.
    let mut tampered = state.to_owned();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let key = result["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answers = json!({ key.clone(): {"action": "accept", "content": {"name": "Ada"}} });
    let retry = Rpc::call_tool("up_test_input_required_result_elicitation", json!({}))
        .param("inputResponses", answers.clone())
        .param("requestState", json!(tampered));
    let refused = gateway.call(&retry).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // Presented whole, it completes the upstream's call.
    let retry = Rpc::call_tool("up_test_input_required_result_elicitation", json!({}))
        .param("inputResponses", answers)
        .param("requestState", json!(state));
    let done = gateway.call(&retry).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!", "{done}");
}

#[tokio::test]
async fn the_caller_s_capabilities_and_the_upstream_s_errors_reach_the_other_side() {
    let upstream = TestServer::everything().await;
    let gateway_by_code = gateway(&upstream, |mount| mount).await;
    // A caller that answers nothing is refused by the upstream, which is told so.
    let bare = Client::http(gateway_by_code.url()).connect().await.unwrap();
    let error = bare.call_tool("up_test_input_required_result_elicitation", json!({})).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY), "{error}");
    // A tool's failure is a result; the upstream's protocol error keeps its code, not its
    // text, unless the operator says otherwise.
    assert!(bare.call_tool("up_test_error_handling", json!({})).await.unwrap().is_error());
    let error = bare.call_tool("up_slow_compute", json!({"seconds": -1})).await.unwrap_err();
    let rpc = error.rpc().expect("the upstream's error");
    assert_eq!(
        (rpc.code(), rpc.message()),
        (ErrorCode::INVALID_PARAMS, "the server behind up_slow_compute refused the request")
    );
    let gateway_whole = gateway(&upstream, |mount| mount.upstream_errors(UpstreamErrors::Whole)).await;
    let whole = Client::http(gateway_whole.url()).connect().await.unwrap();
    let error = whole.call_tool("up_slow_compute", json!({"seconds": -1})).await.unwrap_err();
    assert!(error.rpc().unwrap().message().contains("seconds must be between"), "{error}");
    // A call the upstream would make a task ends in its request: the upstream is offered none.
    let result = whole.call_tool("up_slow_compute", json!({"seconds": 0.1})).await.unwrap();
    assert_eq!(result.all_text(), "slow_compute finished after 0.1s");
}

#[tokio::test]
async fn the_upstream_s_progress_is_relayed_to_a_caller_that_asked_for_it() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    let client = Client::http(gateway.url()).connect().await.unwrap();
    let (call, progress) = client.call_tool("up_test_tool_with_progress", json!({})).with_progress();
    let updates = progress.map(|update| (update.progress, update.total)).collect::<Vec<_>>();
    let (result, updates) = tokio::join!(std::future::IntoFuture::into_future(call), updates);
    assert_eq!(result.unwrap().all_text(), "Progress complete");
    assert_eq!(updates, [(0.0, Some(100.0)), (50.0, Some(100.0)), (100.0, Some(100.0))]);
}

#[tokio::test]
async fn an_upstream_s_list_changes_reach_the_gateway_s_listeners_as_its_own() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    let client = Client::http(gateway.url()).connect().await.unwrap();
    let mut changes = client.listen(mcp_mrtr::client::Listen::new().tools()).await.unwrap();
    let dynamic = |tools: Vec<Tool>| tools.iter().any(|tool| tool.name == "up_test_dynamic_tool");
    assert!(!dynamic(client.list_tools().await.unwrap()));
    // The trigger is the upstream's: the upstream's list changes, and the gateway follows.
    client.call_tool("up_test_trigger_tool_change", json!({})).await.unwrap();
    let change = tokio::time::timeout(std::time::Duration::from_secs(10), changes.next()).await.unwrap();
    assert_eq!(change, Some(mcp_mrtr::client::Change::Tools));
    // The gateway may announce the removal and the addition apart: wait for the new list.
    let mut seen = false;
    for _ in 0..50 {
        if dynamic(client.list_tools().await.unwrap()) {
            seen = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(seen, "the upstream's new tool is mounted");
    assert_eq!(client.call_tool("up_test_dynamic_tool", json!({})).await.unwrap().all_text(), "still here");
}

#[tokio::test]
async fn a_mounted_prompt_s_arguments_are_completed_by_the_upstream() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    let client = Client::http(gateway.url()).connect().await.unwrap();
    assert!(client.server().capabilities.completions.is_some());
    let complete =
        |name: &str| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "arg1", "value": "pa"}});
    let completed = client.request("completion/complete", complete("up_test_prompt_with_arguments")).await.unwrap();
    assert_eq!(completed["completion"]["values"], json!(["paris", "park", "party"]));
    // Under the upstream's own name, the prompt is not the gateway's.
    let error = client.request("completion/complete", complete("test_prompt_with_arguments")).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::INVALID_PARAMS), "{error}");
}

#[tokio::test]
async fn a_changed_upstream_list_never_takes_a_name_the_gateway_holds() {
    let upstream = TestServer::everything().await;
    let client = Client::http(upstream.url()).connect().await.unwrap();
    let mounted = Mount::new(client).load().await.unwrap();
    // The gateway's own tool has the name the upstream's trigger adds and removes.
    let own =
        Tool::new("test_dynamic_tool").handler(|_ctx, _args: Map<String, Value>| async { Ok::<_, ToolError>("mine") });
    let server = Server::new("gateway", "1.0.0").subscriptions(Subscriptions::default()).tool(own).mount(mounted);
    let gateway = TestServer::start(server).await;
    let client = Client::http(gateway.url()).connect().await.unwrap();
    let mut changes = client.listen(mcp_mrtr::client::Listen::new().tools()).await.unwrap();
    for _ in 0..2 {
        // Added upstream (refused here, the name is taken), then removed upstream.
        client.call_tool("test_trigger_tool_change", json!({})).await.unwrap();
        let change = tokio::time::timeout(std::time::Duration::from_secs(10), changes.next()).await.unwrap();
        assert_eq!(change, Some(mcp_mrtr::client::Change::Tools));
    }
    assert_eq!(client.call_tool("test_dynamic_tool", json!({})).await.unwrap().all_text(), "mine");
}

#[tokio::test]
async fn the_upstream_s_log_messages_reach_a_caller_that_asked_for_them() {
    let upstream = TestServer::everything().await;
    let client = Client::http(upstream.url()).connect().await.unwrap();
    let mounted = Mount::new(client).load().await.unwrap();
    let gateway = TestServer::start(Server::new("gateway", "1.0.0").logging(true).mount(mounted)).await;
    let asked =
        Rpc::call_tool("test_tool_with_logging", json!({})).meta_key("io.modelcontextprotocol/logLevel", json!("info"));
    let response = gateway.send(&asked).await;
    assert!(response.body.contains("notifications/message"), "{}", response.body);
    assert!(response.body.contains("Tool processing data"), "{}", response.body);
    // A caller that set no level hears none.
    let quiet = gateway.send(&Rpc::call_tool("test_tool_with_logging", json!({}))).await;
    assert!(!quiet.body.contains("notifications/message"), "{}", quiet.body);
    assert!(quiet.body.contains("Logging test completed"), "{}", quiet.body);
}

/// An upstream whose `busy` tool takes 200 ms and counts how many run at once.
async fn counting_upstream() -> (TestServer, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen = most.clone();
    let busy = Tool::new("busy").handler(move |_ctx, _args: Map<String, Value>| {
        let (running, most) = (running.clone(), most.clone());
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            running.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, ToolError>("done")
        }
    });
    (TestServer::start(Server::new("upstream", "1.0.0").tool(busy)).await, seen)
}

#[tokio::test]
async fn a_mount_has_at_most_its_limit_of_requests_in_flight_to_the_upstream() {
    for (limit, most) in [(Some(1), 1), (None, 4)] {
        let (upstream, seen) = counting_upstream().await;
        let gateway = gateway(&upstream, |mount| match limit {
            Some(limit) => mount.max_in_flight(limit),
            None => mount,
        })
        .await;
        let client = Client::http(gateway.url()).connect().await.unwrap();
        let calls = (0..4).map(|_| std::future::IntoFuture::into_future(client.call_tool("up_busy", json!({}))));
        for result in futures_util::future::join_all(calls).await {
            assert_eq!(result.unwrap().all_text(), "done");
        }
        // Past the limit a call waits its turn; under it, the four overlap.
        let seen = seen.load(std::sync::atomic::Ordering::SeqCst);
        if limit.is_some() {
            assert_eq!(seen, most, "{limit:?}");
        } else {
            assert!(seen > 1 && seen <= most, "{seen}");
        }
    }
}

#[tokio::test]
async fn an_upstream_s_list_change_is_one_change_of_the_gateway_s() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    let client = Client::http(gateway.url()).connect().await.unwrap();
    let mut changes = client.listen(mcp_mrtr::client::Listen::new().tools()).await.unwrap();
    for _ in 0..2 {
        client.call_tool("up_test_trigger_tool_change", json!({})).await.unwrap();
        let first = tokio::time::timeout(std::time::Duration::from_secs(10), changes.next()).await.unwrap();
        assert_eq!(first, Some(mcp_mrtr::client::Change::Tools));
        // The mount's routes are swapped in one edit: its listeners hear of it once (not
        // once per route removed and added, each sending every client to list again),
        // and a call meanwhile finds the old route or the new, never neither.
        let more = tokio::time::timeout(std::time::Duration::from_millis(500), changes.next()).await;
        assert!(more.is_err(), "a second change: {more:?}");
        let greeted = client.call_tool("up_greet", json!({"name": "Ada"})).await.unwrap();
        assert_eq!(greeted.all_text(), "Hello, Ada!");
    }
}

/// A TCP proxy on loopback in front of `upstream` whose connections all close, mid-stream,
/// once `cut` is set.
async fn proxy(upstream: std::net::SocketAddr, cut: Arc<tokio::sync::Notify>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let cut = cut.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await else { return };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    () = cut.notified() => {}
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn an_upstream_that_goes_away_mid_call_fails_the_call_and_leaves_nothing_waiting() {
    let upstream = TestServer::everything().await;
    let cut = Arc::new(tokio::sync::Notify::new());
    let through = proxy(upstream.addr, cut.clone()).await;
    let client = Client::http(format!("http://{through}/mcp")).connect().await.unwrap();
    let mounted = Mount::new(client).prefix("up_").load().await.unwrap();
    let gateway = TestServer::start(Server::new("gateway", "1.0.0").mount(mounted)).await;
    let caller = Client::http(gateway.url()).tasks(false).connect().await.unwrap();
    let call = std::future::IntoFuture::into_future(caller.call_tool("up_slow_compute", json!({"seconds": 30})));
    let cutting = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        cut.notify_waiters();
    };
    let (ended, ()) = tokio::join!(tokio::time::timeout(std::time::Duration::from_secs(10), call), cutting);
    let error = ended.expect("the call ends when its upstream goes away, not when it would have").unwrap_err();
    let rpc = error.rpc().expect("a JSON-RPC error");
    assert_eq!(rpc.code(), ErrorCode::INTERNAL_ERROR, "{rpc:?}");
    assert_eq!(rpc.message(), "the server behind up_slow_compute could not be reached");
    // The mount reconnects for the next call.
    assert_eq!(caller.call_tool("up_greet", json!({"name": "Ada"})).await.unwrap().all_text(), "Hello, Ada!");
}
