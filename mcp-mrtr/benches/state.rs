//! Sealing and opening a request state: a typical ~1 KiB payload and a large ~16 KiB one.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcp_mrtr::__private::{bench_binding_digest, bench_seal_open};
use mcp_mrtr::{request_state::KeyRing, request_state::StateConfig, request_state::StateKey};

/// JSON-looking bytes of about `len`, like a handler's accumulated answers.
fn payload(len: usize) -> Vec<u8> {
    let entry = br#"{"question":"Which city?","answer":"Lyon","at":1800000000},"#;
    let mut bytes = b"[".to_vec();
    while bytes.len() + entry.len() < len {
        bytes.extend_from_slice(entry);
    }
    bytes.push(b']');
    bytes
}

fn seal_open(c: &mut Criterion) {
    let config = StateConfig::new(KeyRing::new(StateKey::random()));
    let mut group = c.benchmark_group("state_seal_open");
    for (name, len) in [("1KiB", 1024), ("16KiB", 16 * 1024)] {
        let payload = payload(len);
        group.throughput(Throughput::Bytes(payload.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &payload, |b, payload| {
            b.iter(|| bench_seal_open(&config, std::hint::black_box(payload)));
        });
    }
    group.finish();
}

/// The binding digest (canonical JSON of the arguments, then SHA-256), paid once when a
/// round seals and once when the next opens.
fn binding_digest(c: &mut Criterion) {
    let mut group = c.benchmark_group("state_binding_digest");
    let small = serde_json::json!({ "city": "Lyon", "days": 3 });
    let items: Vec<_> = (0..24).map(|i| serde_json::json!({ "id": i, "name": format!("item {i}") })).collect();
    let large = serde_json::json!({ "query": "weather", "items": items });
    for (name, arguments) in [("2_fields", small), ("1KiB", large)] {
        group.bench_with_input(BenchmarkId::from_parameter(name), &arguments, |b, arguments| {
            b.iter(|| bench_binding_digest(std::hint::black_box(arguments)));
        });
    }
    group.finish();
}

criterion_group!(benches, seal_open, binding_digest);
criterion_main!(benches);
