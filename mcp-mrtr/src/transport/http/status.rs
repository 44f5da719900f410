//! The HTTP status a JSON-RPC error travels on, decided here from the request's era and
//! nowhere else.
//!
//! The two revisions disagree on what a status means:
//!
//! | error | 2026-07-28 | 2025-11-25 session |
//! |---|---|---|
//! | unknown method (`-32601`) | 404 | 200: a 404 would tell the client its session is gone |
//! | header, capability, version errors | 400 | 200: a 4xx body is not read as a JSON-RPC response |
//! | insufficient scope (see [`crate::auth`]) | 403 + challenge | 403 + challenge |
//! | other errors to a request | 200 | 200 |
//! | once a request's SSE stream is open | in the stream (200) | in the stream (200) |
//!
//! Statuses that are about the transport rather than a request's answer are the same in
//! both eras and are set where they arise: 403 (host/origin), 413 (body size), 400 (a
//! body that is not JSON-RPC, a missing session header), 404 (an unknown or ended session),
//! 405 (a method other than POST without a session).

use crate::base::error::Error;
use crate::intake::envelope::Era;

/// The status of a JSON-RPC error answering a request of `era`, sent as the whole body.
pub(super) fn of_error(era: Era, error: &Error) -> u16 {
    match era {
        Era::Modern => error.http_status(),
        // 2025-11-25 answers a request with a JSON-RPC response, error or not; the HTTP
        // status says only whether the transport (and the session) worked.
        // Except a refusal for insufficient scope: both revisions' authorization specs
        // answer it with 403 and a challenge, which a client follows to get a token with
        // more scopes; the session stays open.
        Era::Legacy if error.http_status() == 403 => 403,
        Era::Legacy => 200,
    }
}
