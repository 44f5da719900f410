//! Tool parameters mirrored into `Mcp-Param-*` headers (SEP-2243), over HTTP on
//! 127.0.0.1: the schema carries `x-mcp-header`, and the server refuses a call whose
//! header is missing, malformed or disagrees with the argument (400, `-32020`).

use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use serde_json::{json, Value};

/// Routes a job to a region.
#[tool]
async fn route_job(
    /// Where to run.
    #[mcp(header = "Region")]
    region: String,
    /// How many workers.
    #[mcp(header = "Workers")]
    workers: Option<u32>,
    /// Free text, not mirrored.
    note: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!("{region}/{workers:?}/{note:?}"))
}

async fn status_and_code(server: &TestServer, arguments: Value, headers: &[(&str, Option<&str>)]) -> (u16, Value) {
    let rpc = headers.iter().fold(Rpc::call_tool("route_job", arguments), |rpc, (n, v)| rpc.header(n, *v));
    let response = server.send(&rpc).await;
    (response.status, response.reply()["error"]["code"].clone())
}

#[tokio::test]
async fn the_schema_names_the_headers() {
    let server = TestServer::start(Server::new("h", "0").tool(route_job)).await;
    let listed = server.call(&Rpc::new("tools/list")).await;
    let properties = &listed["result"]["tools"][0]["inputSchema"]["properties"];
    assert_eq!(properties["region"]["x-mcp-header"], "Region");
    assert_eq!(properties["workers"]["x-mcp-header"], "Workers");
    assert!(properties["note"].get("x-mcp-header").is_none());
}

#[tokio::test]
async fn headers_must_match_the_arguments() {
    let server = TestServer::start(Server::new("h", "0").tool(route_job)).await;
    let args = json!({ "region": "eu west", "workers": 3 });
    let region = Some("=?base64?ZXUgd2VzdA==?=");
    let both = [("Mcp-Param-Region", region), ("Mcp-Param-Workers", Some("3"))];
    assert_eq!(status_and_code(&server, args.clone(), &both).await, (200, Value::Null));
    let refused = (400, json!(-32020));
    for headers in [
        vec![("Mcp-Param-Workers", Some("3"))],
        vec![("Mcp-Param-Region", Some("eu-west")), ("Mcp-Param-Workers", Some("3"))],
        vec![("Mcp-Param-Region", Some("=?base64?ZXUgd2VzdA?=")), ("Mcp-Param-Workers", Some("3"))],
        vec![("Mcp-Param-Region", region), ("Mcp-Param-Workers", Some("three"))],
        vec![("Mcp-Param-Region", region)],
    ] {
        assert_eq!(status_and_code(&server, args.clone(), &headers).await, refused, "{headers:?}");
    }
    // The error says what to send: the argument as the header carries it.
    for (arguments, says) in [
        (args.clone(), "send `Mcp-Param-Region: eu west`"),
        (json!({ "region": "é", "workers": 3 }), "send `Mcp-Param-Region: =?base64?w6k=?=`"),
    ] {
        let rpc = Rpc::call_tool("route_job", arguments).header("Mcp-Param-Workers", Some("3"));
        let message = server.send(&rpc).await.reply()["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains(says), "{message}");
    }
    // Raw UTF-8 in the header is refused with the base64 form to send instead.
    let raw = Rpc::call_tool("route_job", json!({ "region": "é", "workers": 3 }))
        .header("Mcp-Param-Region", Some("é"))
        .header("Mcp-Param-Workers", Some("3"));
    let message = server.send(&raw).await.reply()["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("send `Mcp-Param-Region: =?base64?w6k=?=`"), "{message}");
    // An absent optional argument expects no header, and refuses one.
    let only_region = json!({ "region": "north" });
    let fine = status_and_code(&server, only_region.clone(), &[("Mcp-Param-Region", Some("north"))]).await;
    assert_eq!(fine, (200, Value::Null));
    let stray = [("Mcp-Param-Region", Some("north")), ("Mcp-Param-Workers", Some("2"))];
    assert_eq!(status_and_code(&server, only_region, &stray).await, refused);
}
