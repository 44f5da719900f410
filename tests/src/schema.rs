//! Validates what the server sends against the official JSON Schemas of 2026-07-28 and,
//! for legacy sessions, 2025-11-25.
//!
//! The schema files are not part of this repository: point `MCP_MRTR_SCHEMA_DIR` at a
//! folder holding `2026-07-28/schema.json` and `2025-11-25/schema.json` (CI does). Without
//! it, validation is off and the first check says so once, unless the run requires
//! schemas (`MCP_MRTR_REQUIRE_SCHEMAS=1`, which `.ci/run` sets, or `CI` set to anything
//! but `false`/`0`): then every check fails, so a CI run cannot pass without them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

/// The environment variable naming the schema folder.
pub const SCHEMA_DIR_VAR: &str = "MCP_MRTR_SCHEMA_DIR";
/// Set to `1` to make a missing schema folder fail every check instead of skipping it.
pub const REQUIRE_VAR: &str = "MCP_MRTR_REQUIRE_SCHEMAS";

/// Whether this run must validate: asked for explicitly, or running in CI.
pub fn required() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"));
    set(REQUIRE_VAR) || set("CI")
}

/// The modern revision.
pub const MODERN: &str = "2026-07-28";
/// The legacy revision.
pub const LEGACY: &str = "2025-11-25";

type Compiled = HashMap<(&'static str, String), std::sync::Arc<jsonschema::Validator>>;

struct Schemas {
    dir: PathBuf,
    defs: Mutex<HashMap<&'static str, Value>>,
    compiled: Mutex<Compiled>,
}

fn schemas() -> Option<&'static Schemas> {
    static SCHEMAS: OnceLock<Option<Schemas>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            let Some(dir) = std::env::var_os(SCHEMA_DIR_VAR) else {
                assert!(
                    !required(),
                    "{SCHEMA_DIR_VAR} is not set, but this run requires schema checks ({REQUIRE_VAR} or CI is set)"
                );
                eprintln!("note: {SCHEMA_DIR_VAR} is not set, so messages are not checked against the MCP JSON Schema");
                return None;
            };
            Some(Schemas { dir: PathBuf::from(dir), defs: Mutex::default(), compiled: Mutex::default() })
        })
        .as_ref()
}

impl Schemas {
    /// The `$defs` of one revision, read once.
    fn defs(&self, revision: &'static str) -> Value {
        let mut defs = self.defs.lock().unwrap();
        defs.entry(revision)
            .or_insert_with(|| {
                let path = self.dir.join(revision).join("schema.json");
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                let root: Value = serde_json::from_str(&text).expect("the schema is JSON");
                root["$defs"].clone()
            })
            .clone()
    }
}

/// Whether messages are being validated in this run.
pub fn enabled() -> bool {
    schemas().is_some()
}

/// Asserts `message` is valid against the 2026-07-28 definition `def`.
pub fn assert_valid(def: &str, message: &Value) {
    assert_valid_in(MODERN, def, message);
}

/// Asserts `message` is valid against the definition `def` of `revision`.
pub fn assert_valid_in(revision: &'static str, def: &str, message: &Value) {
    let Some(schemas) = schemas() else { return };
    let key = (revision, def.to_owned());
    let cached = schemas.compiled.lock().unwrap().get(&key).cloned();
    let validator = cached.unwrap_or_else(|| {
        let defs = schemas.defs(revision);
        assert!(defs.get(def).is_some(), "the {revision} schema has no definition {def}");
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": defs,
            "$ref": format!("#/$defs/{def}"),
        });
        let validator = std::sync::Arc::new(jsonschema::validator_for(&schema).expect("the definition compiles"));
        schemas.compiled.lock().unwrap().insert(key, validator.clone());
        validator
    });
    let errors: Vec<String> =
        validator.iter_errors(message).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{message} is not a valid {revision} {def}:\n{}", errors.join("\n"));
}

/// Whether `method` is one of the core protocol's (either revision), whose results the
/// schemas define; the rest belong to extensions and are checked as generic results.
fn is_core_method(method: &str) -> bool {
    const CORE: &[&str] = &[
        "initialize",
        "ping",
        "logging/setLevel",
        "server/discover",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        "subscriptions/listen",
    ];
    CORE.contains(&method)
}

/// Asserts one message the server sent on a legacy session, in answer to `method`, is a
/// valid 2025-11-25 message: a notification, a request of the bridge, an error, or a
/// result of that method.
pub fn assert_valid_legacy_message(method: &str, message: &Value) {
    let def = match (message.get("method"), message.get("id")) {
        (Some(_), None) => return assert_valid_in(LEGACY, "JSONRPCNotification", message),
        (Some(_), Some(_)) => return assert_valid_in(LEGACY, "JSONRPCRequest", message),
        _ if message.get("error").is_some() => return assert_valid_in(LEGACY, "JSONRPCErrorResponse", message),
        _ => match method {
            "initialize" => "InitializeResult",
            "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => "EmptyResult",
            "tools/list" => "ListToolsResult",
            "tools/call" => "CallToolResult",
            "prompts/list" => "ListPromptsResult",
            "prompts/get" => "GetPromptResult",
            "resources/list" => "ListResourcesResult",
            "resources/templates/list" => "ListResourceTemplatesResult",
            "resources/read" => "ReadResourceResult",
            "completion/complete" => "CompleteResult",
            // A method of an extension (a server's own, skills'): the core schema has no
            // shape for its result.
            other if !is_core_method(other) => return assert_valid_in(LEGACY, "JSONRPCResultResponse", message),
            other => panic!("no legacy result definition known for {other}"),
        },
    };
    assert_valid_in(LEGACY, "JSONRPCResultResponse", message);
    assert_valid_in(LEGACY, def, &message["result"]);
}

/// Asserts one message the server sent in answer to `method` is valid: a notification,
/// a result of that method, or an error (the typed error definitions where one exists).
pub fn assert_valid_message(method: &str, message: &Value) {
    if message.get("method").is_some() {
        return assert_valid("ServerNotification", message);
    }
    if let Some(error) = message.get("error") {
        let def = match error["code"].as_i64() {
            Some(-32020) => "HeaderMismatchError",
            Some(-32021) => "MissingRequiredClientCapabilityError",
            Some(-32022) => "UnsupportedProtocolVersionError",
            _ => "JSONRPCErrorResponse",
        };
        return assert_valid(def, message);
    }
    // The core schema has no task shapes (they belong to the tasks extension): a
    // `CreateTaskResult` and the `tasks/*` results are checked as generic results.
    if message["result"]["resultType"] == "task" || method.starts_with("tasks/") || !is_core_method(method) {
        return assert_valid("JSONRPCResultResponse", message);
    }
    let def = match method {
        "server/discover" => "DiscoverResultResponse",
        "tools/list" => "ListToolsResultResponse",
        "tools/call" => "CallToolResultResponse",
        "prompts/list" => "ListPromptsResultResponse",
        "prompts/get" => "GetPromptResultResponse",
        "resources/list" => "ListResourcesResultResponse",
        "resources/templates/list" => "ListResourceTemplatesResultResponse",
        "resources/read" => "ReadResourceResultResponse",
        "completion/complete" => "CompleteResultResponse",
        "subscriptions/listen" => "SubscriptionsListenResultResponse",
        other => panic!("no result definition known for {other}"),
    };
    assert_valid(def, message);
    if message["result"]["resultType"] == "input_required" {
        assert_valid("InputRequiredResult", &message["result"]);
    }
}
