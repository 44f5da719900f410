//! Compile tests of the `#[tool]`, `#[prompt]` and `#[resource]` macros and of `ask!`
//! and `once!`: the programs under `ui/pass` (paths are relative to this crate) must
//! build, and every program under the other `ui/` folders makes one mistake and must
//! fail with the error its `.stderr` holds.
//!
//! Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test -p mcp-mrtr-tests --test ui`, then read every changed
//! `.stderr`: each must show one error, at the token that is wrong, saying what to do.

/// The `.stderr` files hold rustc's exact rendering of each error, which changes between
/// compiler releases; the test runs only on the toolchain they were generated with (the
/// one this project's machines carry) and is ignored on any other.
#[rustversion::attr(not(stable(1.95)), ignore)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/tool/*.rs");
    t.compile_fail("ui/ask/*.rs");
    t.compile_fail("ui/once/*.rs");
    t.compile_fail("ui/prompt/*.rs");
    t.compile_fail("ui/resource/*.rs");
    t.compile_fail("ui/toolbox/*.rs");
}
