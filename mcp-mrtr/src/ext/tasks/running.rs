//! The task runs in this process: registered by task id, so `tasks/cancel` can drop one
//! where it stands, and a graceful stop can hand them all back.
//!
//! A stop (SIGTERM in a rolling deploy, `with_graceful_shutdown`, a worker told to stop)
//! does not drop a run inside a `once!` step: the run finishes the step and journals its
//! result, starts no other, and only then is dropped and its task handed back, so the
//! instance that takes the task over replays the step's result instead of taking the step
//! again (the sixth audit's E7: dropping runs wherever they stood sent a charge twice).
//! The wait is bounded by [`TaskConfig::stop_grace`](super::TaskConfig::stop_grace); a step
//! still running past it is cut off as a crash would cut it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::write::fenced;
use super::Tasks;

/// How long a stop waits for runs inside a `once!` step, unless the server says otherwise:
/// the HTTP drain's default.
pub(super) const DEFAULT_GRACE: Duration = crate::bounds::shutdown::DEFAULT_TIMEOUT;

/// The tasks whose handlers run in this process.
#[derive(Debug, Default)]
pub(crate) struct Running {
    handles: Mutex<HashMap<String, Handle>>,
    generation: AtomicU64,
}

#[derive(Debug)]
struct Handle {
    generation: u64,
    run: String,
    gate: Arc<Gate>,
    abort: AbortHandle,
}

impl Running {
    /// Spawns `task`, the run `run` of the task `id`, whose steps pass through `gate`.
    pub(super) fn spawn(
        self: &Arc<Self>,
        id: &str,
        run: String,
        gate: Arc<Gate>,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let (running, key, ended) = (self.clone(), id.to_owned(), Ended(gate.clone()));
        // Held across the spawn, so the handle is registered before the run can end
        // and unregister itself.
        let mut handles = self.lock();
        let spawned = tokio::spawn(async move {
            let _ended = ended;
            task.await;
            running.finished(&key, generation);
        });
        handles.insert(id.to_owned(), Handle { generation, run, gate, abort: spawned.abort_handle() });
    }

    fn finished(&self, id: &str, generation: u64) {
        let mut handles = self.lock();
        if handles.get(id).is_some_and(|handle| handle.generation == generation) {
            handles.remove(id);
        }
    }

    /// Drops the task's handler where it stands, if it runs here.
    pub(super) fn abort(&self, id: &str) {
        if let Some(handle) = self.lock().remove(id) {
            handle.abort.abort();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Handle>> {
        self.handles.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Tasks {
    /// Gives back the tasks running in this process, for a graceful shutdown: each run
    /// finishes the `once!` step it is in (for at most the stop grace) and starts no
    /// other; then its handler is dropped and its lease released, so another instance
    /// takes it over at its next look, replaying it from its journal, instead of waiting
    /// for the lease to lapse.
    pub(crate) async fn hand_back(&self) {
        // First, so this instance's own look cannot take a released task straight back.
        self.closing.store(true, Ordering::Release);
        let handles: Vec<(String, Handle)> = self.running.lock().drain().collect();
        let until = tokio::time::Instant::now() + self.stop_grace;
        let stops = handles.into_iter().map(|(id, handle)| async move {
            let cut = tokio::time::timeout_at(until, handle.gate.stop()).await.is_err();
            handle.abort.abort();
            if cut {
                tracing::warn!(
                    task = %id,
                    grace = ?self.stop_grace,
                    "a task run was still inside a once! step when the stop grace ran out, and was cut off: \
                     the run that takes the task over takes the step again"
                );
            }
            match fenced(&*self.store, &id, &handle.run, |record| record.lease = None).await {
                Ok(_) => tracing::info!(task = %id, "handed a running task back to the store"),
                Err(error) => tracing::warn!(task = %id, %error, "could not release a task's lease"),
            }
        });
        futures_util::future::join_all(stops).await;
    }
}

/// Where one run stands with its `once!` steps, for a stop to wait on: a run may start a
/// step only while it is not stopping, and a stop waits until no step is under way.
#[derive(Debug)]
pub(super) struct Gate(watch::Sender<Stand>);

#[derive(Clone, Copy, Debug, Default)]
struct Stand {
    /// A stop asked the run to start no step.
    stopping: bool,
    /// Steps started and not yet journaled (several, inside a `join!`).
    in_step: u32,
    /// The run is over (finished, failed, parked on a question, or dropped).
    ended: bool,
}

impl Gate {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self(watch::Sender::new(Stand::default())))
    }

    /// Starts a step: `false`, and nothing counted, once the run is stopping.
    pub(super) fn begin_step(&self) -> bool {
        self.0.send_if_modified(|stand| {
            if !stand.stopping {
                stand.in_step += 1;
            }
            !stand.stopping
        })
    }

    /// A step's result is journaled (or could not be, and the run stops).
    pub(super) fn end_step(&self) {
        self.0.send_modify(|stand| stand.in_step = stand.in_step.saturating_sub(1));
    }

    /// Asks the run to start no step; resolves once it stands between steps, or is over.
    async fn stop(&self) {
        self.0.send_modify(|stand| stand.stopping = true);
        let mut stand = self.0.subscribe();
        // The sender lives in `self`: the wait cannot fail.
        let _ = stand.wait_for(|stand| stand.in_step == 0 || stand.ended).await;
    }
}

/// Marks its run over when dropped: when the run returns, and when it is aborted.
struct Ended(Arc<Gate>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0 .0.send_modify(|stand| stand.ended = true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stop_waits_for_the_step_under_way_and_lets_no_other_start() {
        let gate = Gate::new();
        assert!(gate.begin_step());
        let stop = tokio::spawn({
            let gate = gate.clone();
            async move { gate.stop().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!stop.is_finished(), "a stop waits while a step is under way");
        assert!(!gate.begin_step(), "no step starts once the run is stopping");
        gate.end_step();
        tokio::time::timeout(Duration::from_secs(5), stop).await.unwrap().unwrap();

        let between = Gate::new();
        tokio::time::timeout(Duration::from_secs(5), between.stop()).await.expect("a run between steps stops at once");
        let over = Gate::new();
        assert!(over.begin_step());
        drop(Ended(over.clone()));
        tokio::time::timeout(Duration::from_secs(5), over.stop()).await.expect("a run that is over stops at once");
    }
}
