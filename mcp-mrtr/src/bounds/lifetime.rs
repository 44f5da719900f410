//! How long a served endpoint lives, and so what it may keep between requests: the one
//! place a deployment that lives for a request (AWS Lambda) differs from a process. The
//! next platform of that kind is a value here, not another `if` on the request path.

use crate::base::error::{Error, ErrorCode};
use crate::protocol::{Method, PROTOCOL_VERSION};

/// How long the endpoint lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Lifetime {
    /// A process serves request after request (a server, a container): 2025-11-25
    /// sessions and `subscriptions/listen` streams are kept across them.
    #[default]
    Process,
    /// An instance serves one request and may be frozen until the next (AWS Lambda):
    /// nothing outlives a request, so what needs to is refused plainly.
    Request,
}

/// What the refusals below say a function is.
const IN_A_FUNCTION: &str = "this server runs in a function that lives for one request (AWS Lambda)";

impl Lifetime {
    /// Whether anything may outlive the request that made it: a 2025-11-25 session (and
    /// its GET stream and DELETE), a listen stream, a task run here.
    pub(crate) fn outlives_requests(self) -> bool {
        self == Self::Process
    }

    /// The refusal of a 2025-11-25 request (`requested` its version header), where no
    /// session can be kept; `None` where one can.
    pub(crate) fn refuse_session(self, requested: Option<&str>) -> Option<Error> {
        if self.outlives_requests() {
            return None;
        }
        let error = Error::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version: {IN_A_FUNCTION}, where 2025-11-25 sessions cannot be kept; \
                 connect with protocol version {PROTOCOL_VERSION}"
            ),
        );
        let data =
            serde_json::json!({ "supported": [PROTOCOL_VERSION], "requested": requested.unwrap_or("2025-11-25") });
        Some(error.with_data(data))
    }

    /// The refusal of `subscriptions/listen`, whose stream would end with the request
    /// (and the client would listen again at once); `None` where it is served.
    pub(crate) fn refuse_listen(self) -> Option<Error> {
        (!self.outlives_requests()).then(|| {
            Error::method_not_found(Method::Listen.name()).with_note(&format!(
                "{IN_A_FUNCTION}, where no stream outlives it; lists are current on every tools/list, \
                 prompts/list and resources/list"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_request_lifetime_refuses_what_outlives_a_request() {
        assert!(Lifetime::Process.refuse_session(None).is_none());
        assert!(Lifetime::Process.refuse_listen().is_none());
        let session = Lifetime::Request.refuse_session(Some("2025-06-18")).unwrap();
        assert_eq!(session.code(), ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(session.data().unwrap()["requested"], "2025-06-18");
        let listen = Lifetime::Request.refuse_listen().unwrap();
        assert_eq!(listen.code(), ErrorCode::METHOD_NOT_FOUND);
    }
}
