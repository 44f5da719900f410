//! MCP Apps (issue 51) on the wire, over HTTP on 127.0.0.1, every message checked against
//! the official schemas of both revisions: `ui://` resources with their sandbox settings,
//! tools' `_meta.ui` and visibility per client, app-only tools refused to clients without
//! apps, and asks an app renders (SEP-3118) sent only to clients that declared so, with
//! the form as every other client's fallback.

use mcp_mrtr::apps::{App, Csp, Permissions, Visibility};
use mcp_mrtr::prelude::*;
use mcp_mrtr::protocol::Tool;
use mcp_mrtr::question::Elicit;
use mcp_mrtr::testing::answer;
use mcp_mrtr_tests::harness::{refusal, Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Map, Value};

const UI: &str = "io.modelcontextprotocol/ui";
const HTML: &str = "text/html;profile=mcp-app";

#[derive(Deserialize, JsonSchema)]
struct Approval {
    approve: bool,
}

/// Deploys a service, once approved.
#[tool(app = "ui://deploy/status")]
async fn deploy(service: String) -> Result<String, ToolError> {
    let context = json!({ "service": service, "changes": ["image"] });
    match ask!(key = "approval", elicit format!("Deploy {service}?"), app = "ui://deploy/approve", app_context = context)
    {
        Ok(Approval { approve: true }) => Ok(format!("deployed {service}")),
        Ok(_) | Err(Declined::Decline) => Ok("not deployed".into()),
        Err(Declined::Cancel) => Err(ToolError::cancelled()),
    }
}

/// What a deploy would change: for the app.
#[tool(app = "ui://deploy/approve", visibility = "app")]
async fn deploy_diff(service: String) -> Result<String, ToolError> {
    Ok(format!("{service}: 2 files changed"))
}

fn server() -> Server {
    Server::new("apps", "1")
        .resource(
            App::html("ui://deploy/approve", "<!doctype html><title>approve</title>")
                .description("Shows the change and asks for approval")
                .csp(Csp::new().connect("https://api.example.com").resource("https://cdn.example.com"))
                .permissions(Permissions::new().clipboard_write())
                .prefers_border(true),
        )
        .resource(App::from_fn("ui://deploy/status", |_ctx| async { Ok("<!doctype html><p>status</p>".to_owned()) }))
        .tools([deploy, deploy_diff])
        .tool(
            Tool::new("rollback")
                .handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("rolled back") })
                .app("ui://deploy/status")
                .visibility(Visibility::Model),
        )
}

fn apps_caps(elicitation_too: bool) -> Value {
    let mut ui = json!({ "mimeTypes": [HTML] });
    if elicitation_too {
        ui["elicitation"] = json!({});
    }
    json!({ "elicitation": { "form": {} }, "extensions": { UI: ui } })
}

fn plain_caps() -> Value {
    json!({ "elicitation": { "form": {} } })
}

fn tool<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["tools"].as_array().unwrap().iter().find(|t| t["name"] == name)
}

#[tokio::test]
async fn apps_are_resources_with_their_sandbox_settings() {
    let server = TestServer::start(server()).await;
    let listed = server.call(&Rpc::new("resources/list").caps(apps_caps(false))).await["result"].clone();
    let approve = listed["resources"].as_array().unwrap().iter().find(|r| r["uri"] == "ui://deploy/approve").unwrap();
    // To a client that renders no apps they are not listed (a model could only read them as
    // text), and still read.
    let plain = server.call(&Rpc::new("resources/list").caps(plain_caps())).await["result"].clone();
    assert_eq!(plain["resources"], json!([]), "{plain}");
    assert_eq!(approve["mimeType"], HTML, "{approve}");
    assert_eq!(approve["name"], "deploy/approve");

    let read = server
        .call(&Rpc::new("resources/read").param("uri", json!("ui://deploy/approve")).caps(apps_caps(false)))
        .await["result"]
        .clone();
    let contents = &read["contents"][0];
    assert_eq!(
        (&contents["mimeType"], &contents["text"]),
        (&json!(HTML), &json!("<!doctype html><title>approve</title>"))
    );
    assert_eq!(
        contents["_meta"]["ui"],
        json!({
            "csp": { "connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"] },
            "permissions": { "clipboardWrite": {} },
            "prefersBorder": true
        })
    );
    // Made per read, with nothing set: no `_meta` at all.
    let status =
        server.call(&Rpc::new("resources/read").param("uri", json!("ui://deploy/status"))).await["result"].clone();
    assert_eq!(status["contents"][0]["text"], "<!doctype html><p>status</p>");
    assert!(status["contents"][0].get("_meta").is_none(), "{status}");

    let discovered = server.call(&Rpc::new("server/discover")).await["result"].clone();
    assert_eq!(discovered["capabilities"]["extensions"][UI], json!({ "elicitation": {} }), "{discovered}");
    let without = TestServer::start(Server::new("plain", "1").tool(deploy)).await;
    let discovered = without.call(&Rpc::new("server/discover")).await["result"].clone();
    // `deploy` names an app, so even this server serves the extension.
    assert!(discovered["capabilities"]["extensions"].get(UI).is_some(), "{discovered}");
    let none = TestServer::start(Server::new("none", "1")).await;
    let discovered = none.call(&Rpc::new("server/discover")).await["result"].clone();
    assert!(discovered["capabilities"].get("extensions").is_none(), "{discovered}");
}

