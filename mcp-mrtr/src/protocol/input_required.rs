//! Multi round-trip requests (SEP-2322): the `input_required` result, the requests it may
//! embed (elicitation, sampling, roots) and the results clients answer them with.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{JsonObject, Role, Tool};

/// The body of an `input_required` result: questions for the client, and state to echo.
///
/// At least one of the two is present: questions with state, or state alone ("retry
/// later"). Keys are ordered, so the wire form is deterministic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InputRequiredResult {
    /// The questions, by key; the client answers each under the same key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<String, InputRequest>>,
    /// Opaque state the client echoes on its retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl InputRequiredResult {
    /// A result asking `requests` (by key) and carrying `request_state`. A handler ends a
    /// round with one through [`Ctx::input_required`](crate::Ctx::input_required), which
    /// seals the state.
    pub fn new(requests: BTreeMap<String, InputRequest>, request_state: Option<String>) -> Self {
        Self { input_requests: (!requests.is_empty()).then_some(requests), request_state }
    }
}

/// A request embedded in an `input_required` result: one of the three a server may ask.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "method", content = "params")]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`: ask the user.
    #[serde(rename = "elicitation/create")]
    Elicit(ElicitParams),
    /// `sampling/createMessage`: ask the client's model. Boxed: its parameters are three
    /// times the others', and every map of requests would pay for them in each entry
    /// (a map's node of inline sampling requests outgrew the allocator's fast path).
    #[serde(rename = "sampling/createMessage")]
    Sample(Box<CreateMessageParams>),
    /// `roots/list`: ask for the client's roots. Its params are optional on the wire.
    #[serde(rename = "roots/list")]
    ListRoots(JsonObject),
}

/// The methods an [`InputRequest`] may name, as read.
#[derive(Clone, Copy, Deserialize)]
enum Asked {
    #[serde(rename = "elicitation/create")]
    Elicit,
    #[serde(rename = "sampling/createMessage")]
    Sample,
    #[serde(rename = "roots/list")]
    ListRoots,
}

/// The members of an [`InputRequest`] that mean something; others are passed over.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Method,
    Params,
    #[serde(other)]
    Other,
}

/// The request whose `params` the deserializer holds: read in place from the message
/// when `method` came first, or from a tree when `params` came ahead of it.
impl<'de> DeserializeSeed<'de> for Asked {
    type Value = InputRequest;

    fn deserialize<D: serde::Deserializer<'de>>(self, params: D) -> Result<InputRequest, D::Error> {
        Ok(match self {
            Self::Elicit => InputRequest::Elicit(Deserialize::deserialize(params)?),
            Self::Sample => InputRequest::Sample(Deserialize::deserialize(params)?),
            Self::ListRoots => InputRequest::ListRoots(Deserialize::deserialize(params)?),
        })
    }
}

/// Reads an [`InputRequest`] as derived adjacent tagging would, in one pass when `method`
/// comes first (as every server here writes it), but a `roots/list` may come without
/// `params`, as the schema allows (rmcp 3.11 sends it so).
impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Request;
        impl<'de> Visitor<'de> for Request {
            type Value = InputRequest;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an input request: its method and params")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InputRequest, A::Error> {
                let (mut asked, mut ahead, mut request) = (None::<Asked>, None::<Value>, None);
                while let Some(member) = map.next_key::<Member>()? {
                    match member {
                        Member::Method if asked.is_some() => return Err(A::Error::duplicate_field("method")),
                        Member::Method => asked = Some(map.next_value()?),
                        Member::Params if request.is_some() || ahead.is_some() => {
                            return Err(A::Error::duplicate_field("params"));
                        }
                        Member::Params => match asked {
                            Some(asked) => request = Some(map.next_value_seed(asked)?),
                            None => ahead = Some(map.next_value()?),
                        },
                        Member::Other => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                let asked = asked.ok_or_else(|| A::Error::missing_field("method"))?;
                match (request, ahead, asked) {
                    (Some(request), _, _) => Ok(request),
                    (None, Some(params), asked) => asked.deserialize(params).map_err(A::Error::custom),
                    (None, None, Asked::ListRoots) => Ok(InputRequest::ListRoots(JsonObject::new())),
                    (None, None, _) => Err(A::Error::missing_field("params")),
                }
            }
        }
        deserializer.deserialize_map(Request)
    }
}

