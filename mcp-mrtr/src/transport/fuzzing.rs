//! Entry points for coverage-guided fuzzing (`mcp-mrtr/fuzz`, cargo-fuzz and libFuzzer).
//!
//! The parsers that read client bytes are crate-private, and a fuzz target is a crate of
//! its own, so this module hands them out. It exists only under `--cfg fuzzing`, which
//! `cargo fuzz` sets and no other build does: hidden, not API, never in a release.
//!
//! Each function takes the fuzzer's bytes, drives one parser as a transport would, and
//! asserts what must hold for every input. A panic anywhere below is a finding, even one
//! the runtime would catch and answer (libFuzzer aborts on every panic): client data must
//! never panic the server. Beyond that, each checks what its code promises: the fast
//! envelope reader reads what the general one reads, kept trace context is W3C text, an
//! error's "send …" advice is accepted when followed, a forged state never opens, a kept
//! answer decodes as it first did, a cursor the server issued is accepted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::Poll;
use std::time::SystemTime;

use axum::http::{HeaderMap, HeaderValue};
use futures_util::FutureExt as _;
use serde_json::{json, Value};

use crate::base::error::ErrorCode;
use crate::base::error::ToolError;
use crate::base::header_values::{declared, decode_value, ParamHeader};
use crate::base::uri_template::UriTemplate;
use crate::dispatch::Engine;
use crate::ext::skills::Skill;
use crate::ext::skills::Skills;
use crate::intake::envelope::{check_version, classify, read_modern, Era, Incoming, Request};
use crate::intake::param_headers::check;
use crate::intake::request_state::KeyRing;
use crate::intake::request_state::StateConfig;
use crate::intake::request_state::StateKey;
use crate::intake::request_state::{Binding, BindingDigest, Presented};
use crate::mrtr::context::Ctx;
use crate::mrtr::context::Delivery;
use crate::mrtr::context::RequestMeta;
use crate::mrtr::context::TraceContext;
use crate::mrtr::question::{Elicit, ElicitUrl, Roots, Sample};
use crate::mrtr::replay::{self, Carried, Outcome, Replay};
use crate::protocol::Prompt;
use crate::protocol::PromptMessage;
use crate::protocol::Resource;
use crate::protocol::ResourceContents;
use crate::protocol::ResourceTemplate;
use crate::protocol::Tool;
use crate::protocol::PROTOCOL_VERSION;
use crate::protocol::{meta_keys, ClientCapabilities, JsonObject, RequestId};
use crate::server::Server;

/// One message body, as HTTP and stdio read it: its JSON values counted, framing, era,
/// `_meta`, version. The count is never below the values the parser makes; where the
/// fast reader accepts, the general one must read the same request and envelope
/// (`envelope/fast.rs` promises it; only then may HTTP skip the general path).
pub fn envelope(bytes: &[u8]) {
    // The count a body is refused by, before it is parsed, is never below what the parser
    // makes of it (the sixth audit's N8 fixed an over-count; an under-count would let a
    // body past the bound).
    if let Ok(parsed) = serde_json::from_slice::<Value>(bytes) {
        let counted = crate::intake::envelope::size::values_in(bytes);
        assert!(counted >= values_of(&parsed), "the value counter counted {counted}, fewer than the parser made");
    }
    let general = crate::transport::read_message(bytes);
    if let Ok(Incoming::Request(request)) = &general {
        let body_version = meta_of(request).and_then(|meta| meta.get(meta_keys::PROTOCOL_VERSION));
        for (header, session) in [(None, false), (Some("2025-11-25"), true), (Some(PROTOCOL_VERSION), false)] {
            let era = classify(request, header, session);
            assert!(
                body_version.is_none() || era == Some(Era::Modern),
                "a body version must win over every other clue"
            );
        }
        if let Ok(meta) = RequestMeta::parse(request.params.as_ref()) {
            let _ = check_version(&meta.protocol_version);
        }
    }
    let Some((fast, fast_meta)) = read_modern(bytes) else { return };
    let Ok(Incoming::Request(mut request)) = general else {
        panic!("the fast reader took a message the general one refuses: {general:?}");
    };
    assert_eq!(classify(&request, None, false), Some(Era::Modern), "the fast reader took a request that is not modern");
    let meta =
        RequestMeta::parse(request.params.as_ref()).expect("the fast reader took an envelope the general refuses");
    if let Some(Value::Object(params)) = &mut request.params {
        params.remove("_meta");
    }
    assert_eq!(fast, request, "the two readers read different requests");
    assert_eq!(*fast_meta, meta, "the two readers read different envelopes");
}

