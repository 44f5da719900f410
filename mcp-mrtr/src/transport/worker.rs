//! [`Worker`] as a way to serve: a server served by it takes no requests and runs task
//! work from the shared store (`ext::tasks::worker`) until the shutdown signal.

use futures_util::future::BoxFuture;

use crate::bounds::shutdown::{shutdown_signal, Signal};
use crate::ext::tasks::Worker;
use crate::server::Server;
use crate::transport::serve::sealed::Sealed;
use crate::transport::serve_error::ServeError;

impl Sealed for Worker {
    type Serving = BoxFuture<'static, Result<(), ServeError>>;

    fn serve(self, server: Server, shutdown: Option<Signal>) -> Self::Serving {
        let shutdown = shutdown.unwrap_or_else(|| Signal::new(shutdown_signal()));
        Box::pin(async move {
            let (engine, tasks) = server.into_worker().map_err(ServeError::Misconfigured)?;
            Box::pin(crate::ext::tasks::work(engine, tasks, self, shutdown.received())).await;
            Ok(())
        })
    }
}
