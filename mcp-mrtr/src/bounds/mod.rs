//! Bounds and lifecycle: who a client is, pools with a share per client, rate buckets
//! (`fair`); the drain signal of a graceful shutdown (`shutdown`); how long an endpoint
//! lives, a process or a request (`lifetime`).

pub(crate) mod fair;
pub(crate) mod lifetime;
pub(crate) mod shutdown;
