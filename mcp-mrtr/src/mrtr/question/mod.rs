//! Asking: the questions a handler can ask with `ask!` (typed builders for the three
//! embedded requests, and how each decodes the client's answer), and [`Ask`], the future
//! of one.
//!
//! Reach for them directly in a helper that several handlers share: `ask!(elicit …)`
//! is [`Ctx::ask`](crate::Ctx::ask) with an [`Elicit`] under a key.
//!
//! ```
//! use mcp_mrtr::question::Elicit;
//! use mcp_mrtr::prelude::*;
//! use mcp_mrtr::testing::{answer, TestClient};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Approval { approve: bool }
//!
//! /// Asks for sign-off; any tool can call it with its context.
//! async fn sign_off(ctx: &Ctx, what: &str) -> Result<bool, ToolError> {
//!     let approval: Approval = ctx.ask("approval", Elicit::new(format!("Approve {what}?"))).await?;
//!     Ok(approval.approve)
//! }
//!
//! /// Publishes the draft once approved.
//! #[tool(forms = [Approval])] // checked at registration, as its own asks would be
//! async fn publish(ctx: &Ctx) -> Result<String, ToolError> {
//!     Ok(if sign_off(ctx, "publishing").await? { "published" } else { "kept as draft" }.into())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = TestClient::new(Server::new("blog", "1.0.0").tool(publish));
//! let mut call = client.call_tool("publish", serde_json::json!({}));
//! assert_eq!(call.start().await.kinds()["approval"], "elicitation/create");
//! let done = call.answer([("approval", answer::accept(serde_json::json!({ "approve": true })))]).await;
//! assert_eq!(done.text().as_deref(), Some("published"));
//! # }
//! ```
//!
//! | ask | request | answer |
//! |---|---|---|
//! | [`Elicit<T>`] | `elicitation/create`, form from `T` | `Result<T, Declined>` |
//! | [`ElicitUrl`] | `elicitation/create`, url mode | `Result<(), Declined>` |
//! | [`Sample`] | `sampling/createMessage` | `Result<`[`CreateMessageResult`]`, `[`Refused`]`>` |
//! | [`Roots`] | `roots/list` | `Vec<Root>` |
//!
//! A form that does not decode (content not matching `T`) counts as no answer: the
//! question is asked again. A sampling request the client refused (the user rejected it:
//! a JSON-RPC error in answer to the request, on either revision) is a value, [`Refused`],
//! so the handler can run its fallback; an answer that is neither a result nor a refusal
//! fails the call (`-32602`) rather than being asked again round after round. An answer that decodes is kept (sealed into
//! the request state) as the question normalized it: fields the question does not know
//! are dropped, so a client cannot make the state carry its junk.

use std::any::TypeId;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde::de::DeserializeOwned;
use serde::Deserialize as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::base::error::Error;
use crate::protocol::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, FormSchema, InputRequest,
    JsonObject, ListRootsResult, ModelHint, ModelPreferences, Root, SamplingMessage, Tool, ToolChoice,
};

mod ask;
pub use self::ask::Ask;

/// A question a handler can ask the client.
pub trait Question {
    /// What the handler gets back.
    type Output;

    /// The request embedded in `inputRequests`.
    fn request(&self) -> Result<InputRequest, Error>;

    /// Decodes the client's answer into what the handler gets and the answer worth
    /// keeping for later rounds (without fields the question does not know); `None` when
    /// it is malformed (the question is asked again). Decoding the kept answer again must
    /// give the same output.
    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)>;

    /// Whether an answer that does not decode is asked again (a form: the person may
    /// still fill it in), rather than failing the call with `-32602` naming the key.
    fn asks_again_when_malformed(&self) -> bool {
        true
    }

    /// Decodes an answer this question kept in an earlier round (the second half of what
    /// [`decode`](Question::decode) returned): every later round reads it again. By
    /// default `decode` on a copy; a question can read it in place.
    fn decode_kept(&self, kept: &Value) -> Option<Self::Output> {
        self.decode(kept.clone()).map(|(output, _)| output)
    }

    /// What answers are pinned to: equal for equal questions, different whenever the
    /// request would differ. By default a digest of the request as JSON; a question can
    /// give one that is cheaper to compute (every round computes it).
    fn digest(&self) -> Result<String, Error> {
        Ok(request_digest(&self.request()?))
    }
}

/// The digest of `request` as JSON: what an answer to it is pinned to, for questions
/// without a cheaper digest of their own and for requests built by hand.
pub(crate) fn request_digest(request: &InputRequest) -> String {
    hex_digest(Sha256::digest(serde_json::to_vec(request).unwrap_or_default()))
}

