//! Reading a request's envelope: the second round of an elicitation, as a load client
//! sends it, read by the fast path (typed, straight from the body) and by the general
//! path (a JSON tree, then the framing and `_meta` read from it).

use criterion::{criterion_group, criterion_main, Criterion};
use mcp_mrtr::__private::bench_read_envelope;

const BODY: &str = concat!(
    r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#,
    r#""name":"test_input_required_result_elicitation","arguments":{},"#,
    r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"load","version":"1"},"#,
    r#""io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{},"roots":{}}},"#,
    r#""inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},"#,
    r#""requestState":"v3.k1.m30wI-6IDpaD6qz3Oz3YhOfZW8kQykknCGQMROFOdaI0DgaDWWi9zhjW-apOzolrHVU1R7zUTQPJwK-kM9282oN4OR40785cS9PUUeBwBXJgFD057Ets8GU05p-hAaFi8ViVi7l1AaxTJM7uq_m5J01ldTLc4hNnfKkiaePwkrWn"}}"#
);

fn envelope(c: &mut Criterion) {
    let mut group = c.benchmark_group("envelope_read");
    for (name, fast) in [("fast_path", true), ("general_path", false)] {
        assert!(bench_read_envelope(BODY.as_bytes(), fast), "{name} reads the body");
        group.bench_function(name, |b| b.iter(|| bench_read_envelope(std::hint::black_box(BODY.as_bytes()), fast)));
    }
    group.finish();
}

criterion_group!(benches, envelope);
criterion_main!(benches);
