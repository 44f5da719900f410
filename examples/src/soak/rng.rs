//! A small seeded PRNG (xorshift64*, seeded through splitmix64): every choice of a run
//! (the mix, the answers, the fault schedule) comes from `--seed`, without a `rand`
//! dependency. Not for secrets: the key ring comes from the OS (`cluster::new_key_ring`).

/// xorshift64* (Vigna): fast, and good enough to pick operations and answers.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(splitmix(seed) | 1)
    }

    /// An independent generator for stream `stream` (a worker, the schedule).
    pub(crate) fn fork(&mut self, stream: u64) -> Self {
        Self::new(self.next_u64() ^ splitmix(stream.wrapping_add(0x5eed)))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// An index into a slice of `len` items.
    pub(crate) fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }

    /// A number in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        unit < p
    }

    /// An index chosen with these weights.
    pub(crate) fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut pick = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if pick < u64::from(w) {
                return i;
            }
            pick -= u64::from(w);
        }
        weights.len().saturating_sub(1)
    }

    /// A short token for answers (names, labels): distinct across a run in practice.
    pub(crate) fn token(&mut self) -> String {
        format!("{:08x}", self.next_u64() >> 32)
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.index(i + 1));
        }
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_repeats_and_weights_are_honoured() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert_eq!((0..8).map(|_| a.next_u64()).collect::<Vec<_>>(), (0..8).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut counts = [0u32; 3];
        for _ in 0..3000 {
            counts[a.weighted(&[1, 0, 2])] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!(counts[2] > counts[0], "{counts:?}");
    }
}
