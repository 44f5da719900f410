//! What the macros put in the listings: names, descriptions, input and output schemas,
//! prompt arguments and resource templates, exactly.

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;
use mcp_mrtr_tests::harness::{refusal, Rpc, TestServer};
use serde_json::json;

/// A forecast.
#[derive(Serialize, JsonSchema)]
struct Forecast {
    high: i32,
    /// A warning, when there is one: `null` otherwise.
    warning: Option<String>,
}

/// Forecast for a city.
///
/// Days ahead are optional.
#[tool(title = "Forecast", read_only, idempotent)]
async fn forecast(
    /// The city.
    city: String,
    days: Option<u8>,
) -> Result<Json<Forecast>, ToolError> {
    let high = i32::from(days.unwrap_or(0)) + i32::try_from(city.len()).unwrap_or(0);
    Ok(Json(Forecast { high, warning: None }))
}

/// Summarises a topic.
#[prompt(name = "summary")]
async fn summarise(
    /// What to summarise.
    topic: String,
    style: Option<String>,
) -> Result<Vec<PromptMessage>, ToolError> {
    Ok(vec![PromptMessage::user(format!("Summarise {topic} ({})", style.unwrap_or_default()))])
}

/// Notes by name.
#[resource(uri = "notes://{name}", mime_type = "text/markdown")]
async fn note(name: String) -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text(format!("notes://{name}"), "text/markdown", format!("# {name}")))
}

fn server() -> Server {
    Server::new("schemas", "0").tool(forecast).prompt(summarise).resource(note)
}

#[tokio::test]
async fn tools_list_shows_the_generated_schemas() {
    let server = TestServer::start(server()).await;
    let tool = server.call(&Rpc::new("tools/list")).await["result"]["tools"][0].clone();
    assert_eq!(tool["name"], "forecast");
    assert_eq!(tool["title"], "Forecast");
    assert_eq!(tool["description"], "Forecast for a city.\n\nDays ahead are optional.");
    assert_eq!(tool["annotations"], json!({ "readOnlyHint": true, "idempotentHint": true }));
    let input = &tool["inputSchema"];
    assert_eq!(input["type"], "object");
    assert!(input.get("title").is_none(), "the generated struct's name leaks: {input}");
    assert_eq!(input["properties"]["city"], json!({ "type": "string", "description": "The city." }));
    // Optional is "not required", not a type array some clients reject.
    assert_eq!(input["properties"]["days"]["type"], "integer");
    assert_eq!(input["required"], json!(["city"]));
    assert_eq!(tool["outputSchema"]["properties"]["high"]["type"], "integer");
    // What a strict (draft-07, no formats) validator such as the MCP Inspector's refuses
    // to compile is left out: the 2020-12 `$schema` line and schemars' numeric formats,
    // whose bounds are kept.
    assert_eq!(input["properties"]["days"], json!({ "type": "integer", "minimum": 0, "maximum": 255 }));
    assert_eq!(
        tool["outputSchema"]["properties"]["high"],
        json!({ "type": "integer", "minimum": i32::MIN, "maximum": i32::MAX })
    );
    for schema in [input, &tool["outputSchema"]] {
        assert!(schema.get("$schema").is_none(), "{schema}");
    }
    // An `Option` in the result keeps its null, without a type array (issue 50)...
    assert_eq!(
        tool["outputSchema"]["properties"]["warning"],
        json!({ "description": "A warning, when there is one: `null` otherwise.",
            "anyOf": [{ "type": "string" }, { "type": "null" }] })
    );
    // ...so a result whose `warning` is `None` is valid against the schema listed.
    let result = server.call(&Rpc::call_tool("forecast", json!({ "city": "Lyon" }))).await;
    let structured = &result["result"]["structuredContent"];
    assert_eq!(structured["warning"], serde_json::Value::Null, "{result}");
    let validator = jsonschema::validator_for(&tool["outputSchema"]).expect("a schema");
    assert!(validator.is_valid(structured), "{structured} against {}", tool["outputSchema"]);
}

