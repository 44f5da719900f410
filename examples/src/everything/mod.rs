//! `everything`: the conformance fixture. It registers the tools, prompts and resources
//! that the official MCP conformance suite calls by name, with the behaviour each
//! scenario describes.

pub mod apps;
pub mod bridge;
pub mod live;
pub mod mrtr;
pub mod round_trip;
pub mod tasks;

use std::time::Duration;

use mcp_mrtr::protocol::CompletionReference;
use mcp_mrtr::request_state::StateConfig;
use mcp_mrtr::{
    catalog::Subscriptions, handler::PromptArguments, protocol::CallToolResult, protocol::CompleteParams,
    protocol::Completion, protocol::ContentBlock, protocol::LoggingLevel, protocol::Prompt, protocol::PromptArgument,
    protocol::PromptMessage, protocol::Resource, protocol::ResourceContents, protocol::ResourceTemplate,
    protocol::Tool, Ctx, Server, ToolError,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// A 1×1 red PNG.
pub const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file holding one silent 8 kHz sample.
pub const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQIAAACAgA==";

type NoArgs = Map<String, Value>;

/// The fixture server.
pub fn server() -> Server {
    let server = Server::new("mcp-mrtr-everything", env!("CARGO_PKG_VERSION"))
        .instructions("Conformance fixture for mcp-mrtr: every tool, prompt and resource the MCP suite calls.")
        .logging(true)
        .subscriptions(Subscriptions::default())
        .completion(complete);
    let server = content_tools(server);
    let server = behaviour_tools(server);
    let server = prompts(server);
    let server = mrtr::register(server);
    let server = bridge::register(server);
    let server = live::register(server);
    let server = tasks::register(server);
    let server = apps::register(server);
    let server = server.skills(skills());
    resources(server)
}

/// The skills of `examples/skills` (SEP-2640): one at the top, one under a prefix, each
/// with a supporting file in a subfolder, as the conformance scenarios browse them.
fn skills() -> mcp_mrtr::skills::Skills {
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/skills");
    mcp_mrtr::skills::Skills::from_dir(folder)
        .unwrap_or_else(|error| panic!("the fixture's skills at {folder}: {error}"))
}

/// The settings a deployment gives the fixture through its environment: Redis for the
/// stores that several instances share (`MCP_MRTR_REDIS_URL`), the task lease
/// (`MCP_MRTR_TASK_LEASE_MS`), and whether this instance leaves its tasks to task workers
/// (`MCP_MRTR_TASKS_ON_WORKERS=1`: a front end, as the soak runs one). The key ring
/// (`MCP_MRTR_STATE_KEYS`) is read by the runtime itself when serving starts.
/// `MCP_MRTR_BENCH_ROUND_TRIP` is for measuring only (see [`round_trip`]).
pub async fn from_env(mut server: Server) -> anyhow::Result<Server> {
    use anyhow::Context as _;
    let mut tasks = mcp_mrtr::tasks::TaskConfig::default();
    if let Ok(lease) = std::env::var("MCP_MRTR_TASK_LEASE_MS") {
        let millis: u64 = lease.parse().with_context(|| format!("MCP_MRTR_TASK_LEASE_MS: not a number: {lease:?}"))?;
        tasks = tasks.lease(Duration::from_millis(millis));
    }
    match std::env::var("MCP_MRTR_TASKS_ON_WORKERS").as_deref() {
        Ok("1" | "true") => tasks = tasks.run_on_workers(true),
        Ok("" | "0" | "false") | Err(_) => {}
        Ok(other) => anyhow::bail!("MCP_MRTR_TASKS_ON_WORKERS: 1 or 0, got {other:?}"),
    }
    if let Ok(rate) = std::env::var("MCP_MRTR_TASK_RATE") {
        // For load runs: one client (the load client's one address) starting tasks at
        // this rate, with as many live at once; the defaults suit a shared server.
        let per_second: u32 = rate.parse().with_context(|| format!("MCP_MRTR_TASK_RATE: not a number: {rate:?}"))?;
        let limits = mcp_mrtr::tasks::TaskLimits::default()
            .creation_rate(f64::from(per_second), per_second)
            .max_live_tasks_per_client(per_second.try_into().unwrap_or(usize::MAX));
        tasks = tasks.limits(limits);
    }
    let mut listen = None;
    if let Some(streams) = max_listeners()? {
        listen = Some(Subscriptions::default().max_streams(streams));
    }
    if let Ok(redis) = std::env::var("MCP_MRTR_BENCH_ROUND_TRIP") {
        tasks = tasks.store(round_trip::RoundTripStore::new(redis));
    }
    if let Some(config) = redis_config()? {
        let redis = mcp_mrtr::redis::Redis::connect(config).await.context("Redis (MCP_MRTR_REDIS_*)")?;
        server = server.request_state(StateConfig::default().single_use(redis.state_guard()));
        tasks = tasks.store(redis.task_store());
        let fanout = redis.change_fanout().await.context("Redis (MCP_MRTR_REDIS_*)")?;
        listen = Some(listen.unwrap_or_default().fanout(fanout));
        tracing::info!("single-use states, tasks and list changes are in Redis");
    }
    if let Some(listen) = listen {
        server = server.subscriptions(listen);
    }
    Ok(server.tasks(tasks))
}

/// The environment variables [`from_env`] reads (and [`tasks::OUTBOX`], which a tool
/// reads), so a harness starting the fixture can clear those of its own environment.
pub const ENV: [&str; 14] = [
    "MCP_MRTR_STATE_KEYS",
    "MCP_MRTR_REDIS_URL",
    "MCP_MRTR_REDIS_CLUSTER",
    "MCP_MRTR_REDIS_SENTINELS",
    "MCP_MRTR_REDIS_MASTER",
    "MCP_MRTR_REDIS_CA",
    "MCP_MRTR_REDIS_CERT",
    "MCP_MRTR_REDIS_KEY",
    "MCP_MRTR_TASK_LEASE_MS",
    "MCP_MRTR_TASKS_ON_WORKERS",
    "MCP_MRTR_TASK_RATE",
    "MCP_MRTR_MAX_LISTENERS",
    "MCP_MRTR_BENCH_ROUND_TRIP",
    tasks::OUTBOX,
];

/// How to reach Redis: a cluster's seed URLs (`MCP_MRTR_REDIS_CLUSTER`,
/// `redis://host:port,…`), or the sentinels (`MCP_MRTR_REDIS_SENTINELS`, `host:port,…`)
/// watching the service `MCP_MRTR_REDIS_MASTER` (`mymaster`), or one URL
/// (`MCP_MRTR_REDIS_URL`); `rediss://` for TLS, with the PEM files of `MCP_MRTR_REDIS_CA`
/// (a private CA, instead of the system's roots) and `MCP_MRTR_REDIS_CERT` with
/// `MCP_MRTR_REDIS_KEY` (a client certificate).
pub(crate) fn redis_config() -> anyhow::Result<Option<mcp_mrtr::redis::RedisConfig>> {
    use anyhow::Context as _;
    use mcp_mrtr::redis::RedisConfig;
    let var = |name: &str| std::env::var(name).ok();
    let mut config = if let Some(seeds) = var("MCP_MRTR_REDIS_CLUSTER") {
        RedisConfig::cluster(seeds.split(','))
    } else if let Some(sentinels) = var("MCP_MRTR_REDIS_SENTINELS") {
        RedisConfig::sentinel(
            var("MCP_MRTR_REDIS_MASTER").unwrap_or_else(|| "mymaster".to_owned()),
            sentinels.split(','),
        )
    } else if let Some(url) = var("MCP_MRTR_REDIS_URL") {
        RedisConfig::url(url)
    } else {
        return Ok(None);
    };
    let read = |name: &str| -> anyhow::Result<Option<Vec<u8>>> {
        let Some(path) = var(name) else { return Ok(None) };
        std::fs::read(&path).map(Some).with_context(|| format!("{name}: cannot read {path:?}"))
    };
    if let Some(ca) = read("MCP_MRTR_REDIS_CA")? {
        config = config.ca_certificate(ca);
    }
    match (read("MCP_MRTR_REDIS_CERT")?, read("MCP_MRTR_REDIS_KEY")?) {
        (Some(cert), Some(key)) => config = config.client_certificate(cert, key),
        (None, None) => {}
        _ => anyhow::bail!("MCP_MRTR_REDIS_CERT and MCP_MRTR_REDIS_KEY go together"),
    }
    Ok(Some(config))
}

/// `MCP_MRTR_MAX_LISTENERS`: how many listen streams the server holds, for load runs
/// past the default 1,024 (the HTTP server then allows as many connections and more).
pub fn max_listeners() -> anyhow::Result<Option<usize>> {
    use anyhow::Context as _;
    std::env::var("MCP_MRTR_MAX_LISTENERS")
        .ok()
        .map(|n| n.parse().with_context(|| format!("MCP_MRTR_MAX_LISTENERS: not a number: {n:?}")))
        .transpose()
}

fn content_tools(server: Server) -> Server {
    server
        .tool(
            Tool::new("test_simple_text").description("Returns a simple text response").handler(
                |_ctx, _args: NoArgs| async { Ok::<_, ToolError>("This is a simple text response for testing.") },
            ),
        )
        .tool(
            Tool::new("test_image_content").description("Returns an image (a 1x1 PNG)").handler(
                |_ctx, _args: NoArgs| async { Ok::<_, ToolError>(ContentBlock::image(PNG_BASE64, "image/png")) },
            ),
        )
        .tool(
            Tool::new("test_audio_content").description("Returns audio (a tiny WAV)").handler(
                |_ctx, _args: NoArgs| async { Ok::<_, ToolError>(ContentBlock::audio(WAV_BASE64, "audio/wav")) },
            ),
        )
        .tool(
            Tool::new("test_embedded_resource")
                .description("Returns an embedded text resource")
                .handler(|_ctx, _args: NoArgs| async { Ok::<_, ToolError>(ContentBlock::resource(embedded_text())) }),
        )
        .tool(Tool::new("test_multiple_content_types").description("Returns text, an image and a resource").handler(
            |_ctx, _args: NoArgs| async {
                Ok::<_, ToolError>(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(PNG_BASE64, "image/png"),
                    ContentBlock::resource(ResourceContents::text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({"test": "data", "value": 123}).to_string(),
                    )),
                ])
            },
        ))
}