/// The values a parsed tree holds, itself included.
fn values_of(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(values_of).sum(),
        Value::Object(members) => members.values().map(values_of).sum(),
        _ => 0,
    }
}

fn meta_of(request: &Request) -> Option<&Value> {
    request.params.as_ref().and_then(|params| params.get("_meta"))
}

/// `traceparent`, `tracestate` and `baggage` (one a line): whatever is kept follows the
/// W3C formats, and both envelope readers keep what [`TraceContext::read`] keeps.
pub fn trace_context(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.splitn(3, '\n');
    let (traceparent, tracestate, baggage) = (lines.next(), lines.next(), lines.next());
    let read = TraceContext::read(traceparent, tracestate, baggage);
    if let Some(parent) = read.traceparent() {
        let sent = traceparent.unwrap_or_default().as_bytes();
        assert_eq!(parent.as_str().as_bytes(), &sent[..55], "a traceparent is kept as its first four fields");
        let hex = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) && s.bytes().any(|b| b != b'0');
        assert!(hex(parent.trace_id()) && parent.trace_id().len() == 32, "{parent:?}");
        assert!(hex(parent.parent_id()) && parent.parent_id().len() == 16, "{parent:?}");
        assert_eq!(parent.sampled(), parent.flags() & 1 == 1);
    }
    if let Some(state) = read.tracestate() {
        assert!(read.traceparent().is_some(), "a tracestate counts only beside a valid traceparent");
        assert_eq!(Some(state), tracestate);
        assert!(is_w3c_text(state), "a kept tracestate must be W3C text (printable ASCII): {state:?}");
    }
    if let Some(kept) = read.baggage() {
        assert_eq!(Some(kept), baggage);
        assert!(is_w3c_text(kept), "kept baggage must be W3C text (printable ASCII): {kept:?}");
        for member in kept.split(',') {
            let key = member.split_once('=').map_or(member, |(key, _)| key);
            let _ = read.baggage_value(key.trim());
        }
    }
    assert_eq!(read.is_empty(), read.traceparent().is_none() && read.baggage().is_none());
    let mut meta = json!({ meta_keys::PROTOCOL_VERSION: PROTOCOL_VERSION, meta_keys::CLIENT_CAPABILITIES: {} });
    for (key, value) in [("traceparent", traceparent), ("tracestate", tracestate), ("baggage", baggage)] {
        if let Some(value) = value {
            meta[key] = Value::from(value);
        }
    }
    let general = RequestMeta::parse(Some(&json!({ "_meta": meta }))).expect("a minimal envelope parses");
    assert_eq!(general.trace, read, "the general reader keeps other trace context");
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta } }).to_string();
    let (_, fast) = read_modern(body.as_bytes()).expect("a minimal modern request takes the fast path");
    assert_eq!(fast.trace, read, "the fast reader keeps other trace context");
}