/// Every schema this file's tools and the fixture's generate, walked whole: no type arrays,
/// no `$schema`, no format outside JSON Schema's own vocabulary.
#[tokio::test]
async fn generated_schemas_are_ones_a_strict_client_takes() {
    const STANDARD: &[&str] = &[
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "uuid",
        "regex",
    ];
    fn walk(at: &str, value: &serde_json::Value, problems: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(object) => {
                if let Some(serde_json::Value::Array(_)) = object.get("type") {
                    problems.push(format!("{at}: a type array"));
                }
                if let Some(format) = object.get("format").and_then(serde_json::Value::as_str) {
                    if !STANDARD.contains(&format) {
                        problems.push(format!("{at}: format {format}"));
                    }
                }
                for (key, inner) in object {
                    walk(&format!("{at}/{key}"), inner, problems);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(at, item, problems)),
            _ => {}
        }
    }
    let mut tools = Vec::new();
    for server in [TestServer::start(server()).await, TestServer::everything().await] {
        let listed = server.call(&Rpc::new("tools/list")).await["result"]["tools"].clone();
        tools.extend(listed.as_array().unwrap().iter().cloned());
    }
    let mut problems = Vec::new();
    // The hand-written JSON Schema 2020-12 tool keeps what its author wrote.
    for tool in tools.iter().filter(|t| t["name"] != "json_schema_2020_12_tool") {
        for key in ["inputSchema", "outputSchema"] {
            let schema = &tool[key];
            if schema.get("$schema").is_some() {
                problems.push(format!("{}/{key}: $schema", tool["name"]));
            }
            walk(&format!("{}/{key}", tool["name"]), schema, &mut problems);
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[tokio::test]
async fn structured_results_and_bad_arguments() {
    let client = TestClient::new(server());
    let done = client.call_tool("forecast", json!({ "city": "Lyon", "days": 2 })).start().await;
    let result = done.complete().expect("complete");
    assert_eq!(result["structuredContent"], json!({ "high": 6, "warning": null }));
    // SEP-1303: arguments that do not decode are a tool execution error naming the field,
    // which the model reads and corrects; not a protocol error a host shows as a failure.
    let bad = client.call_tool("forecast", json!({ "days": 2 })).start().await;
    let result = bad.complete().expect("a tool execution error");
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Invalid arguments for tool forecast") && text.contains("missing field `city`"), "{text}");
}

#[tokio::test]
async fn prompts_and_templates_are_listed_from_their_signatures() {
    let server = TestServer::start(server()).await;
    let prompt = server.call(&Rpc::new("prompts/list")).await["result"]["prompts"][0].clone();
    assert_eq!(prompt["name"], "summary");
    assert_eq!(
        prompt["arguments"],
        json!([
            { "name": "topic", "description": "What to summarise.", "required": true },
            { "name": "style", "required": false },
        ])
    );
    let templates = server.call(&Rpc::new("resources/templates/list")).await["result"]["resourceTemplates"].clone();
    assert_eq!(
        templates,
        json!([{ "uriTemplate": "notes://{name}", "name": "note", "title": "Note", "description": "Notes by name.",
            "mimeType": "text/markdown" }])
    );
    let read = server.call(&Rpc::new("resources/read").param("uri", json!("notes://todo"))).await;
    assert_eq!(read["result"]["contents"][0]["text"], "# todo");
}

#[derive(Deserialize, JsonSchema)]
struct Address {
    street: String,
}

#[derive(Deserialize, JsonSchema)]
struct Nested {
    #[allow(dead_code)]
    address: Address,
}

/// Asks for a type no form can hold.
#[tool]
async fn nested_form() -> Result<String, ToolError> {
    let nested: Nested = ask!(elicit "Where?")?;
    Ok(nested.address.street)
}

#[test]
fn a_type_that_cannot_be_a_form_stops_the_server_from_serving() {
    let message = refusal(Server::new("bad", "0").tool(nested_form));
    assert!(message.contains("nested_form") && message.contains("`address`"), "{message}");
}

#[test]
fn at_run_time_a_route_that_cannot_be_served_is_refused_by_the_handle() {
    let server = Server::new("live", "0");
    let refused = server.catalog().tools().add(nested_form).expect_err("an unfit route is refused");
    assert!(matches!(refused, mcp_mrtr::catalog::CatalogError::Unfit { kind: "tool", .. }), "{refused:?}");
    assert!(server.into_router(mcp_mrtr::http::HttpConfig::default()).is_ok(), "the server itself is fine");
}

mod declined_forms {
    use mcp_mrtr::prelude::*;

    #[derive(Deserialize, JsonSchema)]
    pub(crate) struct Address {
        pub(crate) city: String,
    }

    /// Nested objects cannot be a form.
    #[derive(Deserialize, JsonSchema)]
    pub(crate) struct Contact {
        pub(crate) address: Address,
    }

    /// Asks for a contact, handling a decline.
    #[tool]
    pub(crate) async fn contact() -> Result<String, ToolError> {
        let answer: Result<Contact, Declined> = ask!(elicit "Who?");
        Ok(answer.map_or_else(|d| d.to_string(), |c| c.address.city))
    }

    /// Asks for a contact, the form named only in a `match` pattern (the guide's style).
    #[tool]
    pub(crate) async fn contact_matched() -> Result<String, ToolError> {
        match ask!(key = "contact", elicit "Who?") {
            Ok(Contact { address }) => Ok(address.city),
            Err(declined) => Ok(declined.to_string()),
        }
    }

    /// The same, in an `if let`.
    #[tool]
    pub(crate) async fn contact_if_let() -> Result<String, ToolError> {
        let city = if let Ok(Contact { address }) = ask!(key = "contact", elicit "Who?") {
            address.city
        } else {
            "nobody".into()
        };
        Ok(city)
    }
}

#[test]
fn a_form_bound_as_a_result_is_checked_when_the_tool_is_registered() {
    let message = refusal(Server::new("s", "1").tool(declined_forms::contact));
    assert!(message.contains("which cannot be a form"), "{message}");
}

/// Issue 50: a form named only in a pattern was first met at the first call, which failed
/// with "see the server's log".
#[test]
fn a_form_named_only_in_a_pattern_is_checked_when_the_tool_is_registered() {
    for tool in [declined_forms::contact_matched(), declined_forms::contact_if_let()] {
        let message = refusal(Server::new("s", "1").tool(tool));
        assert!(message.contains("which cannot be a form") && message.contains("`address`"), "{message}");
    }
}

mod helper_forms {
    use mcp_mrtr::prelude::*;

    pub(crate) use super::declined_forms::Contact;

    /// A helper that asks for a contact: the tool's body does not name the form.
    pub(crate) async fn ask_contact(ctx: &Ctx) -> Result<Contact, ToolError> {
        Ok(ask!(ctx, key = "contact", elicit "Who?")?)
    }

    /// Asks through a helper and declares the helper's form.
    #[tool(forms = [Contact])]
    pub(crate) async fn declared(ctx: &Ctx) -> Result<String, ToolError> {
        Ok(ask_contact(ctx).await?.address.city)
    }

    /// Asks through a helper without declaring its form.
    #[tool]
    pub(crate) async fn undeclared(ctx: &Ctx) -> Result<String, ToolError> {
        Ok(ask_contact(ctx).await?.address.city)
    }
}

#[test]
fn a_form_a_helper_asks_for_is_checked_at_registration_once_declared() {
    let message = refusal(Server::new("s", "1").tool(helper_forms::declared));
    assert!(message.contains("handler `declared` asks for a `"), "{message}");
}

/// Undeclared, it fails on the call, saying why (the field that cannot be in a form: where
/// a person sees it without a log, issue 50), but never the Rust type.
#[tokio::test]
async fn an_undeclared_helper_form_fails_the_call_saying_why_without_naming_the_type() {
    let client = mcp_mrtr::testing::TestClient::new(mcp_mrtr::Server::new("s", "1").tool(helper_forms::undeclared));
    let round = client.call_tool("undeclared", serde_json::json!({})).start().await;
    let error = round.error().expect("the question cannot be asked");
    assert!(error.message().contains("cannot ask this question"), "{error:?}");
    assert!(error.message().contains("`address`"), "says why: {error:?}");
    assert!(!error.message().contains("Contact") && !error.message().contains("::"), "{error:?}");
}

mod list_output {
    use mcp_mrtr::prelude::*;

    /// Lists names, as a bare array: not a structured result MCP allows.
    #[tool]
    pub(crate) async fn names() -> Result<Json<Vec<String>>, ToolError> {
        Ok(Json(vec!["a".into()]))
    }
}

#[test]
fn a_structured_result_that_is_not_an_object_is_refused_at_registration() {
    let message = refusal(Server::new("s", "1").tool(list_output::names));
    assert!(message.contains("is not a JSON object"), "{message}");
}

/// What the macros read from a handler's types, not from how they are spelled.
mod by_type {
    use mcp_mrtr::prelude::*;

    use super::Forecast;

    /// An alias of `Json<_>`: still a structured result.
    pub(crate) type Report = Result<mcp_mrtr::Json<Forecast>, ToolError>;
    /// An alias of `Option`: still an optional argument.
    pub(crate) type Maybe<T> = Option<T>;

    /// A type of the user's own that happens to be called `Json`: not ours.
    pub(crate) struct Json(pub(crate) String);

    impl mcp_mrtr::handler::IntoToolResult for Json {
        fn into_tool_result(self) -> CallToolResult {
            self.0.into_tool_result()
        }
    }

    /// Forecast, through an alias.
    #[tool]
    pub(crate) async fn aliased() -> Report {
        Ok(mcp_mrtr::Json(Forecast { high: 3, warning: None }))
    }

    /// Text, in a user's own `Json`.
    #[tool]
    pub(crate) async fn own_json() -> Result<Json, ToolError> {
        Ok(Json("plain".into()))
    }

    /// A greeting.
    #[prompt]
    pub(crate) async fn greet(name: String, tone: Maybe<String>) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![PromptMessage::user(format!("Greet {name} {}", tone.unwrap_or_default()))])
    }
}

#[tokio::test]
async fn structured_results_and_optional_prompt_arguments_are_read_from_the_types() {
    let server =
        TestServer::start(Server::new("s", "1").tool(by_type::aliased).tool(by_type::own_json).prompt(by_type::greet))
            .await;
    let tools = server.call(&Rpc::new("tools/list")).await["result"]["tools"].clone();
    let tool = |name: &str| tools.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone();
    assert_eq!(tool("aliased")["outputSchema"]["properties"]["high"]["type"], "integer");
    assert!(tool("own_json").get("outputSchema").is_none(), "{}", tool("own_json"));
    let prompt = server.call(&Rpc::new("prompts/list")).await["result"]["prompts"][0].clone();
    assert_eq!(
        prompt["arguments"],
        json!([{ "name": "name", "required": true }, { "name": "tone", "required": false }])
    );
    let get = Rpc::new("prompts/get").param("name", json!("greet")).param("arguments", json!({ "name": "Ada" }));
    let got = server.call(&get).await;
    assert!(got["result"]["messages"][0]["content"]["text"].as_str().unwrap().starts_with("Greet Ada"), "{got}");
}

#[test]
fn a_hand_written_template_that_is_malformed_stops_the_server_from_serving() {
    let template = mcp_mrtr::protocol::ResourceTemplate::new("notes://{name", "notes")
        .handler(|_ctx, _vars: serde_json::Value| async { Ok::<_, ToolError>(Vec::<ResourceContents>::new()) });
    let message = refusal(Server::new("s", "1").resource(template));
    assert!(message.contains("malformed uri template \"notes://{name\": a `{` is never closed"), "{message}");
}

#[test]
fn a_hand_written_output_schema_that_is_not_an_object_is_refused_too() {
    let tool = mcp_mrtr::protocol::Tool::new("list")
        .output_schema(json!({ "type": "array", "items": { "type": "string" } }))
        .handler(|_ctx, _args: serde_json::Value| async { Ok::<_, ToolError>("") });
    let message = refusal(Server::new("s", "1").tool(tool));
    assert!(message.contains("this one's type is \"array\""), "{message}");
}

/// The same doc comments on a plain schemars struct: what `#[tool]`'s argument docs must
/// amount to. The macro works the split out itself (a compile-time saving), so this
/// catches a schemars release that splits differently.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code, reason = "only its schema is read")]
struct DocShapes {
    /// One line.
    plain: String,
    /// First paragraph.
    ///
    /// Second paragraph.
    paragraphs: String,
    /// # A heading
    /// Then the text,
    /// on two lines.
    headed: String,
    /// ## Only a heading
    heading_only: String,
    ///   Indented, with trailing spaces.   
    padded: String,
}

/// Every doc shape of [`DocShapes`], as arguments.
#[tool]
async fn doc_shapes(
    /// One line.
    plain: String,
    /// First paragraph.
    ///
    /// Second paragraph.
    paragraphs: String,
    /// # A heading
    /// Then the text,
    /// on two lines.
    headed: String,
    /// ## Only a heading
    heading_only: String,
    ///   Indented, with trailing spaces.   
    padded: String,
) -> Result<String, ToolError> {
    Ok([plain, paragraphs, headed, heading_only, padded].concat())
}

#[tokio::test]
async fn argument_docs_read_as_schemars_reads_a_fields_docs() {
    let server = TestServer::start(Server::new("docs", "0").tool(doc_shapes)).await;
    let tool = server.call(&Rpc::new("tools/list")).await["result"]["tools"][0].clone();
    let derived = serde_json::to_value(schemars::schema_for!(DocShapes)).unwrap();
    for field in ["plain", "paragraphs", "headed", "heading_only", "padded"] {
        assert_eq!(tool["inputSchema"]["properties"][field], derived["properties"][field], "{field}");
    }
    assert_eq!(derived["properties"]["headed"]["title"], "A heading", "the shapes cover a title");
}
