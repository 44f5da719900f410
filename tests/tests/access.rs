//! One authorization path (audit B6, B7, B14, B16, B17), over real HTTP with real JWTs:
//! every way of reaching a tool, prompt or resource asks the same question `tools/call`
//! asks (may this caller see it, and does it hold its scopes?), and a hidden target
//! reads exactly like one that does not exist.

use std::net::SocketAddr;
use std::time::Duration;

use jsonwebtoken::{EncodingKey, Header};
use mcp_mrtr::auth::{JwtKeys, JwtVerifier, ResourceServer};
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::answer;
use mcp_mrtr::{
    catalog::CatalogHandle, catalog::Item, catalog::RequestView, catalog::Subscriptions, http::HttpConfig,
    protocol::Completion, protocol::Prompt, protocol::PromptMessage, protocol::Resource, protocol::ResourceContents,
    protocol::ResourceTemplate,
};
use mcp_mrtr_tests::client::{self, HttpResponse};
use mcp_mrtr_tests::harness::{bearer_names_caller, task_caps, Rpc};
use mcp_mrtr_tests::listen::ListenStream;
use serde_json::{json, Map, Value};

const SECRET: &str = "test-secret-of-at-least-32-bytes!";
const ISSUER: &str = "https://auth.test.example";

/// Routes a job to a region (the header rules of a tool everyone sees).
#[tool]
async fn route_job(#[mcp(header = "Region")] region: String) -> Result<String, ToolError> {
    Ok(format!("routed to {region}"))
}

/// The same, for staff only: its header rules must not show that it exists.
#[tool]
async fn hidden_route(#[mcp(header = "Region")] region: String) -> Result<String, ToolError> {
    Ok(format!("secretly routed to {region}"))
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

/// Signs a note off inside a task; says whether the caller that answered can audit.
#[tool(task = "required", scopes = ["notes:write"])]
async fn sign_off(ctx: &Ctx, caller: Caller) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let ok: Confirm = ask!(elicit "Sign off?")?;
    Ok(format!("{} signed off: {} (audit: {})", caller.id(), ok.yes, caller.has_scope("notes:audit")))
}

/// The same, for staff only.
#[tool(task = "required")]
async fn hidden_sign_off(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let ok: Confirm = ask!(elicit "Sign off?")?;
    Ok(format!("signed off: {}", ok.yes))
}

type Args = Map<String, Value>;

fn prompt(name: &str) -> mcp_mrtr::PromptRoute {
    Prompt::new(name).description("A prompt").handler(|_ctx, _: mcp_mrtr::handler::PromptArguments| async {
        Ok::<_, ToolError>(vec![PromptMessage::user("hi")])
    })
}

fn resource(uri: &str) -> mcp_mrtr::ResourceRoute {
    let owned = uri.to_owned();
    Resource::new(uri, "r").handler(move |_ctx| {
        let uri = owned.clone();
        async move { Ok::<_, ToolError>(ResourceContents::text(uri, "text/plain", "body")) }
    })
}

fn template(uri_template: &str) -> mcp_mrtr::ResourceRoute {
    ResourceTemplate::new(uri_template, "t").handler(|_ctx, _vars: Args| async move {
        Ok::<_, ToolError>(ResourceContents::text("t://read", "text/plain", "body"))
    })
}

/// Anything named `hidden…` (or `vault://…`) is for callers with the `staff` scope only.
fn staff_only(view: &RequestView<'_>, item: Item<'_>) -> bool {
    let name = match item {
        Item::Tool(tool) => tool.name.as_str(),
        Item::Prompt(prompt) => prompt.name.as_str(),
        Item::Resource(resource) => resource.uri.as_str(),
        Item::ResourceTemplate(template) => template.uri_template.as_str(),
        _ => "",
    };
    let secret = name.contains("hidden") || name.starts_with("vault://");
    !secret || view.caller().is_some_and(|caller| caller.has_scope("staff"))
}

