//! Figures the load clients and the soak report.

/// The `pct`th percentile (nearest rank) of sorted values, or `None` when there are none.
pub fn percentile(sorted: &[u64], pct: usize) -> Option<u64> {
    let rank = (pct * sorted.len()).div_ceil(100).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied()
}
