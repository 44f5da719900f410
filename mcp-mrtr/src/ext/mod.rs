//! Extensions, each plugged into a door of a lower layer: tasks (`dispatch::TaskHook`),
//! the OAuth resource server (an HTTP gate and scope checks), the Redis-backed guard,
//! task store and fanout, and Skills (built on `MethodRoute` and resources).

pub mod auth;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
pub mod skills;
pub mod tasks;
