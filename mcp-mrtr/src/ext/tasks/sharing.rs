//! Servers that share a task store by mistake. Instances of one server share a store on
//! purpose; two servers (two names) on one store, such as two deployments on one Redis
//! under the same key prefix, read each other's tasks: each leaves the other's to an
//! instance that serves their tools, which may never come. Every serving instance notes
//! its server's name in the store, now and then, and warns when another name is there.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use super::Tasks;

/// How long a note lasts: a server that stopped is forgotten a minute later.
const NOTE_FOR: Duration = Duration::from_secs(60);

/// How often a serving instance renews its note (well within [`NOTE_FOR`]).
const RENEW_EVERY: Duration = Duration::from_secs(20);

/// What an instance said about the store's other servers.
#[derive(Debug, Default)]
pub(crate) struct Sharing {
    /// When it last noted its server here.
    noted: Mutex<Option<Instant>>,
    /// The other servers it warned about, each once.
    told: Mutex<BTreeSet<String>>,
}

/// Notes that `server` keeps tasks in the store (at most every [`RENEW_EVERY`]), and warns
/// once about each other server found there.
pub(crate) async fn note(tasks: &Tasks, server: &str) {
    {
        let mut noted = tasks.sharing.noted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if noted.is_some_and(|at| at.elapsed() < RENEW_EVERY) {
            return;
        }
        *noted = Some(Instant::now());
    }
    let now = SystemTime::now();
    let others = match tasks.store.server_alive(server, now, now + NOTE_FOR).await {
        Ok(others) => others,
        Err(error) => return tracing::debug!(%error, "could not note this server in the task store"),
    };
    let mut told = tasks.sharing.told.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for other in others {
        if told.insert(other.clone()) {
            tracing::warn!(
                server,
                other = %other,
                "the server {other:?} keeps its tasks in this task store too: servers of two names read each \
                 other's tasks and leave them for an instance that serves their tools, which may never come; give \
                 each server a store of its own (with Redis, its own prefix: Redis::prefix)"
            );
        }
    }
}
