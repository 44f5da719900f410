//! [`DropFlag`]: proof that a handler's future was dropped (cancelled), not left running.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sets its flag when dropped. A handler holds one; the test reads the flag to see that
/// the handler's future was dropped. The flag is an `Arc<AtomicBool>` or a
/// `&'static AtomicBool` (for handlers written with the macros, which take no captures).
pub struct DropFlag<F: Deref<Target = AtomicBool>>(pub F);

impl<F: Deref<Target = AtomicBool>> Drop for DropFlag<F> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