/// Printable ASCII, spaces and tabs: what W3C trace context headers may carry.
fn is_w3c_text(text: &str) -> bool {
    text.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

/// The input schema of the fixture's `region` tool: one mirrored parameter of each type.
fn region_schema() -> Value {
    json!({ "type": "object", "properties": {
        "region": { "type": "string", "x-mcp-header": "Region" },
        "count": { "type": "integer", "x-mcp-header": "Count" },
        "opts": { "type": "object", "properties": { "dry": { "type": "boolean", "x-mcp-header": "Dry" } } },
    }})
}

/// `Mcp-Param-*` (SEP-2243): the first line is an argument (JSON, or else a string), each
/// next line the header of one mirrored parameter (`Count`, `Dry`, `Region`; empty:
/// absent). Checked one parameter at a time: a check that passes agrees with the body, and
/// the `send …` an error advises, sent, passes.
pub fn param_headers(bytes: &[u8]) {
    let mut lines = bytes.split(|b| *b == b'\n');
    let first = lines.next().unwrap_or_default();
    let argument =
        serde_json::from_slice(first).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(first).into_owned()));
    let Value::Object(schema) = region_schema() else { unreachable!("the schema is an object") };
    let params = declared(&schema).expect("the fixture's annotations are valid");
    for (param, line) in params.iter().zip(lines.chain(std::iter::repeat(&b""[..]))) {
        let header = HeaderValue::from_bytes(line).ok().filter(|_| !line.is_empty());
        if let Some(text) = header.as_ref().and_then(|value| value.to_str().ok()) {
            let sentinel = text.starts_with("=?base64?") && text.ends_with("?=");
            if !sentinel {
                assert_eq!(decode_value(text).ok().as_deref(), Some(text), "plain header text is its own value");
            }
        }
        one_param_header(param, header.as_ref(), &argument);
    }
}

fn one_param_header(param: &ParamHeader, header: Option<&HeaderValue>, argument: &Value) {
    let (name, arguments) = param_arguments(param, argument);
    let mut headers = HeaderMap::new();
    if let Some(header) = header {
        headers.insert(name, header.clone());
    }
    let error = match check(std::slice::from_ref(param), &headers, Some(&arguments)) {
        Ok(()) => {
            if let (Value::String(text), Some(header)) = (argument, header) {
                let decoded = header.to_str().ok().map(decode_value);
                assert_eq!(decoded.and_then(Result::ok).as_ref(), Some(text), "a passing header states the argument");
            }
            return;
        }
        Err(error) => error,
    };
    // The advice is worth following only for an argument of the parameter's own type.
    let typed = match name {
        "Mcp-Param-Region" => argument.is_string(),
        "Mcp-Param-Count" => argument.is_i64() || argument.is_u64(),
        _ => argument.is_boolean(),
    };
    let prefix = format!("send `{name}: ");
    let message = error.message();
    let Some(advice) = message.find(&prefix).map(|at| &message[at + prefix.len()..]) else { return };
    let advice = advice.strip_suffix('`').unwrap_or(advice);
    // `shown` cuts advice past 64 characters: a cut one cannot be sent as it stands.
    if !typed || advice.chars().count() > 64 {
        return;
    }
    let value = HeaderValue::from_str(advice).unwrap_or_else(|_| panic!("advice that cannot be sent: {message}"));
    headers.insert(name, value);
    let followed = check(std::slice::from_ref(param), &headers, Some(&arguments));
    assert!(followed.is_ok(), "following the advice of {message:?} fails: {followed:?}");
}

/// The header name of `param` and the arguments that carry `argument` where it lies.
fn param_arguments(param: &ParamHeader, argument: &Value) -> (&'static str, Value) {
    let name = format!("{param:?}");
    let (name, arguments) = if name.contains("Mcp-Param-Dry") {
        ("Mcp-Param-Dry", json!({ "opts": { "dry": argument } }))
    } else if name.contains("Mcp-Param-Count") {
        ("Mcp-Param-Count", json!({ "count": argument }))
    } else {
        ("Mcp-Param-Region", json!({ "region": argument }))
    };
    (name, arguments)
}

