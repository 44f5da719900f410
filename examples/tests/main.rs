//! The examples' tests, as one test binary (a binary per file links a 50 MB executable
//! each): each file below is a module, so its tests are named `file::test` (run one
//! file's with `cargo test -p mcp-mrtr-examples --test integration weather::`). A new
//! file must be listed here; `every_test_file_is_built` fails on one that is not.

mod common;
mod instance;

mod client_stdio;
mod deploy;
mod everything_stdio;
mod gateway;
mod held_memory;
mod instances;
mod lambda_events;
mod legacy_subscriptions;
mod many_instances;
mod notes;
mod ported;
mod redis_deployments;
mod redis_forgets;
mod redis_prefixes;
mod redis_round_trips;
mod redis_shares;
mod redis_tls;
mod serverless;
mod serverless_once;
mod shared_catalog;
mod weather;

/// Cargo builds only the files this crate names (`autotests = false`): a file left out
/// would never run, silently.
#[test]
fn every_test_file_is_built() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        let built = stem == "main" || main.contains(&format!("\nmod {stem};"));
        assert!(built, "tests/{stem} is not a module of tests/main.rs");
    }
}
