//! What the application answers when a server asks mid-call: forms and URLs (elicitation),
//! its model (sampling), its roots. Each kind is declared to servers as a capability only
//! when the application gives an answer for it, so a server never asks what nobody answers.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::error::{BoxError, ClientError};
use crate::protocol::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, FormSchema, InputRequest,
    JsonObject, ListRootsResult,
};

type Answer<Q, A> = Arc<dyn Fn(Q) -> BoxFuture<'static, Result<A, BoxError>> + Send + Sync>;

/// How the application answers a server's questions.
///
/// Built with one closure per kind of question it can answer; a kind left out is not
/// declared in the client's capabilities, so servers do not ask it (a server that needs it
/// says so with `-32021`, a [`ClientError::Rpc`]).
///
/// ```
/// use mcp_mrtr::client::Answers;
/// use mcp_mrtr::protocol::{CreateMessageResult, ElicitResult, ListRootsResult, Root};
/// use serde_json::json;
///
/// let answers = Answers::new()
///     .forms(|question| async move {
///         // A person would be shown `question.message` and the form's fields.
///         Ok(ElicitResult::accept_as(&json!({"name": "Ada"}))?)
///     })
///     .sampling(|request| async move { Ok(CreateMessageResult::from_text("my-model", "a summary")) })
///     .roots(|| async { Ok(ListRootsResult::new(vec![Root::new("file:///work")])) });
/// assert_eq!(answers.capabilities(), json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}}));
/// ```
///
/// Questions of one round are answered one after another, in the order of their keys: a
/// person answers one at a time, and an answer can rely on that.
#[derive(Clone, Default)]
pub struct Answers {
    form: Option<Answer<FormQuestion, ElicitResult>>,
    url: Option<Answer<UrlQuestion, ElicitResult>>,
    sampling: Option<Answer<CreateMessageParams, CreateMessageResult>>,
    roots: Option<Answer<(), ListRootsResult>>,
    /// Every question sent on as asked, for a gateway to put to its own caller.
    relay: Option<mpsc::Sender<Relayed>>,
    /// Whether every kind of question is declared, whatever is answered here (a gateway's
    /// client: see `Connect::relaying_questions`).
    every_kind: bool,
}

/// A question a session's server asked, relayed as asked (`method` and `params`, defaults
/// filled in), and where its answer (the result, as JSON) goes. Dropping `answer` leaves
/// the question unanswered: the server hears an error.
#[derive(Debug)]
pub(crate) struct Relayed {
    pub(crate) request: JsonObject,
    pub(crate) answer: oneshot::Sender<Value>,
}

impl fmt::Debug for Answers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answers").field("capabilities", &self.capabilities()).finish()
    }
}

