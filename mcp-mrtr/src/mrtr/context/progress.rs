//! Progress a handler reports: `ctx.progress(done).of(total).message("…").await`. A value
//! rather than positional `Option`s, so a call says which number is which.

use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use serde_json::json;

use super::Ctx;

/// Progress to report, made by [`Ctx::progress`]; sent when awaited.
///
/// It is sent as `notifications/progress` only if the request asked for it
/// (`_meta.progressToken`), and must increase: a value not above the last one sent is
/// dropped, as are all values when the request carried no token or the client went away.
/// Across the rounds of a call, progress a replay reaches again was sent in an earlier round
/// and is not sent twice, and the last value sent is carried in the request state, so a
/// client's progress never restarts (see the replay guide). The same holds for
/// [`Ctx::log`].
///
/// In a task, progress is not sent (the extension has no progress notifications): it
/// becomes the task's `statusMessage` on `tasks/get` instead, the message if there is one,
/// else `progress/total`.
#[must_use = "progress is reported only when awaited"]
#[derive(Debug)]
pub struct Progress<'a> {
    ctx: &'a Ctx,
    done: f64,
    total: Option<f64>,
    message: Option<Cow<'a, str>>,
}

impl<'a> Progress<'a> {
    pub(super) fn new(ctx: &'a Ctx, progress: f64) -> Self {
        Self { ctx, done: progress, total: None, message: None }
    }

    /// Out of `total` (`"total"`), when the whole is known.
    pub fn of(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// What is happening, for a person (`"message"`; a task's `statusMessage`).
    pub fn message(mut self, message: impl Into<Cow<'a, str>>) -> Self {
        self.message = Some(message.into());
        self
    }

    async fn send(self) {
        let Self { ctx, done: progress, total, message } = self;
        let replay = &ctx.inner.replay;
        if let Some(log) = replay.task_log() {
            let text = match (message, total) {
                (Some(message), _) => message.into_owned(),
                (None, Some(total)) => format!("{progress}/{total}"),
                (None, None) => progress.to_string(),
            };
            return log.status(text).await;
        }
        if !replay.notification_is_new() {
            return;
        }
        let Some(token) = &ctx.inner.meta.progress_token else { return };
        if !replay.progress_advances(progress) {
            tracing::debug!(progress, "dropping progress that does not increase");
            return;
        }
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        ctx.notify("notifications/progress", params).await;
    }
}

impl<'a> IntoFuture for Progress<'a> {
    type Output = ();
    type IntoFuture = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.send())
    }
}
