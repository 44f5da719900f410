//! Validates what the server sends against the official JSON Schema of 2026-07-28.
//!
//! The schema files are not part of this repository: point `MCP_MRTR_SCHEMA_DIR` at a
//! folder holding `2026-07-28/schema.json` (CI does). Without it, validation is off and
//! the first check says so once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

/// The environment variable naming the schema folder.
pub const SCHEMA_DIR_VAR: &str = "MCP_MRTR_SCHEMA_DIR";

struct Schemas {
    defs: Value,
    compiled: Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>,
}

fn schemas() -> Option<&'static Schemas> {
    static SCHEMAS: OnceLock<Option<Schemas>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            let Some(dir) = std::env::var_os(SCHEMA_DIR_VAR) else {
                eprintln!("note: {SCHEMA_DIR_VAR} is not set, so messages are not checked against the MCP JSON Schema");
                return None;
            };
            let path = PathBuf::from(dir).join("2026-07-28").join("schema.json");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let root: Value = serde_json::from_str(&text).expect("the schema is JSON");
            Some(Schemas { defs: root["$defs"].clone(), compiled: Mutex::new(HashMap::new()) })
        })
        .as_ref()
}

/// Whether messages are being validated in this run.
pub fn enabled() -> bool {
    schemas().is_some()
}

/// Asserts `message` is valid against the schema's definition `def`.
pub fn assert_valid(def: &str, message: &Value) {
    let Some(schemas) = schemas() else { return };
    let validator = {
        let mut compiled = schemas.compiled.lock().unwrap();
        compiled
            .entry(def.to_owned())
            .or_insert_with(|| {
                assert!(schemas.defs.get(def).is_some(), "the schema has no definition {def}");
                let schema = json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "$defs": schemas.defs,
                    "$ref": format!("#/$defs/{def}"),
                });
                std::sync::Arc::new(jsonschema::validator_for(&schema).expect("the definition compiles"))
            })
            .clone()
    };
    let errors: Vec<String> =
        validator.iter_errors(message).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{message} is not a valid {def}:\n{}", errors.join("\n"));
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
        other => panic!("no result definition known for {other}"),
    };
    assert_valid(def, message);
    if message["result"]["resultType"] == "input_required" {
        assert_valid("InputRequiredResult", &message["result"]);
    }
}
