//! The single-use guard's cost per `consume` with 1k, 10k and 100k live entries: each
//! iteration records one new state, as a round 2 does, on a guard already holding that
//! many unexpired ones. The new entry expires at once, so the next call prunes it: the
//! number of live entries stays put, and each call pays one insert and one expiry, the
//! steady state of a busy server.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcp_mrtr::{Consumed, MemoryGuard};

fn consume(c: &mut Criterion) {
    let mut group = c.benchmark_group("memory_guard_consume");
    group.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for live in [1_000, 10_000, 100_000] {
        let guard = MemoryGuard::with_capacity(usize::MAX);
        for i in 0..live {
            guard.consume_now(&format!("live-{i}"), Duration::from_secs(600));
        }
        let mut next = 0u64;
        group.bench_with_input(BenchmarkId::from_parameter(live), &guard, |b, guard| {
            b.iter(|| {
                next += 1;
                // A 64-hex-digit id, like the digests dispatch passes.
                let id = format!("{next:064x}");
                assert_eq!(guard.consume_now(&id, Duration::ZERO), Consumed::First);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, consume);
criterion_main!(benches);
