//! JSON-RPC 2.0 framing: ids, error objects and outgoing messages.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC request id. Echoed back exactly as received: a number stays a number.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id, kept in its original JSON form.
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` for anything but a string or a number.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => Some(Self::Number(n.clone())),
            Value::String(s) => Some(Self::String(s.clone())),
            _ => None,
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n.into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorObject {
    /// The error code (see [`crate::ErrorCode`]).
    pub code: i32,
    /// A short human-readable description.
    pub message: String,
    /// Structured details, shaped by the code (`requiredCapabilities`, `supported`, `uri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A JSON-RPC notification the server sends on a request's stream
/// (`notifications/progress`, `notifications/message`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Notification {
    /// The notification method.
    pub method: String,
    /// Its parameters.
    pub params: Value,
}

/// A result object as JSON text: serialized once where the result is made, then copied
/// as is into whatever frames the reply (a JSON body, an SSE event, a stdio line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResultJson(String);

impl ResultJson {
    /// Text that is one JSON object already (a prepared or just written result).
    pub(crate) fn from_text(text: String) -> Self {
        Self(text)
    }

    pub(crate) fn from_value(value: &Value) -> Self {
        // A `Value` always serializes: its map keys are strings.
        Self(serde_json::to_string(value).expect("a JSON value serializes"))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a request's outgoing messages go: its SSE stream on HTTP, the channel to stdout
/// on stdio. Boxed: a channel allocates its slots 32 at a time, and a listen stream holds
/// its channel for hours (32 boxes are 256 bytes, 32 messages 2.8 KiB).
pub(crate) type Notifier = tokio::sync::mpsc::Sender<Box<Outgoing>>;

/// An outgoing JSON-RPC message, serialized with `"jsonrpc": "2.0"`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outgoing {
    Result {
        id: RequestId,
        result: ResultJson,
    },
    Error {
        id: Option<RequestId>,
        error: ErrorObject,
    },
    Notification(Notification),
    /// A server-to-client request: only on legacy (2025-11-25) sessions, where the
    /// bridge asks the client directly.
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
}

impl Outgoing {
    /// Compact one-line JSON: several clients read bodies line by line.
    pub(crate) fn into_json(self) -> String {
        let value = match self {
            // The result is JSON text already: framed in its own buffer (stamping left room
            // for the frame), never parsed or copied as a tree.
            Self::Result { id, result } => {
                let mut frame = String::with_capacity(64);
                frame.push_str(r#"{"jsonrpc":"2.0","id":"#);
                match &id {
                    // A number's Display is its JSON text.
                    RequestId::Number(number) => {
                        let _ = write!(frame, "{number}");
                    }
                    RequestId::String(_) => frame.push_str(&serde_json::to_string(&id).unwrap_or_default()),
                }
                frame.push_str(r#","result":"#);
                let mut out = result.0;
                out.insert_str(0, &frame);
                out.push('}');
                return out;
            }
            Self::Error { id: Some(id), error } => {
                serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error })
            }
            // An id that could not be read is omitted (not `null`): the MCP schema types
            // `id` as string | number.
            Self::Error { id: None, error } => {
                serde_json::json!({ "jsonrpc": "2.0", "error": error })
            }
            Self::Notification(n) => {
                serde_json::json!({ "jsonrpc": "2.0", "method": n.method, "params": n.params })
            }
            Self::Request { id, method, params } => {
                serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
            }
        };
        value.to_string()
    }
}