/// The first half of a SHA-256, in hex: what answers and asked questions are pinned to.
fn hex_digest(hash: impl AsRef<[u8]>) -> String {
    crate::base::hex::encode(&hash.as_ref()[..16])
}

pub use crate::base::error::Declined;

/// Types that can be asked for with a form: a flat object of string, number, integer,
/// boolean and enum properties.
///
/// Implemented for every `Deserialize + JsonSchema` type; a type whose schema does not
/// fit is reported when the server starts (for the forms a `#[tool]` asks for itself) or
/// when the form is first built, naming the offending property.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be asked for with a form",
    label = "the answer is read as `{Self}`",
    note = "derive both traits a form needs: `#[derive(Deserialize, JsonSchema)]` on `{Self}` (from `mcp_mrtr::prelude`), a flat struct of strings, numbers, booleans and enums"
)]
pub trait ElicitForm: DeserializeOwned + Send + 'static {
    /// The `requestedSchema` of the form. Asks call it once per type and keep the answer.
    fn requested_schema() -> Result<Value, String>;
}

impl<T: DeserializeOwned + schemars::JsonSchema + Send + 'static> ElicitForm for T {
    fn requested_schema() -> Result<Value, String> {
        crate::base::form_schema::from_schemars(&schemars::schema_for!(T).to_value())
    }
}

/// A form as asks use it: its schema, and the schema's digest for [`Question::digest`].
struct Form {
    schema: FormSchema,
    digest: [u8; 32],
}

/// The forms built so far, by type: the form, or why the type cannot be one.
type Forms = RwLock<HashMap<TypeId, Result<Arc<Form>, String>>>;

/// The form of `T`, built once per type: schema generation is not free, every round of
/// every ask needs the form, and it never changes.
fn form<T: ElicitForm>() -> Result<Arc<Form>, Error> {
    static FORMS: OnceLock<Forms> = OnceLock::new();
    let forms = FORMS.get_or_init(RwLock::default);
    let known = forms.read().unwrap_or_else(PoisonError::into_inner).get(&TypeId::of::<T>()).cloned();
    let form = known.unwrap_or_else(|| {
        let built = T::requested_schema().map(|schema| {
            let schema = FormSchema::new(schema);
            let digest = Sha256::digest(schema.as_json()).into();
            Arc::new(Form { schema, digest })
        });
        // Once per type, for the server's operator, in the log or, with no log installed
        // (none of the guide's servers installs one), on stderr.
        if let Err(problem) = &built {
            let form = std::any::type_name::<T>();
            let hint = "declare it with `forms = [...]` on the handler to have it checked at start-up";
            if tracing::dispatcher::has_been_set() {
                tracing::error!(form, %problem, "a handler asks for a type that cannot be a form; {hint}");
            } else {
                eprintln!("mcp-mrtr: error: a handler asks for {form}, which cannot be a form: {problem}; {hint}");
            }
        }
        let mut forms = forms.write().unwrap_or_else(PoisonError::into_inner);
        forms.entry(TypeId::of::<T>()).or_insert(built).clone()
    });
    // The client reads why too: the shape of a form is no secret (the type's name stays out).
    form.map_err(|problem| {
        Error::internal(format!("the server cannot ask this question: its form is not valid: {problem}"))
    })
}

/// `elicitation/create` in form mode, asking for a `T`.
pub struct Elicit<T> {
    message: String,
    app: Option<String>,
    context: Option<Value>,
    form: PhantomData<fn() -> T>,
}

impl<T> Elicit<T> {
    /// A form with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), app: None, context: None, form: PhantomData }
    }

    /// Asks through an app: the `ui://` resource (an [`App`](crate::apps::App) the server
    /// serves) that a host rendering elicitations as apps shows instead of the form
    /// (SEP-3118, **experimental**: the draft may change). `ask!(elicit "…", app = "ui://…")`
    /// calls it.
    ///
    /// Only a client that declares it (`elicitation` inside its
    /// `io.modelcontextprotocol/ui` extension, besides form elicitation) is sent the app;
    /// every other client gets the same question as a form. Either way the answer is the
    /// form's: the app's `content` is read as a `T`, a decline or cancel stays a value.
    /// A URI that is not `ui://…` fails the call (`-32603`) naming it.
    pub fn app(mut self, uri: impl Into<String>) -> Self {
        self.app = Some(uri.into());
        self
    }

    /// What the app needs to show besides the message: the plan to approve, the files to
    /// pick from. It travels in the request's `_meta` under
    /// [`apps::CONTEXT`](crate::apps::CONTEXT), which hosts hand the app unchanged; only
    /// clients sent the app get it. An answer is pinned to it: if the context changes
    /// between rounds, the question is asked again. Without [`app`](Self::app) it is not
    /// sent. `ask!(elicit "…", app = "ui://…", app_context = json!({…}))` calls it.
    pub fn app_context(mut self, context: impl serde::Serialize) -> Self {
        self.context = Some(serde_json::to_value(context).unwrap_or(Value::Null));
        self
    }
}

