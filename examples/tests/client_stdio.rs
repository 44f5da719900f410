//! The crate's client (`mcp_mrtr::client`) speaking to `everything` run as a child process
//! over stdio: the same calls and rounds as over HTTP, and the child's life tied to the
//! client's.

use std::future::IntoFuture;
use std::process::Command;
use std::time::Duration;

use mcp_mrtr::client::{Answers, Change, Client, ClientError, ClientLimits, Listen};
use mcp_mrtr::protocol::ElicitResult;
use serde_json::json;

fn everything() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_everything"));
    command.arg("--stdio").env("RUST_LOG", "warn");
    command
}

#[tokio::test]
async fn a_child_server_is_listed_called_and_asked_through() {
    let answers = Answers::new().forms(|question| async move {
        let first = question.schema["properties"].as_object().unwrap().keys().next().cloned();
        Ok(match first.as_deref() {
            Some("name") => ElicitResult::accept_as(&json!({"name": "Ada"}))?,
            _ => ElicitResult::accept_as(&json!({"color": "teal"}))?,
        })
    });
    let client = Client::stdio(everything()).answers(answers).connect().await.unwrap();
    assert!(client.list_tools().await.unwrap().iter().any(|tool| tool.name == "test_simple_text"));
    let result = client.call_tool("test_input_required_result_multi_round", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Ada likes teal");
    // Requests in flight at once each get their own response.
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("greet", json!({"name": format!("n{i}")})).await })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap().all_text(), format!("Hello, n{i}!"));
    }
    client.close().await;
    let error = client.call_tool("greet", json!({"name": "late"})).await.unwrap_err();
    assert!(matches!(error, ClientError::Connect(_)), "{error}");
}

#[tokio::test]
async fn a_child_that_exits_or_never_answers_fails_the_request_not_the_client() {
    let mut exits = Command::new("sh");
    exits.args(["-c", "exit 0"]);
    let error = Client::stdio(exits).connect().await.unwrap_err();
    assert!(matches!(error, ClientError::Connect(_)), "{error}");

    let mut silent = Command::new("sh");
    silent.args(["-c", "sleep 30"]);
    let mut limits = ClientLimits::default();
    limits.request_timeout = Duration::from_millis(300);
    let error = Client::stdio(silent).limits(limits).connect().await.unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error}");

    let error = Client::stdio(Command::new("/nonexistent/mcp-server")).connect().await.unwrap_err();
    assert!(error.to_string().contains("could not start /nonexistent/mcp-server"), "{error}");
}

#[tokio::test]
async fn progress_and_changes_are_told_apart_on_the_one_channel() {
    let client = Client::stdio(everything()).connect().await.unwrap();
    let mut changes = client.listen(Listen::new().tools()).await.unwrap();
    let (call, mut progress) = client.call_tool("test_tool_with_progress", json!({})).with_progress();
    let updates = async {
        let mut seen = Vec::new();
        while let Some(update) = progress.next().await {
            seen.push(update.progress);
        }
        seen
    };
    let (result, updates) = tokio::join!(call.into_future(), updates);
    assert_eq!(result.unwrap().all_text(), "Progress complete");
    assert_eq!(updates, [0.0, 50.0, 100.0]);
    client.call_tool("test_trigger_tool_change", json!({})).await.unwrap();
    let change = tokio::time::timeout(Duration::from_secs(10), changes.next()).await.unwrap();
    assert_eq!(change, Some(Change::Tools));
    client.close().await;
    // The connection gone, the subscription ends.
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), changes.next()).await.unwrap(), None);
}

#[tokio::test]
async fn a_request_nobody_waits_for_is_cancelled_with_a_notification() {
    let log = std::env::temp_dir().join(format!("mcp-mrtr-stdin-{}.log", std::process::id()));
    // The server's stdin copied to a file on its way: what the client wrote, line by line.
    let mut teed = Command::new("sh");
    teed.args(["-c", r#"tee "$0" | exec "$1" --stdio"#])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_everything"))
        .env("RUST_LOG", "warn");
    // Without tasks declared, slow_compute runs in the call itself.
    let client = Client::stdio(teed).tasks(false).connect().await.unwrap();
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        client.call_tool("slow_compute", json!({"seconds": 30})).into_future(),
    );
    assert!(abandoned.await.is_err(), "the call was still running");
    // The client goes on: the next request is answered.
    assert_eq!(client.call_tool("greet", json!({"name": "Ada"})).await.unwrap().all_text(), "Hello, Ada!");
    client.close().await;
    let written = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let lines: Vec<serde_json::Value> = written.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let call = lines.iter().find(|line| line["params"]["name"] == "slow_compute").expect("the call was written");
    let cancelled = lines.iter().find(|line| line["method"] == "notifications/cancelled").expect("a cancellation");
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
    // A request that was answered is not cancelled.
    assert_eq!(lines.iter().filter(|line| line["method"] == "notifications/cancelled").count(), 1);
}

#[tokio::test]
async fn a_2025_session_over_stdio_is_asked_and_told_on_the_one_channel() {
    let answers = Answers::new().forms(|question| async move {
        let first = question.schema["properties"].as_object().unwrap().keys().next().cloned();
        Ok(match first.as_deref() {
            Some("name") => ElicitResult::accept_as(&json!({"name": "Ada"}))?,
            _ => ElicitResult::accept_as(&json!({"color": "teal"}))?,
        })
    });
    let client = Client::stdio(everything()).versions(["2025-11-25"]).answers(answers).connect().await.unwrap();
    assert_eq!(client.server().supported_versions, ["2025-11-25"]);
    // The server asks with requests of its own on the channel, answered from the same answers.
    let result = client.call_tool("test_input_required_result_multi_round", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Ada likes teal");
    let (call, mut progress) = client.call_tool("test_tool_with_progress", json!({})).with_progress();
    let updates = async {
        let mut seen = Vec::new();
        while let Some(update) = progress.next().await {
            seen.push(update.progress);
        }
        seen
    };
    let (result, updates) = tokio::join!(call.into_future(), updates);
    assert_eq!(result.unwrap().all_text(), "Progress complete");
    assert_eq!(updates, [0.0, 50.0, 100.0]);
    // The session's list changes, as the same stream of changes.
    let mut changes = client.listen(Listen::new().tools()).await.unwrap();
    client.call_tool("test_trigger_tool_change", json!({})).await.unwrap();
    let change = tokio::time::timeout(Duration::from_secs(10), changes.next()).await.unwrap();
    assert_eq!(change, Some(Change::Tools));
    client.close().await;
}

/// `ask`, the terminal host, run as a person would: the answers typed on its stdin.
fn ask(args: &[&str], typed: &str) -> (bool, String) {
    use std::io::Write as _;
    let server = format!("{} --stdio", env!("CARGO_BIN_EXE_everything"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_ask"))
        .arg(server)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(typed.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

#[test]
fn ask_puts_each_question_to_the_person_at_the_terminal() {
    let (ok, out) = ask(&["test_input_required_result_multi_round"], "y\nAda\ny\nteal\n");
    assert!(ok && out.contains("Ada, what is your favourite colour?") && out.ends_with("Ada likes teal\n"), "{out}");
    let (ok, out) = ask(&["test_elicitation", r#"{"message": "Who are you?"}"#], "n\n");
    assert!(ok && out.contains("User response: action=decline"), "{out}");
    let (ok, out) = ask(&["test_error_handling"], "");
    assert!(!ok && out.contains("the tool failed"), "{out}");
    let (ok, out) = ask(&[], "");
    assert!(ok && out.lines().any(|line| line.starts_with("test_simple_text ")), "{out}");
}
