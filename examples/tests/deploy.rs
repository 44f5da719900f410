//! The deploy example (issue 51): a person approves the change in the review app (or in a
//! form where the host renders no apps); the roll-out runs once; declining deploys
//! nothing; the app-only tools answer only clients with apps. In process, through the
//! test client; `.ci/browser.sh` runs the same flows in Chromium.

use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr_examples::deploy;
use serde_json::{json, Value};

fn apps() -> Value {
    json!({
        "elicitation": { "form": {} },
        "extensions": { "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html;profile=mcp-app"], "elicitation": {} } }
    })
}

async fn status(client: &TestClient, service: &str) -> Value {
    let round = client.call_tool("service_status", json!({ "service": service })).start().await;
    round.complete().unwrap_or_else(|| panic!("{round:?}"))["structuredContent"].clone()
}

#[tokio::test]
async fn approved_in_the_app_the_roll_out_runs_once() {
    let client = TestClient::new(deploy::server()).with_capabilities(apps());
    let mut call = client.call_tool("deploy", json!({ "service": "checkout", "version": "2.4.0" }));
    let asked = call.start().await;
    let request = serde_json::to_value(asked.request("approval").unwrap()).unwrap();
    assert_eq!(request["params"]["_meta"]["ui"]["resourceUri"], deploy::REVIEW);
    let plan = &request["params"]["_meta"]["mcp-mrtr/appContext"];
    assert_eq!((&plan["from"], &plan["to"], &plan["replicas"]), (&json!("2.3.0"), &json!("2.4.0"), &json!(3)));
    // The plan the app shows is the one its app-only tool gives.
    let planned = client.call_tool("plan_deploy", json!({ "service": "checkout", "version": "2.4.0" })).start().await;
    assert_eq!(&planned.complete().unwrap()["structuredContent"], plan);

    let done = call.answer([("approval", answer::accept(json!({ "approve": true })))]).await;
    let deployed = &done.complete().unwrap()["structuredContent"];
    assert_eq!(deployed, &json!({ "service": "checkout", "from": "2.3.0", "to": "2.4.0", "rollout": 1 }));
    assert_eq!(
        status(&client, "checkout").await,
        json!({ "service": "checkout", "version": "2.4.0", "healthy": 3, "rollouts": 1 })
    );
}

#[tokio::test]
async fn without_apps_the_same_tool_asks_with_a_form_and_a_decline_deploys_nothing() {
    let client = TestClient::new(deploy::server()).with_capabilities(json!({ "elicitation": { "form": {} } }));
    let mut call = client.call_tool("deploy", json!({ "service": "search", "version": "2.0.0" }));
    let asked = call.start().await;
    let request = serde_json::to_value(asked.request("approval").unwrap()).unwrap();
    assert!(request["params"].get("_meta").is_none(), "a form alone: {request}");
    let done = call.answer([("approval", answer::decline())]).await;
    assert_eq!(done.complete().unwrap()["isError"], true);
    assert!(done.text().unwrap().contains("was not approved"), "{:?}", done.text());
    // Without apps the app-only tools do not exist for this client.
    let refused = client.call_tool("service_status", json!({ "service": "search" })).start().await;
    assert!(refused.error().unwrap().message().starts_with("Unknown tool: service_status"));
    let with_apps = TestClient::new(deploy::server()).with_capabilities(apps());
    assert_eq!(status(&with_apps, "search").await["version"], "1.9.4");
}

#[tokio::test]
async fn the_approval_is_asked_fresh() {
    // An approval sent with the first request, before the question was shown, does not count.
    let client = TestClient::new(deploy::server()).with_capabilities(apps());
    let mut call = client.call_tool("deploy", json!({ "service": "checkout", "version": "2.4.0" }));
    let early = call.answer([("approval", answer::accept(json!({ "approve": true })))]).await;
    assert_eq!(early.keys(), ["approval"], "asked all the same");
}
