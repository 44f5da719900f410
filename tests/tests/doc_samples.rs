//! The guide's samples of what the server sends are what it sends (issue 50: `wire.md`
//! showed a `$schema` the generated schemas had long stopped carrying).

use mcp_mrtr_tests::harness::{Rpc, TestServer};
use serde_json::Value;

/// The lines of the first ```json block after `heading` in a guide chapter.
fn sample(chapter: &str, heading: &str) -> Vec<Value> {
    let path = format!("{}/../mcp-mrtr/docs/{chapter}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let after = &text[text.find(heading).unwrap_or_else(|| panic!("{heading} in {chapter}"))..];
    let block = after.split("```json\n").nth(1).expect("a json block").split("\n```").next().expect("its end");
    block.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect()
}

#[tokio::test]
async fn the_wire_chapter_lists_tools_as_the_fixture_does() {
    let fixture = TestServer::everything().await;
    let listed = fixture.call(&Rpc::new("tools/list")).await["result"]["tools"].clone();
    let shown = sample("wire.md", "## Listing and calling");
    assert!(!shown.is_empty());
    for tool in shown {
        let listing = listed.as_array().unwrap().iter().find(|t| t["name"] == tool["name"]).expect("a listed tool");
        assert_eq!(&tool, listing, "wire.md shows {} otherwise than it is served", tool["name"]);
    }
}
