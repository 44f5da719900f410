//! What can go wrong when the client calls a server: the server's own JSON-RPC errors,
//! kept whole, and the client's, each naming what it bounded or could not read.

use std::fmt;
use std::time::Duration;

use crate::base::error::{Error, ErrorCode};

/// The error an answer may fail with: the call it was asked for fails with
/// [`ClientError::Answer`], naming the question and this error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a client request failed.
///
/// A tool that fails is not an error here: its result comes back with `isError` set
/// ([`CallToolResult::is_error`](crate::protocol::CallToolResult::is_error)), for the model
/// to read. These are the failures of the request itself.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error: its code, message and data.
    Rpc(Error),
    /// The server could not be reached, or the connection failed mid-request.
    Connect(String),
    /// The server took longer than the client's bound.
    Timeout {
        /// What was waited for.
        waiting_for: &'static str,
        /// The bound.
        after: Duration,
    },
    /// An HTTP answer that is not a JSON-RPC one (a redirect, a proxy's error page, …).
    Http {
        /// The status.
        status: u16,
        /// The start of the body, or where a redirect pointed.
        detail: String,
    },
    /// A response this client cannot read as MCP.
    Malformed(String),
    /// A response larger than [`ClientLimits::max_response_bytes`](super::ClientLimits).
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The server asked a question this client gives no answer for (it was not declared:
    /// a server that asks anyway does not follow the protocol).
    Unanswerable {
        /// The question's key.
        key: String,
        /// What was asked.
        kind: String,
    },
    /// An answer of the application's [`Answers`](super::Answers) failed.
    Answer {
        /// The question's key.
        key: String,
        /// The answer's error.
        error: BoxError,
    },
    /// The server asked for input more rounds in a row than
    /// [`ClientLimits::max_rounds`](super::ClientLimits) allows.
    TooManyRounds {
        /// The bound.
        rounds: usize,
    },
    /// The connection dropped while a round of the call was on its way, and the round,
    /// sent again, was refused: the lost attempt reached the server and took a step of the
    /// call that runs only once (or the server cannot tell that it did not). The step's
    /// effect may have happened; start the call over only where that is safe.
    RoundRefused {
        /// Which request of the call it was (the first is 1).
        round: usize,
        /// How the connection dropped.
        dropped: String,
        /// The server's refusal of the round sent again.
        refused: Error,
    },
    /// The task the call became was cancelled before it ended (by this client or by the
    /// server).
    Cancelled {
        /// The task.
        task_id: String,
    },
    /// The server speaks none of the protocol versions this client does.
    Version {
        /// The versions the server named.
        supported: Vec<String>,
    },
    /// The server does not offer what was asked of it (a stream of changes, …).
    Unsupported(String),
    /// The client's configuration cannot work (a header that is not a header, a URL that is
    /// not one).
    Config(String),
}

impl ClientError {
    /// The JSON-RPC code of a server's error; `None` for the client's own failures.
    pub fn code(&self) -> Option<ErrorCode> {
        self.rpc().map(Error::code)
    }

    /// The server's error, if the server answered with one.
    pub fn rpc(&self) -> Option<&Error> {
        match self {
            Self::Rpc(error) | Self::RoundRefused { refused: error, .. } => Some(error),
            _ => None,
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rpc(error) => write!(f, "the server answered with an error: {error}"),
            Self::Connect(why) => write!(f, "could not reach the server: {why}"),
            Self::Timeout { waiting_for, after } => {
                write!(f, "the server did not answer in time: waited {after:?} for {waiting_for}")
            }
            Self::Http { status, detail } => write!(f, "the server answered HTTP {status}, not MCP: {detail}"),
            Self::Malformed(why) => write!(f, "the server's response is not valid MCP: {why}"),
            Self::TooLarge { limit } => {
                write!(f, "the server's response is larger than the client's bound of {limit} bytes")
            }
            Self::Unanswerable { key, kind } => {
                write!(f, "the server asked for {kind} (key {key:?}), which this client does not answer")
            }
            Self::Answer { key, error } => write!(f, "answering the server's question {key:?} failed: {error}"),
            Self::TooManyRounds { rounds } => {
                write!(f, "the server asked for input {rounds} rounds in a row, the client's bound")
            }
            Self::RoundRefused { round, dropped, refused } => write!(
                f,
                "the connection dropped during request {round} of the call ({dropped}), and the server refused it sent again ({refused}): a step of the call that runs once may have run"
            ),
            Self::Cancelled { task_id } => write!(f, "the call's task {task_id} was cancelled"),
            Self::Version { supported } => write!(
                f,
                "the server speaks {}, and this client speaks {}",
                if supported.is_empty() { "no protocol version it names".to_owned() } else { supported.join(", ") },
                crate::protocol::PROTOCOL_VERSION
            ),
            Self::Unsupported(what) => write!(f, "the server does not offer it: {what}"),
            Self::Config(why) => write!(f, "the client is misconfigured: {why}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Rpc(error) => Some(error),
            Self::Answer { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

/// An error and its causes, on one line.
pub(super) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
