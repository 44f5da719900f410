//! Every event shape AWS sends a function reaches the server (issue 60): a Function URL, an
//! HTTP API on its `$default` stage and on a named one (payloads 2.0 and 1.0), a REST API on
//! a named stage (a `/mcp` resource and a `/{proxy+}` one), a REST API behind a custom
//! domain's base path, and an Application Load Balancer. Each event is the JSON AWS
//! documents for that source, read by `lambda_http`'s own types and given to its adapter in
//! front of our handler, as `lambda_http::run` does for each invocation. Before, a named
//! stage (every REST API has one) and a base path answered 404.

use lambda_http::request::LambdaRequest;
use lambda_http::{Context, LambdaEvent, Service};
use mcp_mrtr::lambda::Lambda;
use mcp_mrtr::prelude::*;
use serde_json::{json, Map, Value};

/// Says hello.
#[tool]
async fn hello() -> Result<String, ToolError> {
    Ok("hello".into())
}

/// Answers `kib` KiB of text.
#[tool]
async fn big(kib: usize) -> Result<String, ToolError> {
    Ok("x".repeat(kib * 1024))
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

fn headers() -> Map<String, Value> {
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
        ("host", "api.example.com"),
    ];
    headers.iter().map(|(name, value)| ((*name).to_owned(), Value::String((*value).to_owned()))).collect()
}

/// An HTTP API's or a Function URL's event (payload 2.0) for `raw_path` on `stage`.
fn http_api(raw_path: &str, stage: &str, route_key: &str, path_parameters: &Value) -> Value {
    json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": "",
        "headers": headers(),
        "pathParameters": path_parameters,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.eu-west-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": { "method": "POST", "path": raw_path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test" },
            "requestId": "id",
            "routeKey": route_key,
            "stage": stage,
            "time": "06/Dec/2026:12:00:00 +0000",
            "timeEpoch": 0
        },
        "body": LIST,
        "isBase64Encoded": false
    })
}

/// A REST API's event (or an HTTP API's payload 1.0): `path` as AWS gives it, for
/// `resource` with `proxy` as its `{proxy+}`, on `stage`.
fn rest_api(path: &str, resource: &str, proxy: Option<&str>, stage: &str, context_path: &str) -> Value {
    let multi: Map<String, Value> = headers().into_iter().map(|(name, value)| (name, json!([value]))).collect();
    json!({
        "resource": resource,
        "path": path,
        "httpMethod": "POST",
        "headers": headers(),
        "multiValueHeaders": multi,
        "queryStringParameters": null,
        "multiValueQueryStringParameters": null,
        "pathParameters": proxy.map(|proxy| json!({ "proxy": proxy })),
        "stageVariables": null,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "resourceId": "r1",
            "resourcePath": resource,
            "path": context_path,
            "httpMethod": "POST",
            "stage": stage,
            "requestId": "id",
            "identity": { "sourceIp": "127.0.0.1", "userAgent": "test" },
            "domainName": "api.example.com",
            "protocol": "HTTP/1.1",
            "requestTimeEpoch": 0
        },
        "body": LIST,
        "isBase64Encoded": false
    })
}

/// An Application Load Balancer's event for `path`.
fn alb(path: &str) -> Value {
    json!({
        "requestContext": { "elb": { "targetGroupArn": "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/mcp/1" } },
        "httpMethod": "POST",
        "path": path,
        "queryStringParameters": {},
        "headers": headers(),
        "body": LIST,
        "isBase64Encoded": false
    })
}

/// The status the function answers `event` with, and its tool names.
async fn invoke(event: Value) -> (u64, Vec<String>) {
    let server = Server::new("events", "1.0.0").tool(hello);
    let handler = Lambda::new().handler(server).expect("a configured function");
    let event: LambdaRequest = serde_json::from_value(event).expect("an event lambda_http reads");
    let mut adapter = lambda_http::Adapter::from(handler);
    let response = adapter.call(LambdaEvent::new(event, Context::default())).await.expect("the function answered");
    let response = serde_json::to_value(response).expect("a response AWS reads");
    let status = response["statusCode"].as_u64().expect("statusCode");
    let body: Value = serde_json::from_str(response["body"].as_str().unwrap_or("null")).unwrap_or(Value::Null);
    let names = body["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|tool| tool["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    (status, names)
}

async fn served(event: Value) {
    let (status, names) = invoke(event).await;
    assert_eq!((status, names), (200, vec!["hello".to_owned()]));
}

#[tokio::test]
async fn a_function_url() {
    served(http_api("/mcp", "$default", "$default", &Value::Null)).await;
}

#[tokio::test]
async fn an_http_api_on_its_default_stage() {
    served(http_api("/mcp", "$default", "ANY /mcp", &Value::Null)).await;
}

#[tokio::test]
async fn an_http_api_on_a_named_stage() {
    served(http_api("/prod/mcp", "prod", "ANY /mcp", &Value::Null)).await;
    served(http_api("/prod/mcp", "prod", "ANY /{proxy+}", &json!({ "proxy": "mcp" }))).await;
}

#[tokio::test]
async fn an_http_api_payload_1_0_on_a_named_stage() {
    served(rest_api("/prod/mcp", "/{proxy+}", Some("mcp"), "prod", "/prod/mcp")).await;
    // Its `$default` route names no resource path: the stage alone is taken off.
    served(rest_api("/prod/mcp", "$default", None, "prod", "/prod/mcp")).await;
}

#[tokio::test]
async fn a_rest_api_on_a_named_stage() {
    served(rest_api("/mcp", "/mcp", None, "prod", "/prod/mcp")).await;
    served(rest_api("/mcp", "/{proxy+}", Some("mcp"), "prod", "/prod/mcp")).await;
}

#[tokio::test]
async fn a_rest_api_behind_a_custom_domain_s_base_path() {
    // `https://api.example.com/tools/mcp`, the base path `tools` mapped to the stage `prod`:
    // AWS puts the base path in the event's path, and lambda_http the stage before it.
    served(rest_api("/tools/mcp", "/{proxy+}", Some("mcp"), "prod", "/tools/mcp")).await;
    served(rest_api("/tools/mcp", "/mcp", None, "prod", "/tools/mcp")).await;
    // A custom domain whose root is mapped to the stage.
    served(rest_api("/mcp", "/{proxy+}", Some("mcp"), "prod", "/mcp")).await;
}

#[tokio::test]
async fn an_application_load_balancer() {
    served(alb("/mcp")).await;
}

#[tokio::test]
async fn a_path_the_endpoint_is_not_at_is_still_not_found() {
    assert_eq!(invoke(http_api("/prod/other", "prod", "ANY /{proxy+}", &json!({ "proxy": "other" }))).await.0, 404);
    assert_eq!(invoke(rest_api("/tools/other", "/{proxy+}", Some("other"), "prod", "/tools/other")).await.0, 404);
    assert_eq!(invoke(rest_api("/mcp/extra", "/mcp/{id}", None, "prod", "/prod/mcp/extra")).await.0, 404);
    assert_eq!(invoke(alb("/prod/mcp")).await.0, 404, "a load balancer has no stage to take off");
}

/// What is logged while `work` runs on a runtime of its own.
fn logged_while(work: impl std::future::Future<Output = ()>) -> String {
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    // A second dispatcher, so a callsite another test's thread reached first is asked again.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(work);
    });
    let log = captured.0.lock().unwrap().clone();
    String::from_utf8(log).unwrap()
}

