//! What a [`TestClient`] sees of the catalog: the lists, every page, and listen streams.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::TestClient;
use crate::base::error::Error;
use crate::intake::envelope::{Request, RequestMeta, PROTOCOL_VERSION};
use crate::mrtr::context::Delivery;
use crate::protocol::{Method, Outgoing, Prompt, RequestId, Resource, ResourceTemplate, Tool};

/// Pages a list may have before a test is told the cursors go round in circles.
const MAX_PAGES: usize = 1000;

impl TestClient {
    /// `tools/list`, every page: the tools this client may see, in order.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list("tools/list", "tools").await
    }

    /// `prompts/list`, every page.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list("prompts/list", "prompts").await
    }

    /// `resources/list`, every page.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list("resources/list", "resources").await
    }

    /// `resources/templates/list`, every page.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list("resources/templates/list", "resourceTemplates").await
    }

    async fn list<T: DeserializeOwned>(&self, method: &str, field: &str) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for page in 1..=MAX_PAGES {
            let mut params = crate::protocol::JsonObject::new();
            if let Some(cursor) = cursor.take() {
                params.insert("cursor".into(), Value::String(cursor));
            }
            let id = i64::try_from(page).unwrap_or(i64::MAX);
            let result =
                self.request(id, method, params, &self.extensions, &crate::protocol::JsonObject::new()).await?;
            let listed = result.get(field).cloned().unwrap_or_default();
            let page: Vec<T> = serde_json::from_value(listed)
                .map_err(|e| Error::internal(format!("{method} answered a list that does not read: {e}")))?;
            items.extend(page);
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(items),
            }
        }
        Err(Error::internal(format!("{method} still had pages after {MAX_PAGES}")))
    }

    /// Opens a `subscriptions/listen` stream asking for `notifications` (the filter, such
    /// as `{"toolsListChanged": true}` or `{"resourceSubscriptions": ["file:///a"]}`), and
    /// returns once the server acknowledged it. The server must serve
    /// [`Subscriptions`](crate::catalog::Subscriptions); it honours only what it has (no tools, no tool list
    /// changes): see [`ListenStream::acknowledged`]. The stream ends when dropped.
    ///
    /// ```
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::testing::TestClient;
    /// use mcp_mrtr::{catalog::Subscriptions, protocol::Tool};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let tool = |name: &str| {
    ///     Tool::new(name).description("A tool").handler(|_ctx, _args: serde_json::Map<String, serde_json::Value>| async {
    ///         Ok::<_, ToolError>("here")
    ///     })
    /// };
    /// let server = Server::new("live", "1").tool(tool("first")).subscriptions(Subscriptions::default());
    /// let handle = server.catalog();
    /// let client = TestClient::new(server);
    /// // The server has tools, so it honours (and acknowledges) the tools filter.
    /// let mut stream = client.listen(serde_json::json!({ "toolsListChanged": true })).await.unwrap();
    /// assert_eq!(stream.acknowledged()["notifications"]["toolsListChanged"], true);
    /// handle.tools().add(tool("late")).unwrap();
    /// let note = stream.next().await.unwrap();
    /// assert_eq!(note["method"], "notifications/tools/list_changed");
    /// assert_eq!(client.list_tools().await.unwrap()[1].name, "late");
    /// # }
    /// ```
    pub async fn listen(&self, notifications: Value) -> Result<ListenStream, Error> {
        let meta = RequestMeta {
            protocol_version: PROTOCOL_VERSION.into(),
            client_capabilities: serde_json::from_value(self.capabilities.clone()).unwrap_or_default(),
            ..RequestMeta::default()
        };
        let params = json!({ "notifications": notifications });
        let request = Request::new(RequestId::from(1), Method::Listen.name().into(), Some(params));
        let (notifier, mut notes) = mpsc::channel(64);
        let transport =
            Delivery { notifier: Some(notifier), extensions: self.extensions.clone(), ..Delivery::default() };
        let server = self.server.clone();
        let mut stream =
            tokio::spawn(async move { server.handle(request, Arc::new(meta), transport).await.outcome.map(drop) });
        tokio::select! {
            note = notes.recv() => match note.map(|note| *note) {
                Some(Outgoing::Notification(ack)) => {
                    Ok(ListenStream { acknowledged: ack.params, notes, stream })
                }
                // The channel closes when the request ends, maybe before its outcome is
                // polled here: the outcome says why.
                None => Err(refusal(stream.await)),
                Some(_) => Err(Error::internal("the listen stream sent something else before its acknowledgement")),
            },
            ended = &mut stream => Err(refusal(ended)),
        }
    }
}

/// Why a listen request ended before its acknowledgement.
fn refusal(ended: Result<Result<(), Error>, tokio::task::JoinError>) -> Error {
    match ended {
        Ok(Err(error)) => error,
        Ok(Ok(())) => Error::internal("the listen stream ended before its acknowledgement"),
        Err(_) => Error::internal("the listen stream panicked"),
    }
}

/// An open `subscriptions/listen` stream of a [`TestClient`]: the acknowledgement, then
/// each notification as the server sends it. Dropping it ends the stream, as a client
/// closing its connection does.
#[derive(Debug)]
pub struct ListenStream {
    acknowledged: Value,
    notes: mpsc::Receiver<Box<Outgoing>>,
    stream: JoinHandle<Result<(), Error>>,
}

impl ListenStream {
    /// The acknowledgement's params: the filter the server honours (`notifications`) and
    /// the subscription id in `_meta`.
    pub fn acknowledged(&self) -> &Value {
        &self.acknowledged
    }

    /// The next notification (`{"method": …, "params": …}`), or `None` once the server
    /// ended the stream.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            // A listen stream carries notifications only; anything else is not for a test.
            if let Outgoing::Notification(note) = *self.notes.recv().await? {
                return Some(json!({ "method": note.method, "params": note.params }));
            }
        }
    }
}

impl Drop for ListenStream {
    fn drop(&mut self) {
        self.stream.abort();
    }
}