/// An accepted form with each field the answer leaves out that the form gives a default
/// for filled with that default (SEP-1034): what a host pre-fills, the user kept.
fn with_defaults(mut result: ElicitResult, schema: &FormSchema) -> ElicitResult {
    if let (ElicitAction::Accept, Some(Value::Object(fields))) = (result.action, schema.get("properties")) {
        let content = result.content.get_or_insert_with(JsonObject::new);
        for (name, field) in fields {
            if let (false, Some(default)) = (content.contains_key(name), field.get("default")) {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    result
}

/// A form a server asks the user to fill in (`elicitation/create`, form mode).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FormQuestion {
    /// What the server asks, for the user to read.
    pub message: String,
    /// The form: a flat object schema of primitive properties, in the order to show them.
    pub schema: FormSchema,
    /// The request's `_meta` (an app to render it with, for hosts that render apps).
    pub meta: Option<JsonObject>,
}

/// A URL a server asks the user to open (`elicitation/create`, URL mode): the interaction
/// happens there, out of band. Accepting means the user agreed to open it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct UrlQuestion {
    /// Why the user should open it.
    pub message: String,
    /// The URL.
    pub url: String,
}

impl Answers {
    /// No answers: the client declares no capability, and servers ask it nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers forms (declared as `elicitation.form`). A field the answer leaves out is
    /// sent with the form's default for it, if it has one (SEP-1034).
    #[must_use]
    pub fn forms<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(FormQuestion) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, BoxError>> + Send + 'static,
    {
        self.form = Some(Arc::new(move |question| answer(question).boxed()));
        self
    }

    /// Answers URL elicitations (declared as `elicitation.url`).
    #[must_use]
    pub fn urls<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(UrlQuestion) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, BoxError>> + Send + 'static,
    {
        self.url = Some(Arc::new(move |question| answer(question).boxed()));
        self
    }

    /// Answers sampling requests with the application's model (declared as `sampling`).
    #[must_use]
    pub fn sampling<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(CreateMessageParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, BoxError>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |request| answer(request).boxed()));
        self
    }

    /// Answers `roots/list` (declared as `roots`).
    #[must_use]
    pub fn roots<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, BoxError>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move |()| answer().boxed()));
        self
    }

    /// Answers that send every question on to `to`, as asked: a gateway's, which puts
    /// them to its own caller (and gates them on what that caller declared). They declare
    /// every kind of question.
    pub(crate) fn relaying(to: mpsc::Sender<Relayed>) -> Self {
        Self { relay: Some(to), every_kind: true, ..Self::default() }
    }

    /// Answers that declare every kind of question and answer none here: a gateway's
    /// client's own, whose questions are relayed per request.
    pub(super) fn declaring_every_kind() -> Self {
        Self { every_kind: true, ..Self::default() }
    }

    /// Whether these answers declare every kind of question.
    pub(super) fn declare_every_kind(&self) -> bool {
        self.every_kind
    }

    /// Where questions are relayed, if these answers relay them.
    pub(super) fn relay(&self) -> Option<&mpsc::Sender<Relayed>> {
        self.relay.as_ref()
    }

    /// The client capabilities these answers declare, as sent in every request's `_meta`.
    pub fn capabilities(&self) -> Value {
        if self.every_kind {
            return json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}});
        }
        let mut capabilities = Map::new();
        let mut elicitation = Map::new();
        if self.form.is_some() {
            elicitation.insert("form".into(), json!({}));
        }
        if self.url.is_some() {
            elicitation.insert("url".into(), json!({}));
        }
        if !elicitation.is_empty() {
            capabilities.insert("elicitation".into(), Value::Object(elicitation));
        }
        if self.sampling.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            capabilities.insert("roots".into(), json!({}));
        }
        Value::Object(capabilities)
    }

    /// The answer to the question under `key`, as it goes in `inputResponses`.
    pub(super) async fn answer(&self, key: &str, request: InputRequest) -> Result<Value, ClientError> {
        let unanswerable = |kind: &str| ClientError::Unanswerable { key: key.to_owned(), kind: kind.to_owned() };
        let failed = |error: BoxError| ClientError::Answer { key: key.to_owned(), error };
        let answer = match request {
            InputRequest::Elicit(ElicitParams::Form { message, requested_schema, meta }) => {
                let answer = self.form.as_ref().ok_or_else(|| unanswerable("a form (elicitation)"))?;
                let schema = requested_schema.clone();
                let result = answer(FormQuestion { message, schema: requested_schema, meta }).await.map_err(failed)?;
                serde_json::to_value(with_defaults(result, &schema))
            }
            InputRequest::Elicit(ElicitParams::Url { message, url }) => {
                let answer = self.url.as_ref().ok_or_else(|| unanswerable("a URL (elicitation)"))?;
                serde_json::to_value(answer(UrlQuestion { message, url }).await.map_err(failed)?)
            }
            InputRequest::Sample(params) => {
                let answer = self.sampling.as_ref().ok_or_else(|| unanswerable("a sampling request"))?;
                serde_json::to_value(answer(*params).await.map_err(failed)?)
            }
            InputRequest::ListRoots(_) => {
                let answer = self.roots.as_ref().ok_or_else(|| unanswerable("roots"))?;
                serde_json::to_value(answer(()).await.map_err(failed)?)
            }
        };
        // The answer types serialize to objects whatever they hold.
        answer.map_err(|error| failed(Box::new(error)))
    }
}

/// One question (`method` and `params`) with its defaults filled in.
pub(super) fn with_defaults_of(mut request: JsonObject) -> JsonObject {
    let elicits = request.get("method").and_then(Value::as_str) == Some("elicitation/create");
    let params = request.entry("params").or_insert_with(|| Value::Object(JsonObject::new()));
    if let (true, Value::Object(params)) = (elicits, params) {
        params.entry("mode").or_insert_with(|| Value::String("form".into()));
    }
    request
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn an_accepted_form_gets_the_defaults_its_answer_leaves_out() {
        let answers = Answers::new().forms(|_| async { Ok(ElicitResult::accept_as(&json!({"name": "Ada"}))?) });
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"},
        }});
        let params =
            ElicitParams::Form { message: "Who?".into(), requested_schema: FormSchema::new(schema), meta: None };
        let answer = answers.answer("k", InputRequest::Elicit(params.clone())).await.unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": {"name": "Ada", "age": 30}}));
        // A declined form sends nothing.
        let declining = Answers::new().forms(|_| async { Ok(ElicitResult::decline()) });
        assert_eq!(declining.answer("k", InputRequest::Elicit(params)).await.unwrap(), json!({"action": "decline"}));
        let error = Answers::new().answer("k", InputRequest::ListRoots(JsonObject::new())).await.unwrap_err();
        assert!(matches!(error, ClientError::Unanswerable { .. }), "{error}");
    }
}