fn server() -> Server {
    Server::new("access", "0")
        .subscriptions(Subscriptions::default())
        .tools(tools![route_job, hidden_route, sign_off, hidden_sign_off])
        .prompt(prompt("open_prompt"))
        .prompt(prompt("hidden_prompt"))
        .prompt(prompt("scoped_prompt").requires_scopes(["prompts:read"]))
        .resource(resource("r://public"))
        .resource(resource("r://other"))
        .resource(resource("r://hidden"))
        .resource(template("note://{title}").requires_scopes(["notes:read"]))
        .resource(template("vault://{key}"))
        .completion(|_ctx, _params| async {
            Ok::<_, ToolError>(Completion::from_values(vec!["one".into(), "two".into()]))
        })
        .visible(staff_only)
}

/// A real server on 127.0.0.1 behind an HS256 JWT verifier, and the handle that changes it.
async fn serve() -> (SocketAddr, String, CatalogHandle) {
    let server = server();
    let handle = server.catalog();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://127.0.0.1:{}/mcp", addr.port());
    let verifier = JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), ISSUER, &resource);
    let auth = ResourceServer::new(&resource, [ISSUER]).verifier(verifier);
    let app = server.into_router(HttpConfig::default().auth(auth)).expect("a router");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, resource, handle)
}

/// A token for `sub` granting `scope`, valid for a minute.
fn token(sub: &str, scope: &str, audience: &str) -> String {
    let now = i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap();
    let claims = json!({"sub": sub, "scope": scope, "iss": ISSUER, "aud": audience, "exp": now + 60});
    jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes()).unwrap()).unwrap()
}

fn headers_with(rpc: &Rpc, bearer: &str) -> Vec<(String, String)> {
    let mut headers = rpc.headers();
    headers.push(("authorization".into(), format!("Bearer {bearer}")));
    headers
}

async fn post(addr: SocketAddr, rpc: &Rpc, bearer: &str) -> HttpResponse {
    let headers = headers_with(rpc, bearer);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    client::send(addr, "POST", &headers, &rpc.body()).await
}

/// What a caller can tell from an answer: its status and its JSON-RPC message.
async fn seen(addr: SocketAddr, rpc: &Rpc, bearer: &str) -> (u16, Value) {
    let response = post(addr, rpc, bearer).await;
    (response.status, response.reply())
}

/// `what` with the name `from` written as `to`, to compare answers that name their target.
fn renamed(what: &(u16, Value), from: &str, to: &str) -> (u16, Value) {
    (what.0, serde_json::from_str(&what.1.to_string().replace(from, to)).unwrap())
}

fn complete(reference: Value) -> Rpc {
    Rpc::new("completion/complete").param("ref", reference).param("argument", json!({"name": "x", "value": ""}))
}

fn prompt_ref(name: &str) -> Value {
    json!({"type": "ref/prompt", "name": name})
}

fn resource_ref(uri: &str) -> Value {
    json!({"type": "ref/resource", "uri": uri})
}

fn call_hidden_route(name: &str) -> Rpc {
    Rpc::call_tool(name, json!({"region": "eu"}))
}

fn get_prompt(name: &str) -> Rpc {
    Rpc::new("prompts/get").param("name", json!(name))
}

fn read(uri: &str) -> Rpc {
    Rpc::new("resources/read").param("uri", json!(uri))
}

fn complete_prompt(name: &str) -> Rpc {
    complete(prompt_ref(name))
}

/// Builds the request of one entry point for a name.
type Request = fn(&str) -> Rpc;

fn complete_resource(uri: &str) -> Rpc {
    complete(resource_ref(uri))
}

