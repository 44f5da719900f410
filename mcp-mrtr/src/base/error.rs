//! Protocol errors: a JSON-RPC error code, message and data, plus the HTTP status the
//! Streamable HTTP transport answers with.
//!
//! Tool *execution* failures are not errors here: they are results with `isError: true`
//! (see [`ToolError`](crate::ToolError)).

use std::borrow::Cow;
use std::fmt;

use serde_json::{json, Value};

use crate::protocol::{ErrorObject, Outgoing, RequestId};

/// A JSON-RPC error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// The body is not JSON.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// Not a JSON-RPC request object.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// Unknown, removed or unadvertised method.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Bad parameters: envelope, arguments, cursor, unknown tool, bad request state.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// Unexpected server failure.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// An HTTP header is missing, malformed or disagrees with the body.
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// The handler needs a client capability the request did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// The request's protocol version is not one the server speaks.
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
}

/// A protocol error, sent as a JSON-RPC error response.
///
/// Returned from a handler (through `?` or `.into()`), it keeps its code: the client
/// gets the JSON-RPC error, not a tool result.
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::{Error, ErrorCode};
///
/// /// A note, by id; there are none yet.
/// #[resource(uri = "notes://{id}")]
/// async fn note(id: String) -> Result<ResourceContents, ToolError> {
///     Err(Error::resource_not_found(&format!("notes://{id}")).into())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(Server::new("notes", "1.0.0").resource(note));
/// let read = client.read_resource("notes://7").start().await;
/// let error = read.error().unwrap();
/// assert_eq!(error.code(), ErrorCode::INVALID_PARAMS);
/// assert_eq!(error.data().unwrap()["uri"], "notes://7");
/// // A code of the application's own:
/// let quota = Error::new(ErrorCode(-32050), "quota exhausted");
/// assert_eq!(quota.to_string(), "quota exhausted (-32050)");
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    code: ErrorCode,
    message: Cow<'static, str>,
    /// Boxed: most errors carry none, and an error travels in every `Result` of the
    /// request path (a JSON value is several times larger with `preserve_order`).
    data: Option<Box<Value>>,
    /// Set where the spec fixes a status that the code alone does not imply
    /// (`-32602` for a malformed envelope is 400, elsewhere 200).
    status: Option<u16>,
}

impl Error {
    /// An error with any code.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self { code, message: message.into(), data: None, status: None }
    }

    /// Attaches structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(Box::new(data));
        self
    }

    pub(crate) fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// The same error, with `note` added to its message.
    pub(crate) fn with_note(mut self, note: &str) -> Self {
        self.message = format!("{}; {note}", self.message).into();
        self
    }

    /// `-32700`: the body is not JSON.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// `-32600`: not a valid JSON-RPC request.
    pub fn invalid_request(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, detail)
    }

    /// `-32601`: the method is unknown or not served.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// `-32602`: bad parameters.
    pub fn invalid_params(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, detail)
    }

    /// `-32602` "Unknown {what}: {name}", with the client's name [`shown`] short.
    pub(crate) fn unknown(what: &str, name: &str) -> Self {
        Self::invalid_params(format!("Unknown {what}: {}", shown(name)))
    }

    /// `-32603`: the server failed.
    pub fn internal(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, detail)
    }

    /// `-32020`: an HTTP header is missing or disagrees with the body.
    pub fn header_mismatch(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::HEADER_MISMATCH, detail)
    }

    /// `-32021`: the request needs client capabilities it did not declare.
    ///
    /// `required` is a `ClientCapabilities` object naming what is missing,
    /// such as `{"sampling": {}}`.
    ///
    /// The message names each missing capability by its path (`sampling`,
    /// `elicitation.url`): hosts show the message and drop `data`, and a person or a model
    /// must learn what was missing from it alone.
    pub fn missing_client_capability(required: Value) -> Self {
        let mut names = Vec::new();
        capability_paths(&required, &mut String::new(), &mut names);
        let message = match names.as_slice() {
            [] => "Missing required client capability".to_owned(),
            [one] => format!(
                "Missing required client capability: {one}. This request needs the client to offer it, \
                 and this client did not declare it"
            ),
            many => format!(
                "Missing required client capabilities: {}. This request needs the client to offer them, \
                 and this client did not declare them",
                many.join(", ")
            ),
        };
        let mut data = serde_json::Map::new();
        data.insert("requiredCapabilities".into(), required);
        Self::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message).with_data(Value::Object(data))
    }

    /// `-32601` for a 2025-11-25 caller of a tool that runs only as a task: that revision
    /// has no tasks, so this session cannot run it (its `tools/list` leaves such tools out).
    pub(crate) fn task_only_tool_in_legacy_session() -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            "this tool runs only as a task, which needs protocol version 2026-07-28: this session cannot run it",
        )
    }

    /// `-32022`: the requested protocol version is not supported.
    pub fn unsupported_protocol_version(requested: &str, supported: &[&str]) -> Self {
        Self::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            .with_data(json!({ "supported": supported, "requested": requested }))
    }

    /// `-32602` with `data.uri`: the resource does not exist.
    pub fn resource_not_found(uri: &str) -> Self {
        Self::invalid_params("Resource not found").with_data(json!({ "uri": uri }))
    }

    /// The JSON-RPC code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The structured data, if any.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_deref()
    }

    /// The HTTP status the Streamable HTTP transport answers this error with.
    ///
    /// The spec fixes 404 for `-32601` and 400 for the header, capability and version
    /// errors; malformed bodies get 400 too. Other request errors (unknown tool, bad
    /// arguments, bad request state) travel on a 200, as JSON-RPC intends.
    pub fn http_status(&self) -> u16 {
        if let Some(status) = self.status {
            return status;
        }
        match self.code {
            ErrorCode::METHOD_NOT_FOUND => 404,
            ErrorCode::PARSE_ERROR
            | ErrorCode::INVALID_REQUEST
            | ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => 400,
            _ => 200,
        }
    }

    pub(crate) fn to_object(&self) -> ErrorObject {
        ErrorObject { code: self.code.0, message: self.message.to_string(), data: self.data.as_deref().cloned() }
    }

    /// The JSON-RPC error message answering request `id` (`None` when it is unknown).
    pub(crate) fn to_message(&self, id: Option<RequestId>) -> Outgoing {
        Outgoing::Error { id, error: self.to_object() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code.0)
    }
}

