//! The door tasks made elsewhere come in by: a mounted server's (`mount`, the `client`
//! feature). A call of a mounted tool that the upstream answers with a task answers the
//! caller with that task, under an id of this server's ([`TasksElsewhere::adopt`]), and
//! `tasks/get`, `tasks/update` and `tasks/cancel` of such an id go to the upstream
//! ([`TasksElsewhere::serve`]). Dispatch defines what it asks here and the mount
//! implements it, so nothing below the extensions names the mount.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::Engine;
use crate::base::error::Error;
use crate::intake::envelope::RequestMeta;
use crate::mrtr::context::Delivery;
use crate::protocol::{JsonObject, Method};

/// What dispatch asks of the tasks made elsewhere.
pub(crate) trait TasksElsewhere: Send + Sync {
    /// The door as what it is, for the builder that adds to it.
    #[cfg(feature = "client")]
    fn as_any(&self) -> &dyn std::any::Any;

    /// The `CreateTaskResult` the caller gets for `created`, which a handler answered
    /// with for the task upstream `upstream` made (see `Ctx::answer_with_task`): its id
    /// one of this server's, reachable only by the caller of `delivery`.
    fn adopt(
        &self,
        engine: &Engine,
        delivery: &Delivery,
        upstream: usize,
        created: JsonObject,
    ) -> Result<JsonObject, Error>;

    /// Answers a task method for `task_id` when the id is one [`adopt`](Self::adopt)
    /// made (`None` when it is not: the server's own tasks may have it). The body is
    /// stamped by dispatch. `params` are copied only for such an id.
    fn serve<'a>(
        &'a self,
        engine: &'a Engine,
        method: Method,
        task_id: &'a str,
        params: &Value,
        meta: &'a RequestMeta,
        delivery: &'a Delivery,
    ) -> Option<BoxFuture<'a, Result<JsonObject, Error>>>;
}
