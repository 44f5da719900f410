//! Capability gating: which client capability each embedded request needs, checked
//! against what the client declared on *this* request.
//!
//! Entry points: [`Capability`], [`Ctx::client_supports`](crate::Ctx::client_supports),
//! and [`required_for`] / [`missing`] used by the replay driver before a round is sent.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::base::error::Error;
use crate::protocol::apps::{self, Declared};
use crate::protocol::{ClientCapabilities, ElicitParams, InputRequest};

/// A client capability a handler may need.
///
/// Handlers check one with [`Ctx::client_supports`](crate::Ctx::client_supports) (to
/// branch) or [`require_client_capability!`](crate::require_client_capability) (to fail
/// with `-32021`); the check itself reads the capabilities a request declared:
///
/// ```
/// use mcp_mrtr::{Capability, protocol::ClientCapabilities};
/// use serde_json::json;
///
/// let declared: ClientCapabilities = serde_json::from_value(json!({ "elicitation": {} })).unwrap();
/// // A bare `elicitation: {}` means forms, not URLs.
/// assert!(Capability::ElicitationForm.is_declared_in(&declared));
/// assert!(!Capability::ElicitationUrl.is_declared_in(&declared));
/// // What `-32021` names when it is missing:
/// assert_eq!(Capability::ElicitationUrl.as_object(), json!({ "elicitation": { "url": {} } }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Capability {
    /// Form-mode elicitation: `elicitation.form`, or a bare `elicitation: {}`.
    ElicitationForm,
    /// URL-mode elicitation: `elicitation.url`.
    ElicitationUrl,
    /// Sampling: `sampling`.
    Sampling,
    /// Sampling with `tools`/`toolChoice`: `sampling.tools`.
    SamplingTools,
    /// Listing roots: `roots`.
    Roots,
    /// The tasks extension: `extensions["io.modelcontextprotocol/tasks"]`.
    Tasks,
    /// MCP Apps: `extensions["io.modelcontextprotocol/ui"]` with `text/html;profile=mcp-app`
    /// among its `mimeTypes`. Such a client is shown tools' apps ([`apps`](crate::apps)).
    Apps,
    /// Elicitations rendered as apps (SEP-3118, a draft): [`Apps`](Self::Apps) with
    /// `elicitation: {}` inside the extension, and form elicitation. Such a client is sent
    /// the app an ask names ([`Elicit::app`](crate::question::Elicit::app)); any other, the form.
    AppElicitation,
}

impl Capability {
    /// Whether `caps` declares this capability.
    pub fn is_declared_in(self, caps: &ClientCapabilities) -> bool {
        match self {
            // A bare `elicitation: {}` predates modes and means form; declaring only
            // `url` does not imply form.
            Self::ElicitationForm => caps.elicitation.as_ref().is_some_and(|e| e.form.is_some() || e.url.is_none()),
            Self::ElicitationUrl => caps.elicitation.as_ref().is_some_and(|e| e.url.is_some()),
            Self::Sampling => caps.sampling.is_some(),
            Self::SamplingTools => caps.sampling.as_ref().is_some_and(|s| s.tools.is_some()),
            Self::Roots => caps.roots.is_some(),
            Self::Tasks => caps.extensions.as_ref().is_some_and(|e| e.contains_key(crate::protocol::TASKS_EXTENSION)),
            Self::Apps => Declared::by(caps).apps,
            Self::AppElicitation => Declared::by(caps).elicitation,
        }
    }

    /// This capability as a `ClientCapabilities` object, as `-32021` names it.
    pub fn as_object(self) -> Value {
        match self {
            Self::ElicitationForm => json!({ "elicitation": { "form": {} } }),
            Self::ElicitationUrl => json!({ "elicitation": { "url": {} } }),
            Self::Sampling => json!({ "sampling": {} }),
            Self::SamplingTools => json!({ "sampling": { "tools": {} } }),
            Self::Roots => json!({ "roots": {} }),
            Self::Tasks => json!({ "extensions": { crate::protocol::TASKS_EXTENSION: {} } }),
            Self::Apps => json!({ "extensions": { apps::EXTENSION: { "mimeTypes": [apps::MIME_TYPE] } } }),
            Self::AppElicitation => json!({
                "elicitation": { "form": {} },
                "extensions": { apps::EXTENSION: { "mimeTypes": [apps::MIME_TYPE], "elicitation": {} } }
            }),
        }
    }
}