impl std::error::Error for Error {}

/// The error a tool, prompt or resource handler returns.
///
/// Most failures are *execution* errors: for a tool they become a result with
/// `isError: true` whose text the model reads. A [`Error`] wrapped in a `ToolError`
/// (through `?` or [`ToolError::protocol`]) is sent as a JSON-RPC error instead.
///
/// `ToolError` converts from any `std::error::Error`, so `?` works on I/O, parse and
/// protocol errors alike.
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::ErrorCode;
/// use serde_json::json;
///
/// /// Checks a port number.
/// #[tool]
/// async fn check_port(port: String) -> Result<String, ToolError> {
///     if port.is_empty() {
///         // The request itself is wrong: a JSON-RPC error, for the client.
///         return Err(ToolError::invalid_params("port is empty"));
///     }
///     // A parse error through `?`: a failed result, for the model to read.
///     let port: u16 = port.parse()?;
///     Ok(format!("{port} is a valid port"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(Server::new("net", "1.0.0").tool(check_port));
/// let failed = client.call_tool("check_port", json!({ "port": "eighty" })).start().await;
/// assert_eq!(failed.complete().unwrap()["isError"], true);
/// assert_eq!(failed.text().as_deref(), Some("invalid digit found in string"));
/// let refused = client.call_tool("check_port", json!({ "port": "" })).start().await;
/// assert_eq!(refused.error().unwrap().code(), ErrorCode::INVALID_PARAMS);
/// # }
/// ```
#[derive(Debug)]
pub struct ToolError(ToolErrorKind);

#[derive(Debug)]
enum ToolErrorKind {
    Execution(String),
    Protocol(Error),
    /// The user declined or cancelled an ask: not a failure of anyone's.
    Declined(Declined),
}

impl ToolError {
    /// An execution error with this message.
    pub fn new(message: impl fmt::Display) -> Self {
        Self(ToolErrorKind::Execution(message.to_string()))
    }

    /// The user or client cancelled the operation: ended as a user's choice (see
    /// [`Declined`]), not as a failure.
    pub fn cancelled() -> Self {
        Self(ToolErrorKind::Declined(Declined::Cancel))
    }

    /// A protocol error: sent as a JSON-RPC error response, not as a tool result.
    pub fn protocol(error: Error) -> Self {
        Self(ToolErrorKind::Protocol(error))
    }

    /// `-32602`: the request itself is malformed. For arguments a tool finds wrong (a
    /// date in the past, an unknown project), prefer [`ToolError::new`]: the model reads
    /// an execution error and calls again with them fixed (SEP-1303), as it does for
    /// arguments that do not decode.
    pub fn invalid_params(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::protocol(Error::invalid_params(detail))
    }

