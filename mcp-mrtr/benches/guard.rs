//! The single-use guard's cost per `consume` with 1k, 10k and 100k live entries: each
//! iteration records one new state, as a round taking a `once!` step does, on a guard
//! already holding that many unexpired ones. The new entry's state expires at once, so it
//! is pruned within the second: the number of live entries stays about put, and each call
//! pays one insert and one expiry, the steady state of a busy server.

use std::time::{Duration, SystemTime};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcp_mrtr::{request_state::Claim, request_state::Consumed, request_state::MemoryGuard};

/// A claim whose digest is `n` (any 32 bytes do: the guard takes what it is given).
fn claim(n: u64, expires: SystemTime) -> Claim {
    let mut digest = [0u8; 32];
    digest[..8].copy_from_slice(&n.to_be_bytes());
    Claim::new(digest, 1, expires)
}

fn consume(c: &mut Criterion) {
    let mut group = c.benchmark_group("memory_guard_consume");
    group.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for live in [1_000, 10_000, 100_000] {
        let guard = MemoryGuard::with_capacity(usize::MAX).with_share(usize::MAX);
        let later = SystemTime::now() + Duration::from_secs(600);
        for i in 0..live {
            guard.consume_now(&claim(u64::MAX - i, later));
        }
        let mut next = 0u64;
        group.bench_with_input(BenchmarkId::from_parameter(live), &guard, |b, guard| {
            b.iter(|| {
                next += 1;
                assert_eq!(guard.consume_now(&claim(next, SystemTime::now())), Consumed::First);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, consume);
criterion_main!(benches);