/// The capability an embedded request needs.
pub(crate) fn required_for(request: &InputRequest) -> Capability {
    match request {
        InputRequest::Elicit(ElicitParams::Form { .. }) => Capability::ElicitationForm,
        InputRequest::Elicit(ElicitParams::Url { .. }) => Capability::ElicitationUrl,
        InputRequest::Sample(params) if params.tools.is_some() || params.tool_choice.is_some() => {
            Capability::SamplingTools
        }
        InputRequest::Sample(_) => Capability::Sampling,
        InputRequest::ListRoots(_) => Capability::Roots,
    }
}

/// The requests of a round as this client can take them: an elicitation's app (SEP-3118)
/// and the app's context only for a client that renders elicitations as apps; any other
/// gets the form alone.
pub(crate) fn rendered_for(caps: &ClientCapabilities, requests: &mut BTreeMap<String, InputRequest>) {
    let mut declared = None;
    for request in requests.values_mut() {
        let InputRequest::Elicit(ElicitParams::Form { meta: meta @ Some(_), .. }) = request else { continue };
        if *declared.get_or_insert_with(|| Declared::by(caps).elicitation) {
            continue;
        }
        if let Some(object) = meta.as_mut() {
            object.remove("ui");
            object.remove(apps::CONTEXT);
            if object.is_empty() {
                *meta = None;
            }
        }
    }
}

/// `Err(-32021)` naming every capability in `needed` that `caps` lacks, merged into one
/// `ClientCapabilities` object.
pub(crate) fn missing<N>(caps: &ClientCapabilities, needed: N) -> Result<(), Error>
where
    N: IntoIterator<Item = Capability>,
    N::IntoIter: Clone,
{
    let needed = needed.into_iter();
    // The usual case, checked on every call and every ask: all declared, nothing to build.
    if needed.clone().all(|capability| capability.is_declared_in(caps)) {
        return Ok(());
    }
    let needed: Vec<Capability> = needed.collect();
    let mut required = Map::new();
    for capability in needed.iter().filter(|c| !c.is_declared_in(caps)) {
        merge(&mut required, capability.as_object());
    }
    // A bare `elicitation: {}` means form only while no mode is named: a client that adds
    // the `url` we ask for would lose form, so when the round needs form too, say so.
    let form_is_implicit = caps.elicitation.as_ref().is_some_and(|e| e.form.is_none() && e.url.is_none());
    if form_is_implicit && needed.contains(&Capability::ElicitationForm) && required.contains_key("elicitation") {
        merge(&mut required, Capability::ElicitationForm.as_object());
    }
    if required.is_empty() {
        Ok(())
    } else {
        Err(Error::missing_client_capability(Value::Object(required)))
    }
}