impl<T: ElicitForm> Question for Elicit<T> {
    type Output = Result<T, Declined>;

    fn request(&self) -> Result<InputRequest, Error> {
        let schema = form::<T>()?.schema.clone();
        let meta = self.app.as_deref().map(|uri| app_meta(uri, self.context.as_ref())).transpose()?;
        Ok(InputRequest::Elicit(ElicitParams::Form { message: self.message.clone(), requested_schema: schema, meta }))
    }

    /// Of the message, the form's cached digest (the schema is not written out again) and
    /// the app's context. The app itself is left out: an answer from the app and one from
    /// the form it falls back to answer the same question.
    fn digest(&self) -> Result<String, Error> {
        let form = form::<T>()?;
        let mut hasher = Sha256::new();
        hasher.update(b"elicitation/create form\0");
        hasher.update((self.message.len() as u64).to_be_bytes());
        hasher.update(self.message.as_bytes());
        hasher.update(form.digest);
        if let Some(context) = &self.context {
            hasher.update(b"\0app context\0");
            hasher.update(serde_json::to_vec(context).unwrap_or_default());
        }
        Ok(hex_digest(hasher.finalize()))
    }

    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)> {
        let result: ElicitResult = serde_json::from_value(answer).ok()?;
        match result.action {
            ElicitAction::Accept => {
                let content = form_fields::<T>(result.content?);
                let output = T::deserialize(&content).ok()?;
                Some((Ok(output), kept_elicit(ElicitAction::Accept, Some(content))))
            }
            ElicitAction::Decline => Some((Err(Declined::Decline), kept_elicit(ElicitAction::Decline, None))),
            ElicitAction::Cancel => Some((Err(Declined::Cancel), kept_elicit(ElicitAction::Cancel, None))),
        }
    }

    /// Read in place: a kept answer holds only the form's fields already.
    fn decode_kept(&self, kept: &Value) -> Option<Self::Output> {
        match ElicitAction::deserialize(kept.get("action")?).ok()? {
            ElicitAction::Accept => T::deserialize(kept.get("content")?).ok().map(Ok),
            ElicitAction::Decline => Some(Err(Declined::Decline)),
            ElicitAction::Cancel => Some(Err(Declined::Cancel)),
        }
    }
}

/// `_meta` naming the app that renders an elicitation, and what the app is given.
fn app_meta(uri: &str, context: Option<&Value>) -> Result<JsonObject, Error> {
    if !crate::protocol::apps::is_app_uri(uri) {
        return Err(Error::internal(format!("an elicitation's app must be a ui:// resource, not {uri:?}")));
    }
    let mut meta = JsonObject::new();
    meta.insert("ui".into(), serde_json::json!({ "resourceUri": uri }));
    if let Some(context) = context {
        meta.insert(crate::protocol::apps::CONTEXT.into(), context.clone());
    }
    Ok(meta)
}

/// `elicitation/create` in url mode: the user completes something at a URL.
///
/// `Ok(())` means the user agreed to open it, not that the work there is done: check
/// your own records, and ask again if it is not. When the step is done, call
/// [`Ctx::complete_url_elicitation`](crate::Ctx::complete_url_elicitation) with the ask's
/// key: a 2025-11-25 client then gets `notifications/elicitation/complete` naming the
/// `elicitationId` the bridge issued; a 2026-07-28 client, whose revision has neither, gets
/// nothing and learns the outcome from the call's result.
///
/// ```no_run
/// use mcp_mrtr::prelude::*;
///
/// # async fn linked(_user: &str) {}
/// /// Links the user's account.
/// #[tool]
/// async fn link(ctx: &Ctx, user: String) -> Result<String, ToolError> {
///     let url = format!("https://example.com/link?user={user}");
///     ask!(key = "link", elicit_url "Link your account", url)?;
///     // Your own records say when the user is done there (a database, a channel).
///     linked(&user).await;
///     ctx.complete_url_elicitation("link").await;
///     Ok("linked".into())
/// }
/// ```
pub struct ElicitUrl {
    message: String,
    url: String,
}

