//! A run's status messages (`ctx.progress` in a task), coalesced: every write of a
//! task's record is a read, a copy and a compare-and-set of the whole record, so a
//! handler reporting progress in a tight loop must not turn each report into one.
//!
//! [`StatusWriter`] writes at most one status message per [`STATUS_EVERY`] per run. A
//! message that comes sooner waits, and a later one replaces it (the last one wins):
//! one write carries the newest message when the second is up. When the run ends, the
//! message still waiting goes into the final write, which is never delayed.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::write::RunWrites;

/// At most one status write per task run this often.
pub(super) const STATUS_EVERY: Duration = Duration::from_secs(1);

/// A status message is for a person to read on `tasks/get`: longer ones are cut to
/// this many bytes, so a handler echoing its input cannot grow the record with it.
pub(super) const MAX_STATUS_MESSAGE: usize = 1024;

/// The status messages of one run of a task, written to its record while the run holds
/// the task's lease.
pub(super) struct StatusWriter {
    writes: Arc<RunWrites>,
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    /// The newest message not yet written.
    message: Option<String>,
    last_write: Option<Instant>,
    /// A flush is scheduled: it writes whatever `message` is then.
    flush_scheduled: bool,
}

/// What a new message calls for.
enum Next {
    WriteNow(String),
    FlushAt(Instant),
    Nothing,
}

impl StatusWriter {
    pub(super) fn new(writes: Arc<RunWrites>) -> Arc<Self> {
        Arc::new(Self { writes, pending: Mutex::default() })
    }

    /// Records `message` as the task's status: written now if the last write is a
    /// [`STATUS_EVERY`] ago, else by a flush when it is (with whatever message is
    /// newest then).
    pub(super) async fn status(self: &Arc<Self>, message: String) {
        let next = {
            let mut pending = self.lock();
            let now = Instant::now();
            match pending.last_write.map(|at| at + STATUS_EVERY) {
                _ if pending.flush_scheduled => {
                    pending.message = Some(bounded(message));
                    Next::Nothing
                }
                Some(due) if now < due => {
                    pending.message = Some(bounded(message));
                    pending.flush_scheduled = true;
                    Next::FlushAt(due)
                }
                _ => {
                    pending.last_write = Some(now);
                    Next::WriteNow(bounded(message))
                }
            }
        };
        match next {
            Next::WriteNow(message) => self.write(message).await,
            Next::FlushAt(due) => {
                let writer = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(due).await;
                    writer.flush().await;
                });
            }
            Next::Nothing => {}
        }
    }

    /// The message still waiting, for the run's final write; a scheduled flush then
    /// finds nothing to write.
    pub(super) fn take_pending(&self) -> Option<String> {
        self.lock().message.take()
    }

    async fn flush(&self) {
        let message = {
            let mut pending = self.lock();
            pending.flush_scheduled = false;
            pending.last_write = Some(Instant::now());
            pending.message.take()
        };
        if let Some(message) = message {
            self.write(message).await;
        }
    }

    async fn write(&self, message: String) {
        // Fenced: a run that lost the task (cancelled, taken over, or ended) writes nothing.
        let written = self.writes.fenced(|record| record.status_message = Some(message.clone()));
        if let Err(error) = written.await {
            tracing::warn!(task = %self.writes.id, %error, "could not write a task's status message");
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `message`, cut to [`MAX_STATUS_MESSAGE`] bytes (on a character boundary, ending `…`).
pub(super) fn bounded(mut message: String) -> String {
    if message.len() > MAX_STATUS_MESSAGE {
        let mut end = MAX_STATUS_MESSAGE - '…'.len_utf8();
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::tasks::lease::new_run;
    use crate::ext::tasks::store::tests::record;
    use crate::ext::tasks::store::{now_ms, Lease, TaskStore};
    use crate::ext::tasks::MemoryTaskStore;

    async fn leased(store: &Arc<MemoryTaskStore>, run: &str) -> Arc<StatusWriter> {
        let mut task = record("t", None);
        task.lease = Some(Lease { holder: run.to_owned(), until_ms: now_ms() + 600_000 });
        store.create(task.clone()).await.unwrap();
        StatusWriter::new(RunWrites::new(store.clone(), &task, run))
    }

    async fn read(store: &MemoryTaskStore) -> (u64, Option<String>) {
        let task = store.get("t").await.unwrap().unwrap();
        (task.version(), task.status_message)
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_messages_is_one_write_now_and_one_with_the_last_a_second_later() {
        let store = Arc::new(MemoryTaskStore::new());
        let run = new_run().unwrap();
        let writer = leased(&store, &run).await;
        for n in 1..=100 {
            writer.status(format!("step {n}")).await;
        }
        assert_eq!(read(&store).await, (1, Some("step 1".into())), "the first is written at once");
        tokio::time::sleep(STATUS_EVERY / 2).await;
        assert_eq!(read(&store).await.0, 1, "nothing more within the second");
        tokio::time::sleep(STATUS_EVERY).await;
        assert_eq!(read(&store).await, (2, Some("step 100".into())), "one more write, the last message");
        tokio::time::sleep(STATUS_EVERY * 3).await;
        assert_eq!(read(&store).await.0, 2, "nothing waits, nothing is written");
        writer.status("later".into()).await;
        assert_eq!(read(&store).await, (3, Some("later".into())), "a message after a quiet second goes at once");
    }

    #[tokio::test(start_paused = true)]
    async fn the_message_still_waiting_goes_into_the_final_write() {
        let store = Arc::new(MemoryTaskStore::new());
        let run = new_run().unwrap();
        let writer = leased(&store, &run).await;
        writer.status("first".into()).await;
        writer.status("last".into()).await;
        assert_eq!(writer.take_pending().as_deref(), Some("last"));
        tokio::time::sleep(STATUS_EVERY * 2).await;
        assert_eq!(read(&store).await, (1, Some("first".into())), "the flush found nothing left to write");
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        assert_eq!(bounded("short".into()), "short");
        let cut = bounded("é".repeat(MAX_STATUS_MESSAGE));
        assert!(cut.len() <= MAX_STATUS_MESSAGE && cut.ends_with('…'), "{}", cut.len());
    }
}