#[tokio::test]
async fn each_client_sees_the_tools_it_can_use() {
    let server = TestServer::start(server()).await;
    let with_apps = server.call(&Rpc::new("tools/list").caps(apps_caps(false))).await["result"].clone();
    assert_eq!(tool(&with_apps, "deploy").unwrap()["_meta"], json!({ "ui": { "resourceUri": "ui://deploy/status" } }));
    assert_eq!(
        tool(&with_apps, "deploy_diff").unwrap()["_meta"],
        json!({ "ui": { "resourceUri": "ui://deploy/approve", "visibility": ["app"] } })
    );

    assert_eq!(tool(&with_apps, "rollback").unwrap()["_meta"]["ui"]["visibility"], json!(["model"]));

    let plain = server.call(&Rpc::new("tools/list").caps(plain_caps())).await["result"].clone();
    assert!(tool(&plain, "rollback").unwrap().get("_meta").is_none());
    let deploy = tool(&plain, "deploy").expect("the model's tool stays");
    assert!(deploy.get("_meta").is_none(), "no app for a client that renders none: {deploy}");
    assert!(tool(&plain, "deploy_diff").is_none(), "an app-only tool is not offered to the model: {plain}");

    // The app calls it through a host that renders apps; nothing else can.
    let call = Rpc::call_tool("deploy_diff", json!({ "service": "checkout" }));
    let by_app = server.call(&call.clone().caps(apps_caps(false))).await;
    assert_eq!(by_app["result"]["content"][0]["text"], "checkout: 2 files changed");
    let by_model = server.call(&call.caps(plain_caps())).await;
    assert_eq!(by_model["error"]["code"], -32602, "{by_model}");
    let message = by_model["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Unknown tool: deploy_diff") && message.contains(UI), "{message}");

    // A 2025-era session declares at `initialize`, and is shown the same.
    let (session, _) = Legacy::connect(server.addr, apps_caps(false)).await;
    let listed = session.call(1, "tools/list", json!({})).await["result"].clone();
    assert!(tool(&listed, "deploy_diff").is_some() && tool(&listed, "deploy").unwrap().get("_meta").is_some());
    let (session, _) = Legacy::connect(server.addr, plain_caps()).await;
    let listed = session.call(1, "tools/list", json!({})).await["result"].clone();
    assert!(tool(&listed, "deploy_diff").is_none() && tool(&listed, "deploy").unwrap().get("_meta").is_none());
    let refused =
        session.call(2, "tools/call", json!({ "name": "deploy_diff", "arguments": { "service": "web" } })).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