impl ElicitUrl {
    /// A url elicitation.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self { message: message.into(), url: url.into() }
    }
}

impl Question for ElicitUrl {
    type Output = Result<(), Declined>;

    fn request(&self) -> Result<InputRequest, Error> {
        Ok(InputRequest::Elicit(ElicitParams::Url { message: self.message.clone(), url: self.url.clone() }))
    }

    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)> {
        let result: ElicitResult = serde_json::from_value(answer).ok()?;
        let output = match result.action {
            ElicitAction::Accept => Ok(()),
            ElicitAction::Decline => Err(Declined::Decline),
            ElicitAction::Cancel => Err(Declined::Cancel),
        };
        Some((output, kept_elicit(result.action, None)))
    }
}

/// `sampling/createMessage`: ask the client's model.
///
/// **Deprecated in 2026-07-28** (SEP-2577), still served: clients of that revision may
/// stop offering `sampling`, and a call that needs it then fails with `-32021`. For new
/// tools, call a model provider from the server itself; to ask the person, use
/// [`Elicit`]. Existing tools keep working, and no compiler warning marks them (a
/// `#[deprecated]` would break `-D warnings` builds that must still support older clients).
pub struct Sample {
    params: CreateMessageParams,
}

impl Sample {
    /// Sampling on one user message, with at most 1000 tokens.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self::conversation(vec![SamplingMessage::user_text(prompt)])
    }

    /// Sampling that continues a whole conversation.
    pub fn conversation(messages: Vec<SamplingMessage>) -> Self {
        Self { params: CreateMessageParams::new(messages, 1000) }
    }

    /// The most tokens to generate.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.params.max_tokens = max_tokens;
        self
    }

    /// A system prompt.
    pub fn system(mut self, system_prompt: impl Into<String>) -> Self {
        self.params.system_prompt = Some(system_prompt.into());
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.params.temperature = Some(temperature);
        self
    }

    /// Adds a model name hint (most preferred first).
    pub fn model_hint(mut self, name: impl Into<String>) -> Self {
        let prefs = self.params.model_preferences.get_or_insert_with(ModelPreferences::default);
        prefs.hints.push(ModelHint { name: name.into() });
        self
    }

    /// Model preferences wholesale.
    pub fn model_preferences(mut self, preferences: ModelPreferences) -> Self {
        self.params.model_preferences = Some(preferences);
        self
    }

    /// Tools the model may call; needs the client's `sampling.tools`.
    pub fn tools(mut self, tools: Vec<Tool>) -> Self {
        self.params.tools = Some(tools);
        self
    }

    /// `"auto"`, `"required"` or `"none"`; needs the client's `sampling.tools`.
    pub fn tool_choice(mut self, mode: impl Into<String>) -> Self {
        self.params.tool_choice = Some(ToolChoice { mode: Some(mode.into()) });
        self
    }
}

impl Question for Sample {
    type Output = Result<CreateMessageResult, Refused>;

    fn request(&self) -> Result<InputRequest, Error> {
        Ok(InputRequest::Sample(self.params.clone()))
    }

    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)> {
        if let Some(refused) = Refused::of(&answer) {
            let kept = serde_json::json!({ "error": { "code": refused.code, "message": refused.message } });
            return Some((Err(refused), kept));
        }
        let result: CreateMessageResult = serde_json::from_value(answer).ok()?;
        let kept = kept(&result);
        Some((Ok(result), kept))
    }

    fn asks_again_when_malformed(&self) -> bool {
        false
    }
}

/// A sampling request the client refused: what hosts answer when the user rejects it, or
/// when they sample for nobody. Through `?` it ends a tool as an execution error the model
/// reads; `match` it to fall back on something else.
///
/// ```
/// use mcp_mrtr::prelude::*;
///
/// /// Summarises a text, with the client's model when it lets us.
/// #[tool]
/// async fn summarize(text: String) -> Result<String, ToolError> {
///     match ask!(key = "summary", sample format!("Summarize: {text}")) {
///         Ok(summary) => Ok(summary.text()),
///         // The user said no: the first sentence will do.
///         Err(_refused) => Ok(text.split('.').next().unwrap_or_default().to_owned()),
///     }
/// }
/// # let _ = summarize;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refused {
    /// The JSON-RPC error code the client answered with.
    pub code: i64,
    /// Its message.
    pub message: String,
}