/// Deep-merges the object `from` into `into`.
fn merge(into: &mut Map<String, Value>, from: Value) {
    let Value::Object(from) = from else { return };
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => merge(existing, Value::Object(more)),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{CreateMessageParams, SamplingMessage, ToolChoice};

    fn caps(value: Value) -> ClientCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn every_row_of_the_mapping() {
        use Capability::*;
        let rows: [(Value, [bool; 5]); 9] = [
            (json!({}), [false, false, false, false, false]),
            (json!({ "elicitation": {} }), [true, false, false, false, false]),
            (json!({ "elicitation": { "form": {} } }), [true, false, false, false, false]),
            (json!({ "elicitation": { "url": {} } }), [false, true, false, false, false]),
            (json!({ "elicitation": { "form": {}, "url": {} } }), [true, true, false, false, false]),
            (json!({ "sampling": {} }), [false, false, true, false, false]),
            (json!({ "sampling": { "tools": {} } }), [false, false, true, true, false]),
            (json!({ "roots": { "listChanged": true } }), [false, false, false, false, true]),
            (
                json!({ "roots": {}, "sampling": { "context": {} }, "elicitation": {} }),
                [true, false, true, false, true],
            ),
        ];
        for (declared, expected) in rows {
            let declared_caps = caps(declared.clone());
            let got = [ElicitationForm, ElicitationUrl, Sampling, SamplingTools, Roots]
                .map(|c| c.is_declared_in(&declared_caps));
            assert_eq!(got, expected, "{declared}");
        }
    }

    #[test]
    fn sampling_with_tools_or_tool_choice_needs_sampling_tools() {
        let mut params = CreateMessageParams::new(vec![SamplingMessage::user_text("hi")], 10);
        assert_eq!(required_for(&InputRequest::Sample(Box::new(params.clone()))), Capability::Sampling);
        params.tool_choice = Some(ToolChoice { mode: Some("auto".into()) });
        assert_eq!(required_for(&InputRequest::Sample(Box::new(params))), Capability::SamplingTools);
    }

    #[test]
    fn missing_capabilities_merge_into_one_object() {
        use Capability::*;
        let declared = caps(json!({ "elicitation": { "url": {} } }));
        let error = missing(&declared, [ElicitationForm, ElicitationUrl, SamplingTools, Sampling, Roots]).unwrap_err();
        assert_eq!(error.code(), crate::base::error::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(error.http_status(), 400);
        assert_eq!(
            error.data().unwrap()["requiredCapabilities"],
            json!({ "elicitation": { "form": {} }, "sampling": { "tools": {} }, "roots": {} })
        );
        // Hosts drop `data`: the message alone names what is missing.
        let message = error.message();
        assert!(message.starts_with("Missing required client capabilities: "), "{message}");
        for name in ["elicitation.form", "sampling.tools", "roots"] {
            assert!(message.contains(name), "{name} not named: {message}");
        }
        let one = missing(&caps(json!({})), [Sampling]).unwrap_err();
        assert!(one.message().starts_with("Missing required client capability: sampling. "), "{}", one.message());
        assert!(missing(&declared, [ElicitationUrl]).is_ok());
    }

    #[test]
    fn asking_url_of_a_bare_elicitation_client_keeps_form_in_the_requirement() {
        use Capability::*;
        let bare = caps(json!({ "elicitation": {} }));
        let error = missing(&bare, [ElicitationForm, ElicitationUrl]).unwrap_err();
        assert_eq!(error.data().unwrap()["requiredCapabilities"], json!({ "elicitation": { "form": {}, "url": {} } }));
        let url_only = missing(&bare, [ElicitationUrl]).unwrap_err();
        assert_eq!(url_only.data().unwrap()["requiredCapabilities"], json!({ "elicitation": { "url": {} } }));
    }

    /// A random capability object: each capability absent, bare, or with sub-fields.
    fn random_caps(seed: &mut u64) -> Value {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed % 3
        };
        let mut caps = Map::new();
        let mut pick = |name: &str, subs: &[&str]| match next() {
            0 => {}
            1 => {
                caps.insert(name.into(), json!({}));
            }
            _ => {
                let obj: Map<String, Value> =
                    subs.iter().filter(|_| next() > 0).map(|s| ((*s).into(), json!({}))).collect();
                caps.insert(name.into(), Value::Object(obj));
            }
        };
        pick("elicitation", &["form", "url"]);
        pick("sampling", &["tools", "context"]);
        pick("roots", &["listChanged"]);
        Value::Object(caps)
    }

    #[test]
    fn declaring_what_32021_names_always_satisfies_the_round() {
        use Capability::*;
        let all = [ElicitationForm, ElicitationUrl, Sampling, SamplingTools, Roots];
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        for _ in 0..500 {
            let declared = random_caps(&mut seed);
            let Err(error) = missing(&caps(declared.clone()), all) else {
                assert!(all.iter().all(|c| c.is_declared_in(&caps(declared.clone()))), "{declared}");
                continue;
            };
            let required = error.data().unwrap()["requiredCapabilities"].clone();
            // Declaring everything it names satisfies every question...
            let Value::Object(mut upgraded) = declared.clone() else { unreachable!() };
            merge(&mut upgraded, required.clone());
            assert!(missing(&caps(Value::Object(upgraded)), all).is_ok(), "{declared} + {required}");
            // ...and it names nothing more: leave out any one leaf and a question fails.
            for path in leaves(&required, &[]) {
                let mut fewer = required.clone();
                let (last, parents) = path.split_last().unwrap();
                let parent = parents.iter().fold(&mut fewer, |v, k| &mut v[k.as_str()]);
                parent.as_object_mut().unwrap().remove(last);
                let Value::Object(mut partly) = declared.clone() else { unreachable!() };
                merge(&mut partly, fewer);
                assert!(
                    missing(&caps(Value::Object(partly)), all).is_err(),
                    "{declared}: {path:?} of {required} is not needed"
                );
            }
        }
    }

    /// The paths to the empty objects at the tips of `value`.
    fn leaves(value: &Value, prefix: &[String]) -> Vec<Vec<String>> {
        match value.as_object() {
            Some(object) if !object.is_empty() => {
                object.iter().flat_map(|(k, v)| leaves(v, &[prefix, std::slice::from_ref(k)].concat())).collect()
            }
            _ => vec![prefix.to_vec()],
        }
    }
}
