//! Graceful shutdown: the signal that starts it ([`shutdown_signal`]) and the drain that
//! long waits watch.
//!
//! When a transport starts shutting down it starts a [`Drain`]. Every request carries the
//! drain's [`Draining`] in its extensions, so waits that could last for hours end at once
//! instead of holding the shutdown open until its bound: a `subscriptions/listen` stream
//! ends with its result, and a 2025-11-25 call waiting for its client's answer is
//! withdrawn. Ordinary requests are not told; they get the bound to finish. What must
//! run once the drain is over (an endpoint's tasks handed back) is left with the drain by
//! the requests that reach it ([`Draining::after_drain`]), so an app that serves a router
//! needs no handle on the servers inside it.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::Extensions;
use futures_util::future::{BoxFuture, Shared};
use futures_util::FutureExt;
use tokio::sync::watch;

/// How long requests in flight get to finish once shutdown starts, unless
/// [`ListenerLimits::shutdown_timeout`](crate::http::ListenerLimits::shutdown_timeout) says otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Resolves when the process is asked to stop: on SIGTERM (what `docker stop`, systemd
/// and Kubernetes send) or Ctrl-C. [`Server::serve`](crate::Server::serve) stops on it
/// over HTTP and the process's stdio unless told otherwise; pass it (or a future that
/// also waits for it) to [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown)
/// or [`ServeRouter::with_graceful_shutdown`](crate::http::ServeRouter::with_graceful_shutdown).
///
/// The handlers are installed when this is called, not when the future is first polled,
/// so a signal that arrives while the server is starting is not missed. Once installed
/// they stay for the life of the process: these signals no longer end it by themselves.
///
/// ```no_run
/// # async fn run() -> Result<(), mcp_mrtr::serve::ServeError> {
/// use mcp_mrtr::{http::Http, Server};
///
/// // Stop on SIGTERM or Ctrl-C, or when the app sends on `stop`: whichever comes first.
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let signal = mcp_mrtr::serve::shutdown_signal();
/// # let _keep = stop;
/// Server::new("app", "1.0.0")
///     .serve(Http::bind("127.0.0.1:3000"))
///     .with_graceful_shutdown(async move {
///         tokio::select! {
///             () = signal => {}
///             _ = stopped => {}
///         }
///     })
///     .await
/// # }
/// ```
///
/// # Panics
///
/// When called outside a tokio runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    os::signal()
}

#[cfg(unix)]
mod os {
    use std::future::Future;

    use tokio::signal::unix::{signal as install, Signal, SignalKind};

    pub(super) fn signal() -> impl Future<Output = ()> + Send + 'static {
        let terminate = listen(SignalKind::terminate(), "SIGTERM");
        let interrupt = listen(SignalKind::interrupt(), "SIGINT");
        async move {
            let name = tokio::select! {
                () = received(terminate) => "SIGTERM",
                () = received(interrupt) => "SIGINT",
            };
            tracing::info!(signal = name, "asked to stop: shutting down");
        }
    }

    fn listen(kind: SignalKind, name: &str) -> Option<Signal> {
        install(kind)
            .map_err(|error| tracing::warn!(%error, signal = name, "cannot listen for the signal; it will not shut down gracefully"))
            .ok()
    }

    /// Resolves on the signal; never, when it cannot be received.
    async fn received(signal: Option<Signal>) {
        if let Some(mut signal) = signal {
            if signal.recv().await.is_some() {
                return;
            }
        }
        std::future::pending::<()>().await;
    }
}

#[cfg(not(unix))]
mod os {
    use std::future::Future;

    pub(super) fn signal() -> impl Future<Output = ()> + Send + 'static {
        async {
            if let Err(error) = tokio::signal::ctrl_c().await {
                tracing::warn!(%error, "cannot listen for Ctrl-C; it will not shut down gracefully");
                std::future::pending::<()>().await;
            }
            tracing::info!("asked to stop: shutting down");
        }
    }
}

/// Starts the drain: every [`Draining`] handed out sees it.
#[derive(Debug)]
pub(crate) struct Drain {
    started: watch::Sender<bool>,
    afterwards: Arc<Afterwards>,
}

/// What runs once the drain is over, once per endpoint (keyed by its [`LeftWith`]).
struct Afterwards {
    /// This drain among every drain of the process: what a [`LeftWith`] remembers.
    id: u64,
    work: Mutex<Vec<(usize, BoxFuture<'static, ()>)>>,
}

/// Where an endpoint notes the drain it last left work with, so that every request after
/// the first reads one atomic instead of taking the drain's lock.
#[derive(Debug, Default)]
pub(crate) struct LeftWith(AtomicU64);

/// Drain ids: unique in the process, so a drain made later at a freed drain's address is
/// never mistaken for it.
static DRAINS: AtomicU64 = AtomicU64::new(1);

impl fmt::Debug for Afterwards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Afterwards").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Drain {
    pub(crate) fn new() -> Self {
        let afterwards = Afterwards { id: DRAINS.fetch_add(1, Ordering::Relaxed), work: Mutex::default() };
        Self { started: watch::channel(false).0, afterwards: Arc::new(afterwards) }
    }

