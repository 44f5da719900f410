//! The integration tests, as one test binary: a binary per file made the suite link
//! forty 50 MB executables, which cost CI minutes and gigabytes of disk. Each file below
//! is a module of its own, so its tests are named `file::test` (run one file's with
//! `cargo test -p mcp-mrtr-tests --test integration fair::`).
//!
//! Three files stay binaries of their own (tests/Cargo.toml), each for a process of its
//! own: `bad_keys` sets an environment variable the others read, `fuzz` counts every
//! panic in the process (others panic on purpose), and `ui` runs the compiler. A new file
//! must be listed here or there; `every_test_file_is_built` fails on one that is neither.

mod access;
mod app_state;
mod apps;
mod ask_keys;
mod audit_http;
mod audit_third;
mod auth;
mod by_hand;
mod consent;
mod custom_headers;
mod custom_methods;
mod doc_samples;
mod era_errors;
mod fair;
mod fair_legacy;
mod fair_tasks;
mod field_order;
mod gateway;
mod gateway_auth;
mod gateway_legacy;
mod gateway_matrix;
mod gateway_tasks;
mod http_behaviour;
mod http_errors;
mod http_guard;
mod jwks_rotation;
mod legacy;
mod legacy_bridge;
mod legacy_changes;
mod limits;
mod live;
mod mount;
mod mrtr_http;
mod observability;
mod once_anywhere;
mod once_in_tasks;
mod once_per_call;
mod opentelemetry;
mod preflight;
mod prepared_lists;
mod replay;
mod rust_client;
mod rust_client_live;
mod same_everywhere;
mod sampling_refused;
mod schema_check;
mod sessions;
mod shown;
mod shutdown;
mod skills;
mod state_guarantees;
mod stdio;
mod task_end;
mod task_steps;
mod tasks;
mod test_client;
mod tool_schema;
mod toolbox;
mod url_elicitation;
mod user_choice;
mod workers;

/// Cargo builds only the files this crate names (`autotests = false`): a file left out
/// would never run, silently.
#[test]
fn every_test_file_is_built() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let main = std::fs::read_to_string(dir.join("tests/main.rs")).unwrap();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    for entry in std::fs::read_dir(dir.join("tests")).unwrap() {
        let path = entry.unwrap().path();
        let (Some(stem), Some("rs")) =
            (path.file_stem().and_then(|s| s.to_str()), path.extension().and_then(|e| e.to_str()))
        else {
            continue;
        };
        let built = stem == "main"
            || main.contains(&format!("\nmod {stem};"))
            || manifest.contains(&format!("path = \"tests/{stem}.rs\""));
        assert!(built, "tests/{stem}.rs is neither a module of tests/main.rs nor a [[test]] of Cargo.toml");
    }
}