/// The first round of `deploy` for a client declaring `caps`.
async fn first_round(server: &TestServer, caps: Value) -> Value {
    let rpc = Rpc::call_tool("deploy", json!({ "service": "checkout" })).caps(caps);
    let first = server.call(&rpc).await["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    first
}

async fn answered(server: &TestServer, caps: Value, first: &Value, answer: Value) -> Value {
    let rpc = Rpc::call_tool("deploy", json!({ "service": "checkout" }))
        .caps(caps)
        .param("inputResponses", json!({ "approval": answer }))
        .param("requestState", first["requestState"].clone());
    server.call(&rpc).await["result"].clone()
}

#[tokio::test]
async fn an_ask_names_its_app_only_to_clients_that_render_one() {
    let server = TestServer::start(server()).await;
    let first = first_round(&server, apps_caps(true)).await;
    let params = &first["inputRequests"]["approval"]["params"];
    assert_eq!(
        params["_meta"],
        json!({
            "ui": { "resourceUri": "ui://deploy/approve" },
            "mcp-mrtr/appContext": { "service": "checkout", "changes": ["image"] }
        }),
        "{params}"
    );
    assert_eq!((&params["mode"], &params["message"]), (&json!("form"), &json!("Deploy checkout?")));
    assert_eq!(params["requestedSchema"]["properties"]["approve"]["type"], "boolean", "the form stays whole");

    // Apps without app-rendered elicitation, or no apps at all: the form alone.
    for caps in [apps_caps(false), plain_caps()] {
        let first = first_round(&server, caps.clone()).await;
        let params = &first["inputRequests"]["approval"]["params"];
        assert!(params.get("_meta").is_none(), "{caps}: {params}");
        let done = answered(&server, caps, &first, answer::accept(json!({ "approve": true }))).await;
        assert_eq!(done["content"][0]["text"], "deployed checkout");
    }
}

#[tokio::test]
async fn the_apps_answer_is_read_as_the_forms() {
    let server = TestServer::start(server()).await;
    let caps = apps_caps(true);
    // Content that does not match the form is no answer: the question is asked again.
    let first = first_round(&server, caps.clone()).await;
    let again = answered(&server, caps.clone(), &first, answer::accept(json!({ "approve": "yes please" }))).await;
    assert_eq!(again["resultType"], "input_required", "{again}");
    assert_eq!(again["inputRequests"]["approval"]["params"]["_meta"]["ui"]["resourceUri"], "ui://deploy/approve");
    // Fields the form does not know are dropped; a matching answer completes the call.
    let done = answered(&server, caps.clone(), &again, answer::accept(json!({ "approve": true, "x": 1 }))).await;
    assert_eq!(done["content"][0]["text"], "deployed checkout");
    // Decline and cancel stay values.
    let first = first_round(&server, caps.clone()).await;
    assert_eq!(answered(&server, caps.clone(), &first, answer::decline()).await["content"][0]["text"], "not deployed");
    let first = first_round(&server, caps.clone()).await;
    assert_eq!(answered(&server, caps, &first, answer::cancel()).await["isError"], true);
}

#[tokio::test]
async fn a_2025_session_that_renders_asks_as_apps_gets_the_app() {
    let server = TestServer::start(server()).await;
    for (caps, app) in [(apps_caps(true), true), (plain_caps(), false)] {
        let (session, _) = Legacy::connect(server.addr, caps).await;
        let mut stream =
            session.open(1, "tools/call", json!({ "name": "deploy", "arguments": { "service": "web" } })).await;
        let asked = stream.next().await.expect("the bridge asks");
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        assert_eq!(asked["params"].get("_meta").is_some(), app, "{asked}");
        session.answer(&asked, answer::accept(json!({ "approve": true }))).await;
        let done = stream.rest().await;
        assert_eq!(done.last().unwrap()["result"]["content"][0]["text"], "deployed web", "{done:?}");
    }
}

#[tokio::test]
async fn uris_that_are_not_ui_are_refused() {
    let refused = refusal(Server::new("s", "1").resource(App::html("https://example.com/app", "<p>")));
    assert!(refused.contains("an app's URI must be ui://"), "{refused}");
    let not_ui =
        Tool::new("t").handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("ok") }).app("app.html");
    let refused = refusal(Server::new("s", "1").tool(not_ui));
    assert!(refused.contains("a tool's app must be a ui:// resource"), "{refused}");

    let bad_ask = Tool::new("bad_ask").handler(|ctx: Ctx, _: Map<String, Value>| async move {
        let approval: Result<Approval, Declined> = ctx.ask("a", Elicit::new("Sure?").app("approve.html")).await;
        Ok::<_, ToolError>(format!("{}", approval.is_ok()))
    });
    let server = TestServer::start(Server::new("s", "1").tool(bad_ask)).await;
    let failed = server.call(&Rpc::call_tool("bad_ask", json!({})).caps(apps_caps(true))).await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("\"approve.html\""), "{failed}");
}

/// Asks through the app from inside a task.
#[tool(task = "required")]
async fn deploy_later(ctx: &Ctx, service: String) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let approval: Approval = ask!(elicit format!("Deploy {service} tonight?"), app = "ui://deploy/approve")?;
    Ok(format!("{service}: {}", if approval.approve { "scheduled" } else { "left alone" }))
}

