//! The `gateway` example run as a person would: a child of the client over stdio, itself
//! mounting `everything` run as its own child over stdio, so a call crosses two processes
//! and two hops, and the questions asked at the far end reach the client, in either era.

use std::process::Command;

use mcp_mrtr::client::{Answers, Client};
use mcp_mrtr::protocol::ElicitResult;
use serde_json::json;

fn gateway() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gateway"));
    let upstream = format!("up_={} --stdio", env!("CARGO_BIN_EXE_everything"));
    command.args(["--mount", &upstream]).env("RUST_LOG", "warn");
    command
}

#[tokio::test]
async fn a_question_asked_two_processes_away_reaches_the_client() {
    for versions in [["2026-07-28"], ["2025-11-25"]] {
        let answers = Answers::new().forms(|question| async move {
            let first = question.schema["properties"].as_object().unwrap().keys().next().cloned();
            Ok(match first.as_deref() {
                Some("name") => ElicitResult::accept_as(&json!({"name": "Ada"}))?,
                _ => ElicitResult::accept_as(&json!({"color": "teal"}))?,
            })
        });
        let client = Client::stdio(gateway()).versions(versions).answers(answers).connect().await.unwrap();
        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().all(|tool| tool.name.starts_with("up_")), "{versions:?}");
        let result = client.call_tool("up_test_input_required_result_multi_round", json!({})).await.unwrap();
        assert_eq!(result.all_text(), "Ada likes teal", "{versions:?}");
        client.close().await;
    }
}

#[test]
fn a_gateway_without_an_upstream_says_how_to_give_one() {
    let output = Command::new(env!("CARGO_BIN_EXE_gateway")).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("usage: gateway"));
    let unreachable = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .args(["--mount", "x_=/nonexistent/server"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(!unreachable.status.success());
    assert!(String::from_utf8_lossy(&unreachable.stderr).contains("/nonexistent/server"));
}
