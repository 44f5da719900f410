//! MCP Apps in the fixture (issue 51): a tool whose result an app shows, a tool only that
//! app calls, and an ask an app renders (SEP-3118). Clients that declare no apps, as the
//! conformance suite's, see the plain tools and get the form.

use mcp_mrtr::apps::App;
use mcp_mrtr::prelude::*;

/// The app showing `test_app_tool`'s result.
const RESULT_APP: &str = "ui://everything/result";
/// The app rendering `test_app_elicitation`'s question.
const ANSWER_APP: &str = "ui://everything/answer";

/// Registers the apps and their tools.
pub fn register(server: Server) -> Server {
    server
        .resource(App::html(RESULT_APP, RESULT_HTML).description("Shows test_app_tool's result").prefers_border(false))
        .resource(App::html(ANSWER_APP, ANSWER_HTML).description("Answers test_app_elicitation's question"))
        .tools([test_app_tool, test_app_only_tool, test_app_elicitation])
}

/// Returns a greeting that hosts with MCP Apps show in the app ui://everything/result.
#[tool(app = "ui://everything/result", read_only)]
async fn test_app_tool(name: Option<String>) -> Result<String, ToolError> {
    Ok(format!("Hello, {}!", name.as_deref().unwrap_or("world")))
}

/// Called by the app ui://everything/result only: never offered to a model.
#[tool(visibility = "app", read_only)]
async fn test_app_only_tool() -> Result<String, ToolError> {
    Ok("called by the app".into())
}

#[derive(Deserialize, JsonSchema)]
struct Colour {
    colour: String,
}

/// Asks for a colour: hosts that render asks as apps show ui://everything/answer, others a form.
#[tool]
async fn test_app_elicitation() -> Result<String, ToolError> {
    match ask!(key = "colour", elicit "Pick a colour", app = ANSWER_APP) {
        Ok(Colour { colour }) => Ok(format!("You picked {colour}")),
        Err(declined) => Ok(format!("No colour: {declined}")),
    }
}

const RESULT_HTML: &str = r#"<!doctype html>
<html><body><p id="result">waiting for the result…</p>
<script>
// A view needs no library: JSON-RPC over postMessage to the host.
let id = 0;
const pending = new Map();
const send = (method, params) => new Promise((resolve) => {
  pending.set(++id, resolve);
  window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
});
window.addEventListener("message", ({ data }) => {
  if (data && pending.has(data.id)) { pending.get(data.id)(data.result); pending.delete(data.id); }
  if (data && data.method === "ui/notifications/tool-result") {
    document.getElementById("result").textContent = data.params.content.map((c) => c.text).join(" ");
  }
});
send("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "everything-result", version: "1" }, appCapabilities: {} })
  .then(() => window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }, "*"));
</script></body></html>
"#;

const ANSWER_HTML: &str = r#"<!doctype html>
<html><body><p id="question">Waiting for the question…</p>
<button data-colour="red">Red</button> <button data-colour="blue">Blue</button> <button id="decline">None</button>
<script>
// SEP-3118: the host sends the server's `elicitation/create` as a request; the view's
// response is the ElicitResult, read by the server exactly as the form's would be.
let asked = null;
const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
window.addEventListener("message", ({ data }) => {
  if (data && data.id === 1 && data.result) send({ method: "ui/notifications/initialized", params: {} });
  if (data && data.method === "elicitation/create") {
    asked = data.id;
    document.getElementById("question").textContent = data.params.message;
  }
});
const answer = (result) => { if (asked !== null) send({ id: asked, result }); };
for (const button of document.querySelectorAll("button[data-colour]")) {
  button.onclick = () => answer({ action: "accept", content: { colour: button.dataset.colour } });
}
document.getElementById("decline").onclick = () => answer({ action: "decline" });
send({ id: 1, method: "ui/initialize", params: {
  protocolVersion: "2026-01-26", appInfo: { name: "everything-answer", version: "1" }, appCapabilities: { elicitation: {} } } });
</script></body></html>
"#;