/// The keys the fixture seals with: a secret the fuzzer cannot learn, under ids it can.
fn state_config() -> StateConfig {
    #[allow(clippy::cast_possible_truncation, reason = "i < 32")]
    let secret = |salt: u8| std::array::from_fn(|i| (i as u8).wrapping_mul(31) ^ salt);
    StateConfig::new(KeyRing::new(StateKey::new("fuzz", secret(7))).with_previous(StateKey::new("old", secret(9))))
}

fn binding(arguments: &Value) -> BindingDigest {
    Binding { server: "fuzz", method: "tools/call", target: "ask", arguments: arguments.as_object(), principal: None }
        .digest()
}

/// A presented `requestState`: any text the fuzzer writes is refused (it cannot know the
/// keys). After `seal:`, the rest is a payload: sealed, it opens to itself, and never for
/// another call, after its expiry, or with one character changed.
pub fn request_state(bytes: &[u8]) {
    let sealer = state_config().sealer().expect("the fixture's keys are given");
    let digest = binding(&json!({ "a": 1 }));
    let now = SystemTime::now();
    if let Some(payload) = bytes.strip_prefix(b"seal:") {
        let token = sealer.seal(&digest, payload, now).expect("a fuzz input fits the default cap");
        let (opened, expires) = sealer.open(&token, &digest, now).expect("a state opens for its own call");
        assert_eq!(opened, payload);
        assert!(sealer.open(&token, &binding(&json!({ "a": 2 })), now).is_err(), "opened for other arguments");
        assert!(sealer.open(&token, &digest, expires).is_err(), "opened at its expiry");
        let at = payload.len() % token.len();
        let mut changed = token.clone().into_bytes();
        changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).expect("a token is ASCII");
        assert!(sealer.open(&changed, &digest, now).is_err(), "opened with byte {at} changed: {changed}");
        let _ = serde_json::from_slice::<Carried>(payload);
        return;
    }
    let token = String::from_utf8_lossy(bytes);
    assert!(sealer.open(&token, &digest, now).is_err(), "a state the fuzzer wrote opened: {token:?}");
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        let presented = Presented { token: &value, sealer: &sealer, binding: &digest, target: "ask" };
        assert!(presented.open(|payload| serde_json::from_slice::<Carried>(payload).ok()).is_err());
    }
}

/// What the fixture's form asks for: a field of each kind a form may hold.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Details {
    name: String,
    age: Option<u32>,
    #[serde(default)]
    subscribe: bool,
    plan: Plan,
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
enum Plan {
    Free,
    Pro,
}

/// `inputResponses` (a JSON value): through dispatch to a tool asking one question of each
/// kind, and straight into those questions over two rounds. An answer kept in the first
/// round's state must decode in the second as it did in the first (`Question::decode`).
pub fn input_responses(bytes: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else { return };
    let call = json!({ "name": "ask", "arguments": {}, "inputResponses": value });
    if let Err(error) = harness().request("tools/call", call) {
        assert_eq!(error.code(), ErrorCode::INVALID_PARAMS, "malformed answers are invalid params: {error:?}");
    }
    let Value::Object(responses) = value else { return };
    let (first, carried) = ask_round(Replay::new_call(responses.clone(), None));
    let sealed = serde_json::to_vec(&carried).expect("a state serializes");
    let carried = serde_json::from_slice(&sealed).expect("a state reads back");
    let (second, _) = ask_round(Replay::opened(carried, responses, None));
    assert_eq!(first, second, "kept answers decode otherwise in a later round");
}