    /// What requests carry to learn that the drain started.
    pub(crate) fn watch(&self) -> Draining {
        Draining(Arc::new(Watching { started: self.started.subscribe(), afterwards: self.afterwards.clone() }))
    }

    pub(crate) fn start(&self) {
        self.started.send_replace(true);
    }

    /// Runs, one after the other, what the requests left for after the drain.
    pub(crate) async fn run_afterwards(&self) {
        let work = std::mem::take(&mut *self.afterwards.work.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, work) in work {
            work.await;
        }
    }
}

/// Whether the server has begun to shut down. Cheap to clone (one count); the transports
/// put one in each request's extensions.
#[derive(Clone, Debug)]
pub(crate) struct Draining(Arc<Watching>);

#[derive(Debug)]
struct Watching {
    started: watch::Receiver<bool>,
    afterwards: Arc<Afterwards>,
}

impl Draining {
    /// A watch of the same drain that shares no count with this one: a connection takes
    /// its own, and the clones it puts in its requests then touch no memory that requests
    /// on other cores touch too (the drain's own counts, bounced between cores on every
    /// request, cost more than the clone).
    pub(crate) fn own(&self) -> Self {
        Self(Arc::new(Watching { started: self.0.started.clone(), afterwards: self.0.afterwards.clone() }))
    }

    /// Resolves once the drain has started, or its [`Drain`] is gone (the server stopped).
    pub(crate) async fn started(&self) {
        let mut draining = self.0.started.clone();
        let _ = draining.wait_for(|started| *started).await;
    }

    /// Resolves once the drain of the transport serving this request has started; never
    /// for a request served without one (a router mounted under `axum::serve`, a test).
    pub(crate) async fn of(extensions: &Extensions) {
        match extensions.get::<Self>() {
            Some(draining) => draining.started().await,
            None => std::future::pending().await,
        }
    }

    /// Leaves `work` to run once the drain is over, unless the endpoint `left` notes left
    /// its work with this drain already (an earlier request did): `work` is only called
    /// then.
    pub(crate) fn after_drain(&self, left: &LeftWith, work: impl FnOnce() -> BoxFuture<'static, ()>) {
        let afterwards = &self.0.afterwards;
        if left.0.load(Ordering::Acquire) == afterwards.id {
            return;
        }
        let key = std::ptr::from_ref(left) as usize;
        let mut work_left = afterwards.work.lock().unwrap_or_else(PoisonError::into_inner);
        // Two first requests may race here: the lock lets one in.
        if !work_left.iter().any(|(endpoint, _)| *endpoint == key) {
            work_left.push((key, work()));
        }
        left.0.store(afterwards.id, Ordering::Release);
    }
}

/// The future [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown) was
/// given, shared so that the configuration stays `Clone`: every server given a clone of
/// the configuration stops on it.
#[derive(Clone)]
pub struct Signal(Shared<BoxFuture<'static, ()>>);

impl Signal {
    pub(crate) fn new(signal: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(signal.boxed().shared())
    }

    pub(crate) async fn received(self) {
        self.0.await;
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Signal(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_started_drain_is_seen_by_every_watcher_even_one_made_after() {
        let drain = Drain::new();
        let early = drain.watch();
        let mut extensions = Extensions::new();
        extensions.insert(drain.watch());
        let pending = tokio::time::timeout(Duration::from_millis(20), early.started()).await;
        assert!(pending.is_err(), "the drain has not started yet");
        drain.start();
        early.started().await;
        Draining::of(&extensions).await;
        drain.watch().started().await;
    }

    #[tokio::test]
    async fn a_request_without_a_drain_never_sees_one_and_a_dropped_drain_counts_as_started() {
        let never = tokio::time::timeout(Duration::from_millis(20), Draining::of(&Extensions::new())).await;
        assert!(never.is_err());
        let drain = Drain::new();
        let watcher = drain.watch();
        drop(drain);
        watcher.started().await;
    }

    #[tokio::test]
    async fn work_left_for_after_the_drain_runs_once_per_key_and_only_when_asked() {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let drain = Drain::new();
        let (first, second) = (LeftWith::default(), LeftWith::default());
        let leave = |endpoint: &LeftWith, name: &'static str| {
            let ran = ran.clone();
            drain.watch().after_drain(endpoint, move || Box::pin(async move { ran.lock().unwrap().push(name) }));
        };
        leave(&first, "first endpoint");
        leave(&first, "first endpoint again");
        leave(&second, "second endpoint");
        assert!(ran.lock().unwrap().is_empty(), "nothing runs before the drain is over");
        drain.run_afterwards().await;
        assert_eq!(*ran.lock().unwrap(), ["first endpoint", "second endpoint"]);
        drain.run_afterwards().await;
        assert_eq!(ran.lock().unwrap().len(), 2, "each runs once");
        // Served again by a later drain, the endpoint leaves its work with that one.
        let later = Drain::new();
        later.watch().after_drain(&first, || Box::pin(async {}));
        assert_eq!(later.afterwards.work.lock().unwrap().len(), 1);
    }
}