#[tokio::test]
async fn hidden_targets_read_exactly_like_unknown_ones_at_every_entry_point() {
    let (addr, resource, _) = serve().await;
    // Bob holds every scope but `staff`: what he cannot reach, he cannot see.
    let bob = token("bob", "prompts:read notes:read", &resource);
    let cases: [(Request, &str, &str); 6] = [
        (call_hidden_route, "hidden_route", "no_such_tool"),
        (get_prompt, "hidden_prompt", "no_such_prompt"),
        (read, "r://hidden", "r://nothing"),
        (read, "vault://k", "nowhere://k"),
        (complete_prompt, "hidden_prompt", "no_such_prompt"),
        (complete_resource, "vault://{key}", "nowhere://{key}"),
    ];
    for (rpc, hidden, unknown) in cases {
        let answer = seen(addr, &rpc(hidden), &bob).await;
        let method = rpc(hidden).method;
        assert!(answer.1.get("error").is_some(), "{method} of {hidden}: {answer:?}");
        assert_eq!(renamed(&answer, hidden, unknown), seen(addr, &rpc(unknown), &bob).await, "{method} of {hidden}");
    }
}

#[tokio::test]
async fn completion_answers_only_for_prompts_and_resources_the_caller_may_get() {
    let (addr, resource, _) = serve().await;
    let bob = token("bob", "", &resource);
    // Visible but not granted: the same 403, naming the same scopes, as getting it.
    for (completion, get) in [
        (complete_prompt("scoped_prompt"), get_prompt("scoped_prompt")),
        (complete_resource("note://{title}"), read("note://plan")),
    ] {
        let (status, refused) = seen(addr, &completion, &bob).await;
        assert_eq!(status, 403, "{refused}");
        assert_eq!(refused["error"], seen(addr, &get, &bob).await.1["error"]);
    }
    let staff = token("ada", "staff prompts:read notes:read", &resource);
    for reference in [prompt_ref("open_prompt"), prompt_ref("hidden_prompt"), prompt_ref("scoped_prompt")]
        .into_iter()
        .chain([resource_ref("note://{title}"), resource_ref("vault://{key}"), resource_ref("r://public")])
    {
        let (status, done) = seen(addr, &complete(reference.clone()), &staff).await;
        assert_eq!((status, &done["result"]["completion"]["values"]), (200, &json!(["one", "two"])), "{reference}");
    }
    let (_, open) = seen(addr, &complete_prompt("open_prompt"), &bob).await;
    assert_eq!(open["result"]["completion"]["values"], json!(["one", "two"]));
}

/// One open `subscriptions/listen` stream of a caller, to the resources it names.
struct Listener(ListenStream);

impl Listener {
    async fn open(addr: SocketAddr, bearer: &str, uris: &[&str]) -> Self {
        let rpc = Rpc::new("subscriptions/listen").param("notifications", json!({ "resourceSubscriptions": uris }));
        Self(ListenStream::open(addr, None, &rpc.header("authorization", Some(&format!("Bearer {bearer}")))).await)
    }

    async fn next(&mut self) -> Value {
        self.0.next().await
    }

    /// The URIs the acknowledgement says are honoured.
    async fn honoured(&mut self) -> Value {
        let ack = self.next().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        ack["params"]["notifications"]["resourceSubscriptions"].clone()
    }

    /// The URI of the next `resources/updated`.
    async fn updated(&mut self) -> Value {
        let note = self.next().await;
        assert_eq!(note["method"], "notifications/resources/updated", "{note}");
        note["params"]["uri"].clone()
    }
}

#[tokio::test]
async fn listen_honours_and_delivers_only_resources_the_caller_may_read() {
    let (addr, resource, handle) = serve().await;
    let asked = ["r://public", "r://other", "note://plan", "r://hidden", "vault://k", "nothing://x"];
    // Bob sees everything but staff's, and lacks notes:read.
    let mut bob = Listener::open(addr, &token("bob", "", &resource), &asked).await;
    assert_eq!(bob.honoured().await, json!(["r://other", "r://public"]));
    let mut ada = Listener::open(addr, &token("ada", "staff notes:read", &resource), &asked).await;
    assert_eq!(ada.honoured().await, json!(["note://plan", "r://hidden", "r://other", "r://public", "vault://k"]));
    // What bob may not hear goes first: a stream that leaked one would show it.
    for uri in ["note://plan", "r://hidden", "vault://k", "nothing://x", "r://public"] {
        handle.resource_updated(uri);
    }
    assert_eq!(bob.updated().await, "r://public");
    for uri in ["note://plan", "r://hidden", "vault://k", "r://public"] {
        assert_eq!(ada.updated().await, uri);
    }
    // Decided again when a change is delivered: a resource removed since is no longer read.
    assert!(handle.resources().remove("r://public"));
    handle.resource_updated("r://public");
    handle.resource_updated("r://other");
    assert_eq!(bob.updated().await, "r://other");
}

