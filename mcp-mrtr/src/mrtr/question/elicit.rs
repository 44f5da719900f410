//! Forms and URLs: [`Elicit`] (a form built from a type's schema, checked once per type),
//! [`ElicitUrl`], and how an accepted form's answer is kept (only the fields it asked for).

use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{OnceLock, PoisonError, RwLock};

use serde::de::DeserializeOwned;
use serde::Deserialize as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{hex_digest, kept, Question};
use crate::base::error::{Declined, Error};
use crate::protocol::{ElicitAction, ElicitParams, FormSchema, InputRequest, JsonObject};

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
/// Forms live as long as the process: one per type a handler asks for, never rebuilt, so
/// reading one takes no count of its users.
type Forms = RwLock<HashMap<TypeId, Result<&'static Form, String>>>;

/// The form of `T`, built once per type: schema generation is not free, every round of
/// every ask needs the form, and it never changes.
fn form<T: ElicitForm>() -> Result<&'static Form, Error> {
    thread_local! {
        /// The forms this thread read last: an ask reads its form three times a round, and
        /// the shared map's lock is a cache line every core writes to.
        static NEAR: RefCell<Vec<(TypeId, Result<&'static Form, String>)>> = const { RefCell::new(Vec::new()) };
    }
    /// Forms kept per thread, newest first; past that, the shared map answers.
    const NEAR_KEPT: usize = 8;
    let near = NEAR.with_borrow(|near| near.iter().find(|(ty, _)| *ty == TypeId::of::<T>()).map(|(_, f)| f.clone()));
    let form = near.unwrap_or_else(|| {
        let form = shared_form::<T>();
        NEAR.with_borrow_mut(|near| {
            near.truncate(NEAR_KEPT - 1);
            near.insert(0, (TypeId::of::<T>(), form.clone()));
        });
        form
    });
    // The client reads why too: the shape of a form is no secret (the type's name stays out).
    form.map_err(|problem| {
        Error::internal(format!("the server cannot ask this question: its form is not valid: {problem}"))
    })
}

/// The form of `T` from the map every thread shares, built there the first time (under
/// the write lock, so a form is built and kept once however many threads ask at once).
fn shared_form<T: ElicitForm>() -> Result<&'static Form, String> {
    static FORMS: OnceLock<Forms> = OnceLock::new();
    let forms = FORMS.get_or_init(RwLock::default);
    if let Some(known) = forms.read().unwrap_or_else(PoisonError::into_inner).get(&TypeId::of::<T>()) {
        return known.clone();
    }
    let mut forms = forms.write().unwrap_or_else(PoisonError::into_inner);
    let form = forms.entry(TypeId::of::<T>()).or_insert_with(|| {
        let built = T::requested_schema().map(|schema| {
            let schema = FormSchema::new(schema);
            let digest = Sha256::digest(schema.as_json()).into();
            &*Box::leak(Box::new(Form { schema, digest }))
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
        built
    });
    form.clone()
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
        let (action, content) = elicit_result(answer)?;
        match action {
            ElicitAction::Accept => {
                let content = form_fields::<T>(content?);
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
        let (action, _) = elicit_result(answer)?;
        let output = match action {
            ElicitAction::Accept => Ok(()),
            ElicitAction::Decline => Err(Declined::Decline),
            ElicitAction::Cancel => Err(Declined::Cancel),
        };
        Some((output, kept_elicit(action, None)))
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

/// An answer read as an [`ElicitResult`](crate::protocol::ElicitResult) (`None` where it
/// is not one), its `content` moved out of the tree: serde would build the object again,
/// hashing every key anew.
fn elicit_result(answer: Value) -> Option<(ElicitAction, Option<JsonObject>)> {
    let Value::Object(answer) = answer else { return None };
    // One pass over the members, no lookups: each lookup would hash its key.
    let (mut action, mut content) = (None, None);
    for (key, value) in answer {
        match key.as_str() {
            "action" => action = Some(ElicitAction::deserialize(&value).ok()?),
            "content" => {
                content = match value {
                    Value::Null => None,
                    Value::Object(content) => Some(content),
                    _ => return None,
                }
            }
            _ => {}
        }
    }
    Some((action?, content))
}

/// An elicitation's kept answer, `content` moved in rather than copied: what
/// [`kept`] makes of an [`ElicitResult`](crate::protocol::ElicitResult).
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

    #[test]
    fn answers_read_as_serde_reads_an_elicit_result() {
        for answer in [
            json!({ "action": "accept", "content": { "b": 1, "a": { "c": [2] } } }),
            json!({ "action": "accept" }),
            json!({ "action": "accept", "content": null, "_meta": {} }),
            json!({ "action": "accept", "content": [1] }),
            json!({ "action": "decline" }),
            json!({ "action": "cancel", "content": { "a": 1 } }),
            json!({ "action": "maybe" }),
            json!({ "content": {} }),
            json!("accept"),
        ] {
            let copied = serde_json::from_value::<crate::protocol::ElicitResult>(answer.clone())
                .ok()
                .map(|result| (result.action, result.content));
            assert_eq!(elicit_result(answer.clone()), copied, "{answer}");
        }
    }

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
