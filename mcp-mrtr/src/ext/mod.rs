//! Extensions, each plugged into a door of a lower layer: tasks (`dispatch::TaskHook`),
//! the OAuth resource server (an HTTP gate and scope checks), the Redis-backed guard,
//! task store and fanout, Skills (built on `MethodRoute` and resources), and mounting other
//! servers' tools (built on the client and hand-built rounds).

pub mod auth;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod mount;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
pub mod skills;
pub mod tasks;
