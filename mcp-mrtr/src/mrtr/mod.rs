//! The MRTR core: typed asks (`ask`), the replay driver that answers them from the
//! request state or ends the round with them (`replay`), the request context `Ctx`
//! (`context`, with `context::Bridge`, the door the 2025-11-25 bridge comes in by), and
//! the handler extractors (`extract`).

pub mod context;
pub mod extract;
pub mod question;
pub(crate) mod replay;
