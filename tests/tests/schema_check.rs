//! The schema helper itself: it must reject what the schema rejects, or the checks in
//! every other test prove nothing.

use mcp_mrtr_tests::schema;
use serde_json::json;

#[test]
fn the_helper_rejects_invalid_messages() {
    if !schema::enabled() {
        // Only reachable when the run does not require schemas; a CI run fails in `enabled`.
        assert!(!schema::required());
        eprintln!("skipped: no schemas to check against");
        return;
    }
    let valid = json!({"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {},
        "ttlMs": 0, "cacheScope": "private"}});
    schema::assert_valid_message("server/discover", &valid);
    let mut missing_result_type = valid.clone();
    missing_result_type["result"].as_object_mut().unwrap().remove("resultType");
    let mut bad_scope = valid;
    bad_scope["result"]["cacheScope"] = json!("everyone");
    let untyped_version_error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "no"}});
    for invalid in [missing_result_type, bad_scope, untyped_version_error] {
        let outcome = std::panic::catch_unwind(|| schema::assert_valid_message("server/discover", &invalid));
        assert!(outcome.is_err(), "{invalid} passed validation");
    }
}