    /// Splits into an execution message (a user's choice reads as one) or a protocol error.
    pub(crate) fn into_parts(self) -> Result<String, Error> {
        match self.0 {
            ToolErrorKind::Execution(message) => Ok(message),
            ToolErrorKind::Declined(declined) => Ok(declined.to_string()),
            ToolErrorKind::Protocol(error) => Err(error),
        }
    }

    /// The user's choice this error carries, if it is one.
    pub(crate) fn declined(&self) -> Option<Declined> {
        match self.0 {
            ToolErrorKind::Declined(declined) => Some(declined),
            _ => None,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ToolErrorKind::Execution(message) => f.write_str(message),
            ToolErrorKind::Declined(declined) => declined.fmt(f),
            ToolErrorKind::Protocol(error) => error.fmt(f),
        }
    }
}

impl<E> From<E> for ToolError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        // A protocol error keeps its code; everything else is the tool's own failure.
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error);
        let boxed = match boxed.downcast::<Error>() {
            Ok(protocol) => return Self::protocol(*protocol),
            Err(other) => other,
        };
        match boxed.downcast::<Declined>() {
            Ok(declined) => Self(ToolErrorKind::Declined(*declined)),
            Err(other) => Self::new(other),
        }
    }
}

/// The user declined or cancelled an elicitation.
///
/// A user's choice is an answer, not a failure. With `?` it ends the call with a complete
/// result that says so: a tool's `isError` result the model can read, a prompt with no
/// messages, a resource read whose one text says it was not read. `match` on it to do
/// something else. (A method of your own decides its result's shape, so it should
/// `match`; one that lets it escape answers `-32603` with the choice as its message.)
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::{answer, TestClient};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Size { gigabytes: u32 }
///
/// /// Resizes the disk to the size the user picks.
/// #[tool]
/// async fn resize() -> Result<String, ToolError> {
///     match ask!(key = "size", elicit "New size?") {
///         Ok(Size { gigabytes }) => Ok(format!("resized to {gigabytes} GB")),
///         // A "no" is an answer: report it as a result, not a failure.
///         Err(Declined::Decline) => Ok("left as it was".into()),
///         // Dismissed without answering: end the call as cancelled.
///         Err(Declined::Cancel) => Err(ToolError::cancelled()),
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(Server::new("disks", "1.0.0").tool(resize));
/// let mut call = client.call_tool("resize", serde_json::json!({}));
/// call.start().await;
/// let done = call.answer([("size", answer::decline())]).await;
/// assert_eq!(done.text().as_deref(), Some("left as it was"));
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Declined {
    /// The user said no.
    Decline,
    /// The user dismissed the request.
    Cancel,
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Decline => "the user declined the request",
            Self::Cancel => "the user cancelled the request",
        })
    }
}

impl std::error::Error for Declined {}

/// Client text as an error may repeat it: cut to 64 characters (with `…`), so a megabyte
/// of it is not sent back to the client (nor into a proxy's logs).
pub(crate) fn shown(text: &str) -> String {
    const SHOWN: usize = 64;
    let mut shown: String = text.chars().take(SHOWN).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    shown
}

/// The dotted paths to the leaves of a capabilities object (`{"elicitation": {"url": {}}}`
/// is `elicitation.url`).
fn capability_paths(value: &Value, prefix: &mut String, out: &mut Vec<String>) {
    let Value::Object(map) = value else { return };
    for (name, inner) in map {
        let len = prefix.len();
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(name);
        match inner {
            Value::Object(children) if !children.is_empty() => capability_paths(inner, prefix, out),
            _ => out.push(prefix.clone()),
        }
        prefix.truncate(len);
    }
}

/// A message and, when there is one, the error that caused it: what the extensions' public
/// errors keep (`StoreError`, `JwtError`), so a log that walks `source()` sees the whole
/// chain. Equal when the messages are (a cause is not comparable).
#[derive(Clone, Debug)]
pub(crate) struct Chained {
    message: String,
    cause: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl Chained {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), cause: None }
    }

    pub(crate) fn caused_by(message: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self { message: message.into(), cause: Some(std::sync::Arc::new(cause)) }
    }

    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The same error, its message followed by `context` in parentheses.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn with_context(mut self, context: &str) -> Self {
        self.message = format!("{} ({context})", self.message);
        self
    }

    pub(crate) fn cause(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|cause| cause as &(dyn std::error::Error + 'static))
    }
}

impl PartialEq for Chained {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for Chained {}
