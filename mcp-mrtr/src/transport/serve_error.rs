//! [`ServeError`]: why a server could not be served, or stopped serving. A
//! misconfiguration is told apart from the operating system refusing, so a caller (or a
//! test) matches a variant instead of reading a message.

use std::error::Error as StdError;
use std::fmt;
use std::io;

/// Why a server could not be served, or stopped serving: the `Err` of awaiting
/// [`Server::serve`](crate::Server::serve), and of [`Server::into_router`](crate::Server::into_router),
/// [`Lambda::handler`](crate::lambda::Lambda::handler) and
/// [`TestClient::try_new`](crate::testing::TestClient::try_new).
///
/// Converts into an [`io::Error`] (a misconfiguration as [`io::ErrorKind::InvalidInput`]), so
/// `?` still works in a `main` that returns `std::io::Result<()>`.
///
/// ```no_run
/// use mcp_mrtr::{http::Http, serve::ServeError, Server};
///
/// # async fn run() {
/// match Server::new("app", "1.0.0").serve(Http::bind("127.0.0.1:3000")).await {
///     Ok(()) => {}
///     Err(ServeError::Misconfigured(problems)) => problems.iter().for_each(|p| eprintln!("fix: {p}")),
///     Err(other) => eprintln!("{other}: {:?}", std::error::Error::source(&other)),
/// }
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The server cannot serve as built, found before anything is served: every problem,
    /// one sentence each (a name registered twice, a form type that cannot be a form, a
    /// `State<T>` the server was not given, malformed `MCP_MRTR_STATE_KEYS`, an auth setup
    /// without a verifier, a worker with no task tool).
    Misconfigured(Vec<String>),
    /// The operating system refused: binding the address, accepting, reading or writing.
    Io(io::Error),
    /// The platform's runtime (AWS Lambda's) stopped, with its error.
    Runtime(Box<dyn StdError + Send + Sync>),
}

impl ServeError {
    /// One problem.
    pub(crate) fn misconfigured(problem: impl Into<String>) -> Self {
        Self::Misconfigured(vec![problem.into()])
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Misconfigured(problems) => write!(f, "the server cannot serve as built: {}", problems.join("; ")),
            Self::Io(_) => f.write_str("serving failed on I/O"),
            Self::Runtime(_) => f.write_str("the serverless runtime stopped"),
        }
    }
}

impl StdError for ServeError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::Misconfigured(_) => None,
            Self::Io(error) => Some(error),
            Self::Runtime(error) => Some(&**error),
        }
    }
}

impl From<io::Error> for ServeError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

impl From<ServeError> for io::Error {
    fn from(error: ServeError) -> Self {
        match error {
            ServeError::Io(error) => error,
            misconfigured @ ServeError::Misconfigured(_) => {
                io::Error::new(io::ErrorKind::InvalidInput, misconfigured.to_string())
            }
            ServeError::Runtime(error) => io::Error::other(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_keeps_its_cause_and_converts_to_io() {
        let bind = ServeError::from(io::Error::new(io::ErrorKind::AddrInUse, "in use"));
        assert_eq!(bind.source().unwrap().to_string(), "in use");
        assert_eq!(io::Error::from(bind).kind(), io::ErrorKind::AddrInUse);
        let wrong = ServeError::Misconfigured(vec!["a".into(), "b".into()]);
        assert_eq!(wrong.to_string(), "the server cannot serve as built: a; b");
        assert!(wrong.source().is_none());
        let wrong = io::Error::from(wrong);
        assert_eq!(
            (wrong.kind(), wrong.to_string().as_str()),
            (io::ErrorKind::InvalidInput, "the server cannot serve as built: a; b")
        );
    }
}