fn embedded_text() -> ResourceContents {
    ResourceContents::text("test://embedded-resource", "text/plain", "This is an embedded resource content.")
}

fn behaviour_tools(server: Server) -> Server {
    server
        .tool(Tool::new("test_error_handling").description("Always fails, as a tool error result").handler(
            |_ctx, _args: NoArgs| async {
                Err::<CallToolResult, _>(ToolError::new("This tool intentionally returns an error for testing"))
            },
        ))
        .tool(
            Tool::new("test_tool_with_progress")
                .description("Reports progress 0, 50 and 100 (of 100), then answers")
                .handler(with_progress),
        )
        .tool(
            Tool::new("test_logging_tool")
                .description("Logs three messages to requests that set a log level, then answers")
                .handler(with_logging),
        )
        .tool(
            Tool::new("test_tool_with_logging")
                .description("Logs three messages at info level, 50 ms apart, then answers")
                .handler(with_logging),
        )
        .tool(
            Tool::new("json_schema_2020_12_tool")
                .description("Takes arguments described with JSON Schema 2020-12 keywords")
                .input_schema(json_schema_2020_12())
                .handler(|_ctx, args: NoArgs| async move {
                    Ok::<_, ToolError>(format!("received {}", Value::Object(args)))
                }),
        )
}