/// A 2025-11-25 session's `resources/subscribe` decides as `resources/read` does (the sixth
/// audit's E2): a resource the caller may not see is refused exactly as one that does not
/// exist, and one it lacks the scopes for with the same 403.
#[tokio::test]
async fn a_2025_session_subscribes_only_to_resources_its_caller_may_read() {
    let (addr, resource, _) = serve().await;
    let bob = format!("Bearer {}", token("bob", "", &resource));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let headers = [("content-type", "application/json"), ("authorization", bob.as_str())];
    let opened = client::send(addr, "POST", &headers, init.to_string().as_bytes()).await;
    let session = opened.header("mcp-session-id").unwrap_or_else(|| panic!("a session: {opened:?}")).to_owned();
    let on_session = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session.as_str()),
        ("authorization", bob.as_str()),
    ];
    let subscribe = |uri: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}});
        let headers = on_session;
        async move {
            let response = client::send(addr, "POST", &headers, body.to_string().as_bytes()).await;
            (response.status, response.reply())
        }
    };
    assert_eq!(subscribe("r://public").await, (200, json!({"jsonrpc": "2.0", "id": 1, "result": {}})));
    for (hidden, unknown) in [("r://hidden", "r://nothing"), ("vault://k", "nowhere://k")] {
        let answer = subscribe(hidden).await;
        assert_eq!(answer.1["error"]["code"], -32602, "{answer:?}");
        assert_eq!(renamed(&answer, hidden, unknown), subscribe(unknown).await, "{hidden}");
    }
    let (status, refused) = subscribe("note://plan").await;
    assert_eq!((status, &refused["error"]["data"]["requiredScopes"]), (403, &json!(["notes:read"])), "{refused}");
}

fn task_rpc(method: &str, id: &str) -> Rpc {
    Rpc::new(method).param("taskId", json!(id)).caps(task_caps())
}

fn sign(id: &str) -> Rpc {
    task_rpc("tasks/update", id).param("inputResponses", json!({ "ok": answer::accept(json!({ "yes": true })) }))
}

/// Creates a task of `tool` as `bearer` and waits until it asks its question.
async fn waiting_task(addr: SocketAddr, tool: &str, bearer: &str) -> String {
    let created = seen(addr, &Rpc::call_tool(tool, json!({})).caps(task_caps()), bearer).await.1;
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();
    wait_for(addr, &id, bearer, "input_required").await;
    id
}