/// One round of the four questions: what each answered (as `Debug` text), and the state.
fn ask_round(replay: Replay) -> (BTreeMap<&'static str, String>, Carried) {
    let replay = Arc::new(replay);
    let answered = Mutex::new(BTreeMap::new());
    let (form, url) = (Elicit::<Details>::new("Your details?"), ElicitUrl::new("Link", "https://example.com/link"));
    let (sample, roots) = (Sample::new("Say hello"), Roots);
    let handler = std::future::poll_fn(|_| {
        let mut answered = answered.lock().unwrap_or_else(PoisonError::into_inner);
        let mut pending = false;
        note(&mut answered, &mut pending, "form", replay.lookup("form", &form, false));
        note(&mut answered, &mut pending, "url", replay.lookup("url", &url, false));
        note(&mut answered, &mut pending, "sample", replay.lookup("sample", &sample, false));
        note(&mut answered, &mut pending, "roots", replay.lookup("roots", &roots, false));
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    });
    let outcome = replay::drive(&replay, &all_capabilities(), handler).now_or_never();
    let carried = match outcome.expect("a round that only asks ends in one poll") {
        Ok(Outcome::InputRequired(_, carried)) => *carried,
        _ => replay.carried(),
    };
    (answered.into_inner().unwrap_or_else(PoisonError::into_inner), carried)
}

fn note<T: Debug>(answered: &mut BTreeMap<&'static str, String>, pending: &mut bool, key: &'static str, p: Poll<T>) {
    match p {
        Poll::Ready(output) => {
            answered.insert(key, format!("{output:?}"));
        }
        Poll::Pending => *pending = true,
    }
}

fn all_capabilities() -> ClientCapabilities {
    serde_json::from_value(json!({
        "elicitation": { "form": {}, "url": {} },
        "sampling": { "tools": {} },
        "roots": {},
        "extensions": { "io.modelcontextprotocol/skills": {} },
    }))
    .expect("the capabilities parse")
}

/// The lists of the fixture, and where each puts its entries.
const LISTS: [(&str, &str); 5] = [
    ("tools/list", "tools"),
    ("prompts/list", "prompts"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
    ("skills/list", "skills"),
];

/// A `cursor` (JSON, or else a string) for every list: refused as invalid params or
/// accepted; from an accepted one, every cursor the server issues next is accepted too,
/// and no entry comes twice.
pub fn cursors(bytes: &[u8]) {
    let cursor =
        serde_json::from_slice(bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
    let harness = harness();
    for (method, member) in LISTS {
        let mut params = json!({ "cursor": cursor.clone() });
        let mut seen = BTreeSet::new();
        // A few pages: enough to follow the server's own cursors, cheap enough to run often.
        for page in 0..4 {
            let listed = match harness.request(method, params) {
                Ok(listed) => listed,
                Err(error) if page == 0 => {
                    assert_eq!(error.code(), ErrorCode::INVALID_PARAMS, "{method} with {cursor}: {error:?}");
                    break;
                }
                Err(error) => panic!("{method} refused the cursor it issued: {error:?}"),
            };
            for entry in listed[member].as_array().expect("a page lists its entries") {
                assert!(seen.insert(entry.to_string()), "{method} listed {entry} twice");
            }
            let Some(next) = listed.get("nextCursor") else { break };
            params = json!({ "cursor": next });
        }
    }
}

/// A URI template (first line) and a URI (second; or the template itself): matching never
/// panics and binds each variable once; then the URI is read from the fixture's
/// resources, templates and skills, which may refuse it but never fail on it.
pub fn uris(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let text: &str = &text;
    let (template, uri) = text.split_once('\n').unwrap_or((text, text));
    if let Ok(parsed) = UriTemplate::parse(template) {
        let vars = parsed.matches(uri);
        if !template.contains('{') {
            assert_eq!(vars.is_some(), uri == template, "a template without variables matches itself only");
        }
        if let Some(vars) = vars {
            assert_eq!(vars.len(), template.matches('{').count(), "{template:?} bound {vars:?}");
        }
    }
    let harness = harness();
    for method in ["resources/read", "skills/get", "resources/directory/read"] {
        if let Err(error) = harness.request(method, json!({ "uri": uri })) {
            assert_ne!(error.code(), ErrorCode::INTERNAL_ERROR, "{method} {uri:?}: {error:?}");
        }
    }
}

/// The engine of [`server`] with many skills, and the runtime to drive it, built once.
struct Harness {
    engine: Engine,
    runtime: tokio::runtime::Runtime,
    meta: Arc<RequestMeta>,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        // More skills than one `skills/list` page holds, so its cursors are issued too.
        let engine = runtime.block_on(async { server(102).into_engine() });
        engine.check_ready(crate::intake::request_state::Reach::Instances).expect("the fixture is ready");
        let meta = RequestMeta {
            protocol_version: PROTOCOL_VERSION.into(),
            client_capabilities: all_capabilities(),
            ..RequestMeta::default()
        };
        Harness { engine, runtime, meta: Arc::new(meta) }
    })
}