/// `elicitation/create` parameters, by mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitParams {
    /// A form the client renders from a flat schema.
    #[serde(rename_all = "camelCase")]
    Form {
        /// What to ask.
        message: String,
        /// A flat object schema of primitive properties.
        requested_schema: FormSchema,
        /// Metadata: `ui.resourceUri` names the app a host that renders elicitations as
        /// apps shows instead of the form (SEP-3118, a draft).
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<JsonObject>,
    },
    /// A URL the user opens to complete the interaction out of band.
    Url {
        /// Why the user should open it.
        message: String,
        /// The URL.
        url: String,
    },
}

/// A form's `requestedSchema`: a JSON value, shared rather than copied, and written out
/// as the JSON text it was serialized to once.
///
/// An ask sends the same form every round; this keeps a round from copying and
/// re-serializing its schema. It reads as the [`Value`] it holds.
///
/// ```
/// use mcp_mrtr::protocol::FormSchema;
/// use serde_json::json;
///
/// let schema = FormSchema::new(json!({"type": "object", "properties": {"name": {"type": "string"}}}));
/// assert_eq!(schema["properties"]["name"]["type"], "string");
/// // Written in the order it was built: hosts render a form's fields in wire order.
/// assert_eq!(serde_json::to_string(&schema).unwrap(), r#"{"type":"object","properties":{"name":{"type":"string"}}}"#);
/// assert_eq!(schema.to_string(), schema.as_json());
/// ```
#[derive(Clone)]
pub struct FormSchema(Arc<Written>);

struct Written {
    value: Value,
    text: Box<RawValue>,
}

impl FormSchema {
    /// Wraps `value`, serializing it once.
    pub fn new(value: Value) -> Self {
        // A `Value` always serializes (the `null` fallback is never taken).
        let text = serde_json::value::to_raw_value(&value).unwrap_or_default();
        Self(Arc::new(Written { value, text }))
    }

    /// The schema as a JSON value.
    pub fn as_value(&self) -> &Value {
        &self.0.value
    }

    /// The schema as compact JSON text.
    pub fn as_json(&self) -> &str {
        self.0.text.get()
    }
}

impl std::ops::Deref for FormSchema {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl From<Value> for FormSchema {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

impl PartialEq for FormSchema {
    fn eq(&self, other: &Self) -> bool {
        self.0.value == other.0.value
    }
}

/// The schema as the compact JSON text the client gets.
impl std::fmt::Display for FormSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_json())
    }
}

impl std::fmt::Debug for FormSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl Serialize for FormSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.text.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for FormSchema {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::new)
    }
}

/// `sampling/createMessage` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageParams {
    /// The conversation to continue.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// A system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which model the server would like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// `"none"`, `"thisServer"` or `"allServers"` (needs `sampling.context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Tools the model may call (needs `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model should use the tools (needs `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

impl CreateMessageParams {
    /// A request to continue `messages` with at most `max_tokens`, nothing else set.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u32) -> Self {
        Self {
            messages,
            max_tokens,
            system_prompt: None,
            model_preferences: None,
            include_context: None,
            temperature: None,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
        }
    }
}

/// One message of a sampling conversation. `content` is a block or an array of blocks
/// (`text`, `image`, `audio`, `tool_use`, `tool_result`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: Value,
}

impl SamplingMessage {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: serde_json::json!({ "type": "text", "text": text.into() }) }
    }
}

/// The server's model preferences.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelPreferences {
    /// Model names or families, most preferred first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<ModelHint>,
    /// 0–1: how much cost matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// 0–1: how much speed matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// 0–1: how much capability matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
}

/// A model name hint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelHint {
    /// A full or partial model name.
    pub name: String,
}

/// `toolChoice` of a sampling request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolChoice {
    /// `"auto"`, `"required"` or `"none"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// The user's answer to an elicitation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The form's values, for an accepted form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
}

impl ElicitResult {
    /// The user submitted the form with these values.
    pub fn accept(content: JsonObject) -> Self {
        Self { action: ElicitAction::Accept, content: Some(content) }
    }

