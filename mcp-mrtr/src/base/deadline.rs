//! Handler time limits: which limit applies to a run, and the error once it passes.
//!
//! Entry point: [`within`], called by dispatch around each run of a handler.

use std::future::Future;
use std::time::Duration;

use crate::base::error::Error;

/// How long one run of a handler may take, as the server was told
/// (`Server::handler_timeout`). Each transport resolves it once, when it starts, against
/// its own default ([`HandlerTimeout::resolve`]); requests read the result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum HandlerTimeout {
    /// Not set: the transport's own (60 s over HTTP, 5 minutes over stdio, none in the
    /// test client).
    #[default]
    TransportDefault,
    /// `handler_timeout(None)`: as long as the handler takes.
    Unbounded,
    /// `handler_timeout(Some(limit))`.
    After(Duration),
}

impl HandlerTimeout {
    /// What `Server::handler_timeout` was given.
    pub(crate) fn set(limit: Option<Duration>) -> Self {
        limit.map_or(Self::Unbounded, Self::After)
    }

    /// The limit on a transport whose own default is `transport_default`.
    pub(crate) fn resolve(self, transport_default: Option<Duration>) -> Option<Duration> {
        match self {
            Self::TransportDefault => transport_default,
            Self::Unbounded => None,
            Self::After(limit) => Some(limit),
        }
    }
}

/// Runs `work`, failing with `-32603` "timed out after …" if it takes longer than
/// `limit`. Dropping `work` there cancels the handler at its next `.await`.
pub(crate) async fn within<T>(
    limit: Option<Duration>,
    work: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let Some(limit) = limit else { return work.await };
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| Err(timed_out(limit)))
}

fn timed_out(limit: Duration) -> Error {
    Error::internal(format!("timed out after {}", describe(limit)))
}

/// `30s`, `1.5s` or `200ms`: how a limit reads in an error message.
pub(crate) fn describe(limit: Duration) -> String {
    if limit.subsec_millis() == 0 && limit.as_secs() > 0 {
        format!("{}s", limit.as_secs())
    } else if limit.as_secs() > 0 {
        format!("{}s", limit.as_secs_f64())
    } else {
        format!("{}ms", limit.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_naturally() {
        assert_eq!(describe(Duration::from_secs(30)), "30s");
        assert_eq!(describe(Duration::from_millis(1500)), "1.5s");
        assert_eq!(describe(Duration::from_millis(200)), "200ms");
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_past_its_limit_fails_and_one_within_it_does_not() {
        let slow = within(Some(Duration::from_secs(2)), async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Ok(())
        });
        assert_eq!(slow.await.unwrap_err().message(), "timed out after 2s");
        let quick = within(Some(Duration::from_secs(2)), async { Ok(7) });
        assert_eq!(quick.await.unwrap(), 7);
        assert_eq!(within(None, async { Ok(8) }).await.unwrap(), 8);
    }

    #[test]
    fn a_set_timeout_wins_over_every_transport_s_default() {
        let http = Some(Duration::from_secs(60));
        assert_eq!(HandlerTimeout::TransportDefault.resolve(http), http);
        assert_eq!(HandlerTimeout::TransportDefault.resolve(None), None);
        assert_eq!(HandlerTimeout::set(None).resolve(http), None);
        let short = Some(Duration::from_secs(5));
        assert_eq!(HandlerTimeout::set(short).resolve(http), short);
        assert_eq!(HandlerTimeout::set(short).resolve(None), short);
    }
}
