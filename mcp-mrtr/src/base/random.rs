//! Random bytes for what the hot path draws on every call: a sealed state's nonce and a
//! call's id. They come from the operating system a kilobyte at a time, per thread: a
//! `getrandom` call for each took more of a flow's time than sealing the state did.
//!
//! Every byte is handed out once. A process that forks after serving hands its child the
//! bytes its thread had left; a child that serves would then repeat up to a kilobyte of
//! them (a nonce, under GCM-SIV, then shows only that two states are equal; a repeated
//! call id would let one call's once-steps stand for another's). Serve from processes
//! started afresh, as every server runtime does.

use std::cell::RefCell;

/// Bytes drawn from the operating system at a time, per thread: 36 flows' nonce and id.
const POOL: usize = 1024;

thread_local! {
    /// Random bytes, and how many of them are used.
    static BYTES: RefCell<([u8; POOL], usize)> = const { RefCell::new(([0; POOL], POOL)) };
}

/// `N` random bytes, never handed out before in this process; an error only when the
/// operating system has no randomness to give.
pub(crate) fn bytes<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    const { assert!(N <= POOL) };
    BYTES.with_borrow_mut(|(pool, used)| {
        if *used + N > POOL {
            getrandom::fill(pool)?;
            *used = 0;
        }
        let mut out = [0; N];
        out.copy_from_slice(&pool[*used..*used + N]);
        *used += N;
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn no_draw_repeats_across_many_refills() {
        // 10 000 draws of 16 bytes span about 160 refills of the pool; a repeat would mean
        // bytes handed out twice (random 16-byte strings do not collide by chance).
        let drawn: HashSet<[u8; 16]> = (0..10_000).map(|_| bytes::<16>().unwrap()).collect();
        assert_eq!(drawn.len(), 10_000);
    }

    #[test]
    fn draws_of_different_lengths_take_the_pool_in_turn_then_a_fresh_one() {
        // A pool of known bytes: nonces and ids drawn in turn take it front to back, each
        // where the last ended, and 12 + 16 does not divide it.
        let known: [u8; POOL] = std::array::from_fn(|i| u8::try_from(i % 251).unwrap());
        BYTES.with_borrow_mut(|state| *state = (known, 0));
        let mut taken = Vec::new();
        while taken.len() + 28 <= POOL {
            taken.extend(bytes::<12>().unwrap());
            taken.extend(bytes::<16>().unwrap());
        }
        // 1008 bytes taken: a nonce still fits, an id then does not.
        taken.extend(bytes::<12>().unwrap());
        assert_eq!(taken[..], known[..taken.len()]);
        let id = bytes::<16>().unwrap();
        let (fresh, used) = BYTES.with_borrow(|(pool, used)| (*pool, *used));
        assert_ne!(fresh, known);
        assert_eq!((id, used), (fresh[..16].try_into().unwrap(), 16));
    }

    #[test]
    fn threads_draw_different_bytes() {
        let a = std::thread::spawn(|| bytes::<16>().unwrap()).join().unwrap();
        let b = std::thread::spawn(|| bytes::<16>().unwrap()).join().unwrap();
        assert_ne!(a, b);
    }
}
