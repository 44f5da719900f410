//! `#[toolbox]`: `&self` methods of a struct the server owns are handlers, registered
//! together, and ask, resolve the caller and read their struct like free handlers.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use serde_json::json;

#[derive(Default)]
struct Notebook {
    notes: Mutex<BTreeMap<String, String>>,
}

#[derive(Deserialize, JsonSchema)]
struct Overwrite {
    overwrite: bool,
}

#[toolbox]
impl Notebook {
    /// Files a note, asking before it replaces one.
    #[tool(idempotent)]
    async fn put(
        &self,
        /// The note's title.
        title: String,
        body: String,
        caller: Option<Caller>,
    ) -> Result<String, ToolError> {
        let exists = self.notes.lock().unwrap().contains_key(&title);
        if exists {
            let confirm: Result<Overwrite, Declined> = ask!(elicit format!("Replace {title}?"));
            if !confirm.is_ok_and(|c| c.overwrite) {
                return Ok(format!("kept {title}"));
            }
        }
        self.notes.lock().unwrap().insert(title.clone(), body);
        Ok(format!("filed {title} for {}", caller.as_ref().map_or("anyone", Caller::id)))
    }

    /// Reviews a note.
    #[prompt]
    async fn review(&self, title: String) -> Result<Vec<PromptMessage>, ToolError> {
        let body = self.body(&title)?;
        Ok(vec![PromptMessage::user(format!("Review {title}: {body}"))])
    }

    /// A note by title.
    #[resource(uri = "note://{title}", mime_type = "text/plain")]
    async fn note(&self, title: String) -> Result<ResourceContents, ToolError> {
        let body = self.body(&title)?;
        Ok(ResourceContents::text(format!("note://{title}"), "text/plain", body))
    }

    /// An ordinary method stays one.
    fn body(&self, title: &str) -> Result<String, ToolError> {
        self.notes.lock().unwrap().get(title).cloned().ok_or_else(|| ToolError::new(format!("no note {title}")))
    }
}

#[tokio::test]
async fn a_toolbox_serves_its_methods_as_handlers_sharing_the_struct() {
    let notebook = Arc::new(Notebook::default());
    let server = Server::new("notes", "1").toolbox(notebook.clone());
    let client = TestClient::new(server).as_caller(Caller::new("ada"));

    let filed = client.call_tool("put", json!({"title": "plan", "body": "ship"})).start().await;
    assert_eq!(filed.text().as_deref(), Some("filed plan for ada"));
    assert_eq!(notebook.notes.lock().unwrap().get("plan").map(String::as_str), Some("ship"));

    let mut again = client.call_tool("put", json!({"title": "plan", "body": "wait"}));
    assert_eq!(again.start().await.keys(), ["confirm"]);
    let kept = again.answer([("confirm", answer::decline())]).await;
    assert_eq!(kept.text().as_deref(), Some("kept plan"));
    let mut replace = client.call_tool("put", json!({"title": "plan", "body": "wait"}));
    replace.start().await;
    let replaced = replace.answer([("confirm", answer::accept(json!({"overwrite": true})))]).await;
    assert_eq!(replaced.text().as_deref(), Some("filed plan for ada"));

    let read = client.read_resource("note://plan").start().await;
    assert_eq!(read.complete().expect("a result")["contents"][0]["text"], "wait");
    let prompt = client.get_prompt("review", json!({"title": "plan"})).start().await;
    assert_eq!(prompt.complete().expect("a result")["messages"][0]["content"]["text"], "Review plan: wait");
}

#[tokio::test]
async fn a_toolbox_lists_its_handlers_with_their_schemas() {
    let server = TestServer::start(Server::new("notes", "1").toolbox(Notebook::default())).await;
    let tools = server.call(&Rpc::new("tools/list")).await;
    let put = &tools["result"]["tools"][0];
    assert_eq!(put["name"], "put");
    assert_eq!(put["annotations"]["idempotentHint"], true);
    assert_eq!(put["inputSchema"]["properties"]["title"]["description"], "The note's title.");
    // The caller is resolved from the request, not an argument.
    assert_eq!(put["inputSchema"]["required"], json!(["title", "body"]));
    assert!(put["inputSchema"]["properties"].get("caller").is_none());
    let templates = server.call(&Rpc::new("resources/templates/list")).await;
    assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "note://{title}");
}