impl Refused {
    /// The refusal an answer carries: `{"error": {"code", "message"}}` (how a refused
    /// request's JSON-RPC error reaches `inputResponses`, and how the 2025-11-25 bridge
    /// files one), or a bare error object `{"code", "message"}`.
    fn of(answer: &Value) -> Option<Self> {
        let error = answer.get("error").unwrap_or(answer);
        let code = error.get("code")?.as_i64()?;
        let message = error.get("message")?.as_str()?.to_owned();
        Some(Self { code, message })
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the client refused the sampling request: {}", self.message)
    }
}

impl std::error::Error for Refused {}

/// `roots/list`: the client's roots.
///
/// **Deprecated in 2026-07-28** (SEP-2577), still served: clients may stop offering
/// `roots`. For new tools, take the paths as arguments, or ask for them with [`Elicit`].
pub struct Roots;

impl Question for Roots {
    type Output = Vec<Root>;

    fn request(&self) -> Result<InputRequest, Error> {
        Ok(InputRequest::ListRoots(JsonObject::new()))
    }

    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)> {
        let result: ListRootsResult = serde_json::from_value(answer).ok()?;
        let kept = kept(&result);
        Some((result.roots, kept))
    }
}

/// The accepted form's fields that the form asked for; the rest is dropped.
fn form_fields<T: ElicitForm>(mut content: JsonObject) -> JsonObject {
    let Ok(form) = form::<T>() else { return JsonObject::new() };
    match form.schema.get("properties").and_then(Value::as_object) {
        Some(properties) => {
            content.retain(|name, _| properties.contains_key(name));
            content
        }
        // No schema means the question could not be asked, so nothing was answered.
        None => JsonObject::new(),
    }
}

/// A decoded answer as JSON again. Our protocol types always serialize.
fn kept<T: serde::Serialize>(answer: &T) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}

/// An elicitation's kept answer, `content` moved in rather than copied: what
/// [`kept`] makes of an [`ElicitResult`].
fn kept_elicit(action: ElicitAction, content: Option<JsonObject>) -> Value {
    let mut answer = JsonObject::new();
    answer.insert("action".into(), kept(&action));
    if let Some(content) = content {
        answer.insert("content".into(), Value::Object(content));
    }
    Value::Object(answer)
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct City {
        city: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Town {
        town: String,
    }

    /// Answers are pinned to the digest: it must change with the message and with the
    /// form, and stay the same for the same question.
    #[test]
    fn a_form_s_digest_follows_its_message_and_its_form() {
        let city = Elicit::<City>::new("Where?").digest().unwrap();
        assert_eq!(city, Elicit::<City>::new("Where?").digest().unwrap());
        assert_ne!(city, Elicit::<City>::new("Where to?").digest().unwrap());
        assert_ne!(city, Elicit::<Town>::new("Where?").digest().unwrap());
        assert_eq!(city.len(), 32);
    }

    /// A kept answer holds only the fields the form asked for, and decodes again alike.
    #[test]
    fn an_accepted_form_keeps_only_its_own_fields() {
        let question = Elicit::<City>::new("Where?");
        let answer = json!({"action": "accept", "content": {"city": "Lyon", "junk": 1}, "extra": true});
        let (output, kept) = question.decode(answer).expect("decodes");
        assert_eq!(output.expect("accepted").city, "Lyon");
        assert_eq!(kept, json!({"action": "accept", "content": {"city": "Lyon"}}));
        let (again, kept_again) = question.decode(kept.clone()).expect("decodes again");
        assert_eq!((again.expect("accepted").city, kept_again), ("Lyon".to_owned(), kept.clone()));
        // Read in place, the kept answer gives the same.
        assert_eq!(question.decode_kept(&kept).expect("decodes in place").expect("accepted").city, "Lyon");
    }

    /// Declines and cancels are kept as such and read in place alike; a kept answer that
    /// no longer fits the form (say, the type changed in an upgrade) is no answer.
    #[test]
    fn kept_answers_read_in_place_as_decode_reads_them() {
        let question = Elicit::<City>::new("Where?");
        for (action, declined) in [("decline", Declined::Decline), ("cancel", Declined::Cancel)] {
            let (output, kept) = question.decode(json!({"action": action})).expect("decodes");
            assert_eq!(output.err(), Some(declined));
            assert_eq!(kept, json!({"action": action}));
            assert_eq!(question.decode_kept(&kept).expect("decodes in place").err(), Some(declined));
        }
        assert!(question.decode_kept(&json!({"action": "accept", "content": {"town": "Lyon"}})).is_none());
        assert!(question.decode_kept(&json!({"action": "maybe"})).is_none());
    }
}