/// Polls `tasks/get` every 20 ms, at most 250 times, until the task has `status`.
async fn wait_for(addr: SocketAddr, id: &str, bearer: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..250 {
        last = seen(addr, &task_rpc("tasks/get", id), bearer).await.1["result"].clone();
        if last["status"] == status {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} did not become {status}: {last}");
}

#[tokio::test]
async fn tasks_update_checks_the_scopes_and_view_of_the_caller_answering_now() {
    let (addr, resource, _) = serve().await;
    let writer = token("alice", "notes:write", &resource);
    let id = waiting_task(addr, "sign_off", &writer).await;
    // Alice's new token lost notes:write: she can no longer approve the write.
    let reader = token("alice", "", &resource);
    let (status, refused) = seen(addr, &sign(&id), &reader).await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"], seen(addr, &Rpc::call_tool("sign_off", json!({})), &reader).await.1["error"]);
    assert_eq!(
        wait_for(addr, &id, &reader, "input_required").await["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );
    // With it again, and a scope she did not have at creation: the replay runs as the
    // caller who answered.
    let auditor = token("alice", "notes:write notes:audit", &resource);
    assert_eq!(seen(addr, &sign(&id), &auditor).await.1["result"]["resultType"], "complete");
    let done = wait_for(addr, &id, &auditor, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "alice signed off: true (audit: true)");

    // A tool hidden from the caller now reads as an unknown tool, as `tools/call` says.
    let id = waiting_task(addr, "hidden_sign_off", &token("alice", "staff", &resource)).await;
    let (status, hidden) = seen(addr, &sign(&id), &writer).await;
    let call = seen(addr, &Rpc::call_tool("hidden_sign_off", json!({})).caps(task_caps()), &writer).await;
    assert_eq!((status, &hidden["error"]), (call.0, &call.1["error"]));
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    wait_for(addr, &id, &writer, "input_required").await;
}

#[tokio::test]
async fn a_task_created_without_a_principal_is_refused_to_every_caller_with_one() {
    let server = Server::new("ownerless", "0")
        .tool(hidden_sign_off)
        .principal(|headers| headers.get("x-user").and_then(|v| v.to_str().ok()).map(str::to_owned));
    let app = server
        .into_router(mcp_mrtr::http::HttpConfig::default())
        .expect("a router")
        .layer(axum::middleware::from_fn(bearer_names_caller));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let send = |rpc: Rpc, header: Option<(&'static str, &'static str)>| async move {
        let mut headers = rpc.headers();
        headers.extend(header.map(|(n, v)| (n.to_owned(), v.to_owned())));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        client::send(addr, "POST", &headers, &rpc.body()).await.reply()
    };
    let created = send(Rpc::call_tool("hidden_sign_off", json!({})).caps(task_caps()), None).await;
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();
    let unknown = send(task_rpc("tasks/get", "0123456789abcdef0123456789abcdef"), None).await;
    // An authenticated caller, or one a principal hook names, is refused it as unknown.
    for who in [("authorization", "Bearer bob"), ("x-user", "bob")] {
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let reply = send(task_rpc(method, &id), Some(who)).await;
            assert_eq!(reply["error"]["code"], unknown["error"]["code"], "{method} as {who:?}: {reply}");
        }
    }
    // Callers without a principal share it, as on a server without authentication.
    let anonymous = send(task_rpc("tasks/get", &id), None).await;
    assert_eq!(anonymous["result"]["taskId"], id.as_str(), "{anonymous}");
}

#[tokio::test]
async fn a_hidden_tool_s_header_rules_do_not_reveal_it() {
    let (addr, resource, _) = serve().await;
    let bob = token("bob", "", &resource);
    let args = json!({"region": "eu"});
    let unknown = seen(addr, &Rpc::call_tool("no_such_tool", args.clone()), &bob).await;
    for header in [None, Some("eu"), Some("us")] {
        let call = Rpc::call_tool("hidden_route", args.clone()).header("mcp-param-region", header);
        let hidden = renamed(&seen(addr, &call, &bob).await, "hidden_route", "no_such_tool");
        assert_eq!(hidden, unknown, "header {header:?}");
    }
    // The rules hold for whoever sees the tool, and for a tool everyone sees.
    let staff = token("ada", "staff", &resource);
    for (tool, who) in [("hidden_route", &staff), ("route_job", &bob)] {
        let missing = seen(addr, &Rpc::call_tool(tool, args.clone()), who).await;
        assert_eq!((missing.0, &missing.1["error"]["code"]), (400, &json!(-32020)), "{tool}: {missing:?}");
        let sent = Rpc::call_tool(tool, args.clone()).header("mcp-param-region", Some("eu"));
        assert_eq!(seen(addr, &sent, who).await.0, 200, "{tool}");
    }
}