async fn with_progress(ctx: Ctx, _args: NoArgs) -> Result<String, ToolError> {
    for step in [0.0, 50.0, 100.0] {
        if step > 0.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.progress(step).of(100.0).await;
    }
    Ok("Progress complete".into())
}

async fn with_logging(ctx: Ctx, _args: NoArgs) -> Result<String, ToolError> {
    for (i, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LoggingLevel::Info, Some("everything"), message).await;
    }
    Ok("Logging test completed".into())
}

fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "email": { "type": "string" },
            "phone": { "type": "string" },
            "kind": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["email"] }, { "required": ["phone"] }] }],
        "if": { "properties": { "kind": { "const": "company" } } },
        "then": { "required": ["name"] },
        "else": {},
        "additionalProperties": false
    })
}

#[derive(Deserialize)]
struct TwoArgs {
    arg1: String,
    arg2: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceUriArg {
    resource_uri: String,
}

fn prompts(server: Server) -> Server {
    server
        .prompt(Prompt::new("test_simple_prompt").description("A prompt without arguments").handler(
            |_ctx, _args: PromptArguments| async {
                Ok::<_, ToolError>(vec![PromptMessage::user("This is a simple prompt for testing.")])
            },
        ))
        .prompt(
            Prompt::new("test_prompt_with_arguments")
                .description("A prompt with two required arguments")
                .argument(PromptArgument::required("arg1", "First test argument"))
                .argument(PromptArgument::required("arg2", "Second test argument"))
                .handler(|_ctx, args: TwoArgs| async move {
                    let text = format!("Prompt with arguments: arg1='{}', arg2='{}'", args.arg1, args.arg2);
                    Ok::<_, ToolError>(vec![PromptMessage::user(text)])
                }),
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .description("A prompt that embeds the resource it is given")
                .argument(PromptArgument::required("resourceUri", "URI of the resource to embed"))
                .handler(|_ctx, args: ResourceUriArg| async move {
                    let contents = ResourceContents::text(
                        &args.resource_uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    );
                    Ok::<_, ToolError>(vec![
                        PromptMessage::user(ContentBlock::resource(contents)),
                        PromptMessage::user("Please process the embedded resource above."),
                    ])
                }),
        )
        .prompt(Prompt::new("test_prompt_with_image").description("A prompt with an image").handler(
            |_ctx, _args: PromptArguments| async {
                Ok::<_, ToolError>(vec![
                    PromptMessage::user(ContentBlock::image(PNG_BASE64, "image/png")),
                    PromptMessage::user("Please analyze the image above."),
                ])
            },
        ))
}

#[derive(Deserialize)]
struct IdVar {
    id: String,
}

fn resources(server: Server) -> Server {
    server
        .resource(
            Resource::new("test://static-text", "static-text")
                .description("A static text resource")
                .mime_type("text/plain")
                .handler(|_ctx| async {
                    Ok::<_, ToolError>(ResourceContents::text(
                        "test://static-text",
                        "text/plain",
                        "This is the content of the static text resource.",
                    ))
                }),
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .description("A static binary resource (a PNG)")
                .mime_type("image/png")
                .handler(|_ctx| async {
                    Ok::<_, ToolError>(ResourceContents::blob("test://static-binary", "image/png", PNG_BASE64))
                }),
        )
        .resource(
            // The resource the suite's resources-subscribe and resources-unsubscribe
            // scenarios subscribe to: a session subscribes only to what is served.
            Resource::new("test://watched-resource", "watched-resource")
                .description("A text resource to subscribe to for updates")
                .mime_type("text/plain")
                .handler(|_ctx| async {
                    Ok::<_, ToolError>(ResourceContents::text(
                        "test://watched-resource",
                        "text/plain",
                        "This resource is watched by subscribers.",
                    ))
                }),
        )
        .resource(
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .description("JSON data for any id")
                .mime_type("application/json")
                .handler(|_ctx, vars: IdVar| async move {
                    let uri = format!("test://template/{}/data", vars.id);
                    let body =
                        json!({ "id": vars.id, "templateTest": true, "data": format!("Data for ID: {}", vars.id) });
                    Ok::<_, ToolError>(ResourceContents::text(uri, "application/json", body.to_string()))
                }),
        )
}

async fn complete(_ctx: Ctx, params: CompleteParams) -> Result<Completion, ToolError> {
    let candidates: &[&str] = match (&params.reference, params.argument.name.as_str()) {
        (CompletionReference::Prompt { name }, "arg1" | "arg2") if name == "test_prompt_with_arguments" => {
            &["paris", "park", "party", "test", "testing", "value"]
        }
        _ => &[],
    };
    let prefix = params.argument.value.as_str();
    Ok(Completion::from_values(candidates.iter().filter(|c| c.starts_with(prefix)).map(|c| (*c).to_owned()).collect()))
}
