//! What reaches a mounted server for whom (`Mount::upstream_token`): a gateway that
//! authenticates its callers (a `Bearer <name>` middleware), an upstream that shows the
//! `Authorization` it received, both over real HTTP on loopback.

use mcp_mrtr::client::{Client, ClientError};
use mcp_mrtr::mount::Mount;
use mcp_mrtr::prelude::*;
use mcp_mrtr::protocol::Tool;
use mcp_mrtr::{Caller, ErrorCode};
use mcp_mrtr_tests::harness::{bearer_names_caller, TestServer};
use serde_json::{json, Map, Value};

/// An upstream whose `whoami` answers with the `Authorization` its request carried.
async fn upstream() -> TestServer {
    let whoami = Tool::new("whoami").handler(|ctx: Ctx, _args: Map<String, Value>| async move {
        let seen =
            ctx.http_headers().and_then(|headers| headers.get("authorization")?.to_str().ok().map(str::to_owned));
        Ok::<_, ToolError>(seen.unwrap_or_else(|| "none".into()))
    });
    TestServer::start(Server::new("upstream", "1.0.0").tool(whoami)).await
}

/// A gateway whose mount client sends `gateway-key`, and maps callers with `mount`.
async fn gateway(upstream: &TestServer, mount: impl FnOnce(Mount) -> Mount) -> TestServer {
    let client = Client::http(upstream.url()).bearer_token("gateway-key").connect().await.unwrap();
    let mounted = mount(Mount::new(client)).load().await.unwrap();
    let app = Server::new("gateway", "1.0.0")
        .mount(mounted)
        .into_router(mcp_mrtr::http::HttpConfig::default())
        .unwrap()
        .layer(axum::middleware::from_fn(bearer_names_caller));
    TestServer::start_router(app, std::future::pending()).await
}

async fn whoami(gateway: &TestServer, caller: Option<&str>) -> Result<String, ClientError> {
    let client = match caller {
        Some(name) => Client::http(gateway.url()).bearer_token(name),
        None => Client::http(gateway.url()),
    };
    Ok(client.connect().await?.call_tool("whoami", json!({})).await?.all_text())
}

#[tokio::test]
async fn each_caller_reaches_the_upstream_with_the_token_the_operator_maps_it_to() {
    let upstream = upstream().await;
    let gateway = gateway(&upstream, |mount| {
        mount.upstream_token(|caller: Option<Caller>| async move {
            Ok(caller.filter(|caller| caller.id() != "guest").map(|caller| format!("for-{}", caller.id())))
        })
    })
    .await;
    // The caller's own token never reaches the upstream: the one mapped from it does.
    assert_eq!(whoami(&gateway, Some("alice")).await.unwrap(), "Bearer for-alice");
    assert_eq!(whoami(&gateway, Some("bob")).await.unwrap(), "Bearer for-bob");
    // Mapped to none, or no caller at all: the mount client's own.
    assert_eq!(whoami(&gateway, Some("guest")).await.unwrap(), "Bearer gateway-key");
    assert_eq!(whoami(&gateway, None).await.unwrap(), "Bearer gateway-key");
}

#[tokio::test]
async fn without_a_mapping_every_caller_is_the_gateway_and_a_failed_mapping_fails_the_call() {
    let upstream = upstream().await;
    let plain = gateway(&upstream, |mount| mount).await;
    assert_eq!(whoami(&plain, Some("alice")).await.unwrap(), "Bearer gateway-key");
    let failing = gateway(&upstream, |mount| {
        mount.upstream_token(|_| async { Err("the identity provider at idp.internal is down".into()) })
    })
    .await;
    let error = whoami(&failing, Some("alice")).await.unwrap_err();
    let rpc = error.rpc().expect("a JSON-RPC error");
    assert_eq!(rpc.code(), ErrorCode::INTERNAL_ERROR);
    // The operator's text stays in the gateway's log.
    assert!(!rpc.message().contains("idp.internal"), "{rpc:?}");
}