impl Harness {
    /// One modern request, its reply as a tree.
    fn request(&self, method: &str, params: Value) -> Result<Value, crate::base::error::Error> {
        let request = Request::new(RequestId::from(1), method.into(), Some(params));
        let reply = self.runtime.block_on(self.engine.handle(request, self.meta.clone(), Delivery::default()));
        reply.outcome.map(|json| serde_json::from_str(json.as_str()).expect("a reply is JSON"))
    }
}

/// The server the engine-driven targets talk to: a tool asking one question of each kind
/// (`ask`), one with mirrored parameters (`region`, see [`param_headers`]), prompts,
/// resources, templates and `skills` skills (none: no Skills extension), two entries a
/// page, with fixed state keys.
pub fn server(skills: usize) -> Server {
    let ask =
        Tool::new("ask").description("Asks one question of each kind").handler(|ctx: Ctx, _: JsonObject| async move {
            let (form, url, sample, roots) = tokio::join!(
                ctx.ask("form", Elicit::<Details>::new("Your details?")),
                ctx.ask("url", ElicitUrl::new("Link", "https://example.com/link")),
                ctx.ask("sample", Sample::new("Say hello")),
                ctx.ask("roots", Roots),
            );
            Ok::<_, ToolError>(format!("{form:?} {url:?} {sample:?} {roots:?}"))
        });
    let region = Tool::new("region").description("Mirrors its parameters into headers").input_schema(region_schema());
    let mut server = Server::new("fuzz", "1.0.0").request_state(state_config()).page_size(2).tool(ask).tool(
        region.handler(|_ctx, args: JsonObject| async move { Ok::<_, ToolError>(Value::Object(args).to_string()) }),
    );
    for name in ["echo", "third", "fourth"] {
        let tool = Tool::new(name).description("Echoes its arguments");
        server =
            server.tool(tool.handler(|_ctx, args: JsonObject| async move { Ok::<_, ToolError>(format!("{args:?}")) }));
    }
    for name in ["greet", "brief", "recap"] {
        let prompt = Prompt::new(name).description("Says hello");
        server = server.prompt(prompt.handler(|_ctx, _: JsonObject| async {
            Ok::<_, ToolError>(vec![PromptMessage::user(crate::protocol::ContentBlock::text("hello"))])
        }));
    }
    for uri in ["note://a", "note://b", "file:///readme"] {
        let resource = Resource::new(uri, uri).description("A fixed note");
        server =
            server.resource(resource.handler(move |_ctx| async move {
                Ok::<_, ToolError>(ResourceContents::text(uri, "text/plain", "note"))
            }));
    }
    for template in ["note://{title}", "doc://{+path}/raw"] {
        let resource = ResourceTemplate::new(template, template).description("Notes by name");
        server = server.resource(resource.handler(|_ctx, vars: JsonObject| async move {
            Ok::<_, ToolError>(ResourceContents::text("note://x", "text/plain", format!("{vars:?}")))
        }));
    }
    if skills == 0 {
        return server;
    }
    let mut catalog = Skills::new();
    for i in 0..skills {
        let skill_md = format!("---\nname: s{i:03}\ndescription: Skill {i}.\n---\n\nRead references/GUIDE.md.\n");
        catalog = catalog.skill(Skill::new(format!("team/s{i:03}"), skill_md).file("references/GUIDE.md", "A guide."));
    }
    server.skills(catalog)
}