#[tokio::test]
async fn a_task_asks_through_the_app_and_reads_the_answer_as_the_forms() {
    use mcp_mrtr::testing::TestClient;
    let mut caps = apps_caps(true);
    caps["extensions"]["io.modelcontextprotocol/tasks"] = json!({});
    let server = server().tool(deploy_later).tasks(mcp_mrtr::tasks::TaskConfig::default());
    let client = TestClient::new(server).with_capabilities(caps);
    let created = client.call_tool("deploy_later", json!({ "service": "billing" })).start().await;
    let task = client.task(created.task_id().unwrap_or_else(|| panic!("a task: {created:?}")));
    task.wait_for("input_required", 500).await;
    let questions = task.questions().await.unwrap();
    let asked = serde_json::to_value(&questions["approval"]).unwrap();
    assert_eq!(asked["params"]["_meta"]["ui"]["resourceUri"], "ui://deploy/approve", "{asked}");
    task.update([("approval", answer::accept(json!({ "approve": true })))]).await.unwrap();
    let done = task.wait_for("completed", 500).await;
    assert!(done.to_string().contains("billing: scheduled"), "{done}");
}

static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A plan that changes between rounds, as when someone edits it meanwhile.
#[tool]
async fn shifting_plan() -> Result<String, ToolError> {
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let approval: Approval =
        ask!(elicit "Approve the plan?", app = "ui://deploy/approve", app_context = json!({ "revision": run }))?;
    Ok(format!("{}", approval.approve))
}

#[tokio::test]
async fn an_answer_is_pinned_to_the_context_the_app_showed() {
    let server = TestServer::start(server().tool(shifting_plan)).await;
    let rpc = Rpc::call_tool("shifting_plan", json!({})).caps(apps_caps(true));
    let first = server.call(&rpc).await["result"].clone();
    let shown = first["inputRequests"]["approval"]["params"]["_meta"]["mcp-mrtr/appContext"]["revision"].clone();
    let again = server
        .call(
            &rpc.clone()
                .param("inputResponses", json!({ "approval": answer::accept(json!({ "approve": true })) }))
                .param("requestState", first["requestState"].clone()),
        )
        .await["result"]
        .clone();
    assert_eq!(again["resultType"], "input_required", "the plan changed: approve it again: {again}");
    assert_ne!(again["inputRequests"]["approval"]["params"]["_meta"]["mcp-mrtr/appContext"]["revision"], shown);
}

#[tokio::test]
async fn the_deploy_examples_approval_sent_twice_never_deploys_twice_nor_reads_as_a_failure() {
    let server = TestServer::start(mcp_mrtr_examples::deploy::server()).await;
    let rpc = Rpc::call_tool("deploy", json!({ "service": "checkout", "version": "2.4.0" })).caps(apps_caps(true));
    let first = server.call(&rpc).await["result"].clone();
    let approved = rpc
        .clone()
        .param("inputResponses", json!({ "approval": answer::accept(json!({ "approve": true })) }))
        .param("requestState", first["requestState"].clone());
    let done = server.call(&approved).await["result"].clone();
    assert_eq!(done["structuredContent"]["rollout"], 1, "{done}");
    // A client that lost the answer sends the same retry: the roll-out is not taken again,
    // and the client is told why rather than that the deploy failed.
    let again = server.call(&approved).await;
    let message = again["error"]["message"].as_str().unwrap_or_else(|| panic!("{again}"));
    assert!(message.contains("taken already"), "{message}");
    let status = Rpc::call_tool("service_status", json!({ "service": "checkout" })).caps(apps_caps(false));
    assert_eq!(server.call(&status).await["result"]["structuredContent"]["rollouts"], 1);
}

/// The same approval, in a round built by hand.
#[tool]
async fn deploy_by_hand(ctx: &Ctx) -> Result<String, ToolError> {
    let approval = Elicit::<Approval>::new("Deploy by hand?").app("ui://deploy/approve");
    match ctx.answer("approval", &approval) {
        Some(Ok(Approval { approve })) => Ok(format!("approved: {approve}")),
        Some(Err(declined)) => Ok(format!("{declined}")),
        None => ctx.input_required(mcp_mrtr::context::InputRequired::new().ask("approval", &approval)).await,
    }
}

#[tokio::test]
async fn a_round_built_by_hand_names_the_app_to_the_same_clients() {
    let server = TestServer::start(server().tool(deploy_by_hand)).await;
    for (caps, app) in [(apps_caps(true), true), (apps_caps(false), false), (plain_caps(), false)] {
        let rpc = Rpc::call_tool("deploy_by_hand", json!({})).caps(caps.clone());
        let first = server.call(&rpc).await["result"].clone();
        let params = &first["inputRequests"]["approval"]["params"];
        assert_eq!(params.get("_meta").is_some(), app, "{caps}: {params}");
        let done = server
            .call(
                &rpc.param("inputResponses", json!({ "approval": answer::accept(json!({ "approve": true })) }))
                    .param("requestState", first["requestState"].clone()),
            )
            .await;
        assert_eq!(done["result"]["content"][0]["text"], "approved: true", "{done}");
    }
}