#[test]
fn behind_a_load_balancer_a_function_says_once_that_it_cannot_tell_clients_apart() {
    let said = |config: mcp_mrtr::http::HttpConfig| {
        let log = logged_while(async move {
            let server = Server::new("events", "1.0.0").tool(hello);
            let handler = Lambda::new().config(config).handler(server).expect("a configured function");
            for _ in 0..3 {
                let event: LambdaRequest = serde_json::from_value(alb("/mcp")).expect("an ALB event");
                let mut adapter = lambda_http::Adapter::from(handler.clone());
                adapter.call(LambdaEvent::new(event, Context::default())).await.expect("the function answered");
            }
        });
        log.lines().filter(|line| line.contains("behind an Application Load Balancer")).count()
    };
    assert_eq!(said(mcp_mrtr::http::HttpConfig::default()), 1, "once per function, at its first ALB request");
    assert_eq!(said(mcp_mrtr::http::HttpConfig::default().trust_forwarded_for(true)), 0);
}

/// `event` carrying a `tools/call` of `big` for `kib` KiB instead of its `tools/list`.
fn calling_big(mut event: Value, kib: usize) -> Value {
    let call = json!({ "jsonrpc": "2.0", "id": "big-1", "method": "tools/call", "params": {
        "name": "big", "arguments": { "kib": kib },
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} }
    } });
    event["body"] = Value::String(call.to_string());
    for headers in ["headers", "multiValueHeaders"] {
        let Some(headers) = event.get_mut(headers).and_then(Value::as_object_mut) else { continue };
        let multi = headers.get("host").is_some_and(Value::is_array);
        let value = |text: &str| if multi { json!([text]) } else { json!(text) };
        headers.insert("mcp-method".into(), value("tools/call"));
        headers.insert("mcp-name".into(), value("big"));
    }
    event
}

/// The function's answer to `event` (with `max_response_bytes` when given), as JSON.
async fn answer(event: Value, max_response_bytes: Option<usize>) -> Value {
    let server = Server::new("events", "1.0.0").tool(big);
    let function = max_response_bytes.map_or_else(Lambda::new, |max| Lambda::new().max_response_bytes(max));
    let handler = function.handler(server).expect("a configured function");
    let event: LambdaRequest = serde_json::from_value(event).expect("an event lambda_http reads");
    let mut adapter = lambda_http::Adapter::from(handler);
    let response = adapter.call(LambdaEvent::new(event, Context::default())).await.expect("the function answered");
    let response = serde_json::to_value(response).expect("a response AWS reads");
    assert_eq!(response["statusCode"], 200, "{response}");
    serde_json::from_str(response["body"].as_str().expect("a body")).expect("JSON")
}

#[tokio::test]
async fn an_answer_aws_would_not_deliver_is_an_error_the_client_reads() {
    // 1.2 MB: within a Function URL's 6 MB, over an ALB's 1 MB.
    let through_url = answer(calling_big(http_api("/mcp", "$default", "$default", &Value::Null), 1200), None).await;
    assert_eq!(through_url["result"]["content"][0]["text"].as_str().map(str::len), Some(1200 * 1024));

    let through_alb = answer(calling_big(alb("/mcp"), 1200), None).await;
    assert_eq!((&through_alb["id"], &through_alb["error"]["code"]), (&json!("big-1"), &json!(-32603)), "{through_alb}");
    let message = through_alb["error"]["message"].as_str().unwrap();
    assert!(message.contains("1000000 bytes, an Application Load Balancer's limit"), "{message}");

    // A bound of the function's own.
    let bounded =
        answer(calling_big(http_api("/mcp", "$default", "$default", &Value::Null), 64), Some(32 * 1024)).await;
    assert!(bounded["error"]["message"]
        .as_str()
        .unwrap()
        .contains("32768 bytes, the function's Lambda::max_response_bytes"));
}
