//! Bounds and lifecycle: who a client is, pools with a share per client, rate buckets
//! (`fair`); the drain signal of a graceful shutdown (`shutdown`).

pub(crate) mod fair;
pub(crate) mod shutdown;
