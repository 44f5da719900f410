//! Random bytes for ids and nonces, drawn from the operating system a pool at a time.
//!
//! A `getrandom` call per draw was a system call per tools/call (the call id) and per
//! sealed state (the nonce): a fifth of a seal's time and one of the six system calls of
//! an elicitation flow. The pool keeps the operating system's bytes as they came, uses
//! each byte once, and refills when it runs out. Key material does not come from here
//! (see `fill_random` in `intake::request_state::keys`): a key is drawn once, straight
//! from the operating system.
//!
//! A process that forks after drawing leaves its unused bytes to the child as well.
//! Servers built on tokio do not fork without `exec`; one that does should draw ids in
//! the child only.

use std::cell::RefCell;

/// Bytes per refill: 64 nonces, 48 call ids.
const POOL_LEN: usize = 768;

thread_local! {
    /// The bytes of the last refill, and how many of them are used.
    static POOL: RefCell<([u8; POOL_LEN], usize)> = const { RefCell::new(([0; POOL_LEN], POOL_LEN)) };
}

/// Fills `buf` with random bytes no other draw has seen. Draws longer than the pool go
/// to the operating system directly.
pub(crate) fn fill(buf: &mut [u8]) -> Result<(), getrandom::Error> {
    if buf.len() > POOL_LEN {
        return getrandom::fill(buf);
    }
    POOL.with_borrow_mut(|(pool, used)| {
        if POOL_LEN - *used < buf.len() {
            getrandom::fill(pool)?;
            *used = 0;
        }
        buf.copy_from_slice(&pool[*used..*used + buf.len()]);
        // Spent bytes are cleared: a later read of the pool (a core dump) does not give
        // back the ids already handed out.
        pool[*used..*used + buf.len()].fill(0);
        *used += buf.len();
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_never_repeat_across_refills() {
        let mut seen = std::collections::HashSet::new();
        // Several refills' worth of 16-byte ids, and one odd size that straddles a refill.
        for _ in 0..(POOL_LEN / 16) * 3 {
            let mut id = [0u8; 16];
            fill(&mut id).unwrap();
            assert!(seen.insert(id), "an id came out twice");
            let mut odd = [0u8; 7];
            fill(&mut odd).unwrap();
        }
    }

    #[test]
    fn draws_larger_than_the_pool_are_served() {
        let mut big = vec![0u8; POOL_LEN * 2];
        fill(&mut big).unwrap();
        assert!(big.iter().any(|&b| b != 0));
    }
}