    /// The user submitted the form with `values`, a struct (or map) whose fields are the
    /// form's: the type a server would ask with, written out as its answer.
    ///
    /// ```
    /// use mcp_mrtr::protocol::ElicitResult;
    /// # #[derive(serde::Serialize)]
    /// # struct Contact { email: String }
    ///
    /// let answer = ElicitResult::accept_as(&Contact { email: "ada@example.com".into() }).unwrap();
    /// assert_eq!(answer.content.unwrap()["email"], "ada@example.com");
    /// ```
    ///
    /// # Errors
    ///
    /// When `values` does not serialize to a JSON object.
    pub fn accept_as<T: Serialize + ?Sized>(values: &T) -> Result<Self, serde_json::Error> {
        match serde_json::to_value(values)? {
            Value::Object(content) => Ok(Self::accept(content)),
            other => Err(serde::ser::Error::custom(format!("a form's answer is a JSON object, not {other}"))),
        }
    }

    /// The user agreed, with nothing to send back: the answer to a URL elicitation, whose
    /// interaction happens at the URL.
    pub fn accepted() -> Self {
        Self { action: ElicitAction::Accept, content: None }
    }

    /// The user said no.
    pub fn decline() -> Self {
        Self { action: ElicitAction::Decline, content: None }
    }

    /// The user dismissed the question without answering.
    pub fn cancel() -> Self {
        Self { action: ElicitAction::Cancel, content: None }
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted it.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it.
    Cancel,
}

/// The client model's answer to a sampling request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateMessageResult {
    /// Who speaks (the assistant).
    pub role: Role,
    /// A block or an array of blocks.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

impl CreateMessageResult {
    /// The assistant's answer, by `model`, as one text block (stopped at the end of its turn).
    pub fn from_text(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: serde_json::json!({"type": "text", "text": text.into()}),
            model: model.into(),
            stop_reason: Some("endTurn".into()),
        }
    }

    /// The assistant's answer, by `model`: a content block or an array of them.
    pub fn new(model: impl Into<String>, content: Value) -> Self {
        Self { role: Role::Assistant, content, model: model.into(), stop_reason: None }
    }

    /// The same answer, saying why generation stopped (`endTurn`, `maxTokens`, …).
    #[must_use]
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// The text of the answer: its text blocks, joined.
    pub fn text(&self) -> String {
        let blocks = match &self.content {
            Value::Array(blocks) => blocks.iter().collect(),
            block => vec![block],
        };
        blocks.into_iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect()
    }
}

/// The client's roots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}

impl ListRootsResult {
    /// These roots.
    pub fn new(roots: Vec<Root>) -> Self {
        Self { roots }
    }
}

/// A root: a directory or file the client exposes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root at `uri` (a `file://` URI).
    pub fn new(uri: impl Into<String>) -> Self {
        Self { uri: uri.into(), name: None }
    }

    /// The same root, with a name to show.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_roots_request_reads_with_or_without_params_and_others_need_theirs() {
        let bare: InputRequest = serde_json::from_value(json!({"method": "roots/list"})).unwrap();
        assert_eq!(bare, InputRequest::ListRoots(JsonObject::new()));
        let with: InputRequest = serde_json::from_value(json!({"method": "roots/list", "params": {}})).unwrap();
        assert_eq!(with, bare);
        assert_eq!(serde_json::to_value(&bare).unwrap(), json!({"method": "roots/list", "params": {}}));
        assert!(serde_json::from_value::<InputRequest>(json!({"method": "sampling/createMessage"})).is_err());
        assert!(serde_json::from_value::<InputRequest>(json!({"method": "tools/call", "params": {}})).is_err());
        // Params ahead of the method read the same, from text as from a value.
        let text = r#"{"params": {"mode": "url", "message": "Open", "url": "https://a.example"}, "method": "elicitation/create"}"#;
        let ahead: InputRequest = serde_json::from_str(text).unwrap();
        let value: InputRequest = serde_json::from_value(serde_json::from_str(text).unwrap()).unwrap();
        assert_eq!(ahead, value);
        assert!(matches!(ahead, InputRequest::Elicit(ElicitParams::Url { .. })));
        assert!(serde_json::from_str::<InputRequest>(r#"{"method": "roots/list", "method": "roots/list"}"#).is_err());
        assert!(serde_json::from_str::<InputRequest>(r#"{"params": {}}"#).is_err());
    }
}
