//! A terminal host: connects to any MCP server, lists its tools or calls one, and asks the
//! person at the terminal each question the server asks on the way (forms field by field,
//! URLs printed to open, sampling answered by the person standing in for a model, the
//! current directory as the one root).
//!
//! ```text
//! ask http://127.0.0.1:3001/mcp                          # the server's tools
//! ask http://127.0.0.1:3001/mcp weather                  # call one
//! ask "everything --stdio" test_elicitation '{"message": "Who are you?"}'
//! ```
//!
//! The server is a URL (`http://`, `https://`) or a command line, started as a child and
//! spoken to over stdio (split on spaces; no shell is involved). A call's progress is shown
//! on stderr as the server reports it.

use std::io::Write as _;
use std::sync::Arc;

use anyhow::{bail, Context as _};
use mcp_mrtr::client::{Answers, Client, FormQuestion, UrlQuestion};
use mcp_mrtr::protocol::{CreateMessageParams, CreateMessageResult, ElicitResult, JsonObject, ListRootsResult, Root};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::Mutex;

const USAGE: &str = "usage: ask SERVER [TOOL [JSON-ARGUMENTS]]   (SERVER: a URL, or a command line run over stdio)";

/// The terminal: one question at a time, one line per answer.
#[derive(Clone)]
struct Terminal(Arc<Mutex<Lines<BufReader<Stdin>>>>);

impl Terminal {
    async fn ask(&self, prompt: &str) -> anyhow::Result<String> {
        print!("{prompt}");
        std::io::stdout().flush()?;
        let line = self.0.lock().await.next_line().await?;
        line.map(|line| line.trim().to_owned()).context("the terminal was closed")
    }

    async fn yes(&self, prompt: &str) -> anyhow::Result<bool> {
        Ok(matches!(self.ask(prompt).await?.to_ascii_lowercase().as_str(), "y" | "yes"))
    }

    /// A form, field by field in the server's order; `n` declines it, `c` cancels it.
    async fn form(&self, question: FormQuestion) -> anyhow::Result<ElicitResult> {
        println!("\nThe server asks: {}", question.message);
        match self.ask("Answer it? [Y/n/c] ").await?.to_ascii_lowercase().as_str() {
            "n" | "no" => return Ok(ElicitResult::decline()),
            "c" | "cancel" => return Ok(ElicitResult::cancel()),
            _ => {}
        }
        let required: Vec<&str> =
            question.schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let mut content = JsonObject::new();
        let fields = question.schema["properties"].as_object().cloned().unwrap_or_default();
        for (name, field) in &fields {
            loop {
                let label = field["title"].as_str().unwrap_or(name);
                let about = field["description"].as_str().map(|d| format!(" ({d})")).unwrap_or_default();
                let choices = field["enum"]
                    .as_array()
                    .map(|values| format!(" {}", Value::Array(values.clone())))
                    .unwrap_or_default();
                let must = if required.contains(&name.as_str()) { "" } else { ", optional" };
                let kind = field["type"].as_str().unwrap_or("string");
                let text = self.ask(&format!("  {label}{about} [{kind}{must}]{choices}: ")).await?;
                if text.is_empty() && must.is_empty() {
                    println!("  this one is required");
                    continue;
                }
                if text.is_empty() {
                    break;
                }
                match read_field(kind, &text) {
                    Some(value) => {
                        content.insert(name.clone(), value);
                        break;
                    }
                    None => println!("  that is not a {kind}"),
                }
            }
        }
        Ok(ElicitResult::accept(content))
    }

    async fn url(&self, question: UrlQuestion) -> anyhow::Result<ElicitResult> {
        println!("\nThe server asks you to open a page: {}\n  {}", question.message, question.url);
        Ok(if self.yes("Open it and carry on? [y/N] ").await? {
            ElicitResult::accepted()
        } else {
            ElicitResult::decline()
        })
    }

    /// The person at the terminal stands in for the model.
    async fn sample(&self, request: CreateMessageParams) -> anyhow::Result<CreateMessageResult> {
        println!("\nThe server asks for a model's reply (up to {} tokens) to:", request.max_tokens);
        if let Some(system) = &request.system_prompt {
            println!("  [system] {system}");
        }
        for message in &request.messages {
            let text = message.content["text"].as_str().map_or_else(|| message.content.to_string(), str::to_owned);
            println!("  [{:?}] {text}", message.role);
        }
        let reply = self.ask("Your reply, as the model: ").await?;
        Ok(CreateMessageResult::from_text("a person at a terminal", reply))
    }
}

/// A field's value from what was typed, read as its schema type.
fn read_field(kind: &str, text: &str) -> Option<Value> {
    match kind {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "integer" => text.parse::<i64>().ok().map(Value::from),
        "number" => text.parse::<f64>().ok().map(Value::from),
        _ => Some(Value::String(text.to_owned())),
    }
}

fn answers(terminal: &Terminal) -> anyhow::Result<Answers> {
    let root = Root::new(format!("file://{}", std::env::current_dir()?.display())).named("the current directory");
    let (forms, urls, sampling) = (terminal.clone(), terminal.clone(), terminal.clone());
    Ok(Answers::new()
        .forms(move |question| {
            let terminal = forms.clone();
            async move { Ok(terminal.form(question).await?) }
        })
        .urls(move |question| {
            let terminal = urls.clone();
            async move { Ok(terminal.url(question).await?) }
        })
        .sampling(move |request| {
            let terminal = sampling.clone();
            async move { Ok(terminal.sample(request).await?) }
        })
        .roots(move || {
            let roots = ListRootsResult::new(vec![root.clone()]);
            async move { Ok(roots) }
        }))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(server) = args.first() else { bail!(USAGE) };
    let terminal = Terminal(Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines())));
    let connect = if server.starts_with("http://") || server.starts_with("https://") {
        Client::http(server)
    } else {
        let mut words = server.split_whitespace();
        let mut command = std::process::Command::new(words.next().context(USAGE)?);
        command.args(words);
        Client::stdio(command)
    };
    let client = connect.answers(answers(&terminal)?).connect().await?;
    let outcome = run(&client, &args[1..]).await;
    client.close().await;
    outcome
}

async fn run(client: &Client, args: &[String]) -> anyhow::Result<()> {
    let Some(tool) = args.first() else {
        let mut out = std::io::stdout().lock();
        for tool in client.list_tools().await? {
            let written = writeln!(out, "{:<40} {}", tool.name, tool.description.as_deref().unwrap_or(""));
            // Piped into `head`, the listing ends where the reader stopped reading.
            if written.as_ref().is_err_and(|error| error.kind() == std::io::ErrorKind::BrokenPipe) {
                break;
            }
            written?;
        }
        return Ok(());
    };
    let arguments: Value = match args.get(1) {
        Some(json) => serde_json::from_str(json).context("the arguments are not JSON")?,
        None => Value::Object(Map::new()),
    };
    let (call, mut progress) = client.call_tool(tool, arguments).with_progress();
    // The server's progress, on stderr while the call runs.
    let report = async {
        while let Some(update) = progress.next().await {
            let total = update.total.map_or_else(String::new, |total| format!(" of {total}"));
            let message = update.message.map_or_else(String::new, |message| format!(": {message}"));
            eprintln!("… {}{total}{message}", update.progress);
        }
    };
    let (result, ()) = tokio::join!(std::future::IntoFuture::into_future(call), report);
    let result = result?;
    println!("\n{}", result.all_text());
    if let Some(structured) = &result.structured_content {
        println!("{}", serde_json::to_string_pretty(structured)?);
    }
    if result.is_error() {
        bail!("the tool failed");
    }
    Ok(())
}
