#!/usr/bin/env python3
"""A stdio server as a desktop or CLI host runs it, measured with `stdio_load`.

    examples/bench/stdio.py [--other PATH --other-name rmcp] [--flows 20000] [--reps 3]

Each run starts the server as a host does (a child with piped stdin and stdout), sends a
2025-11-25 `initialize`, then requests one at a time:

- `call`: `tools/call get_value` on `counter` (`examples/src/bin/counter.rs`, the README's
  first example's shape), alternating A B A B with `--other`, a server with a `get_value`
  tool (rmcp's `counter_stdio` example has one);
- `mrtr`: `counter`'s `reset`, which asks before it clears (2 rounds, 2026-07-28);
- `task`: the conformance fixtures' task flow on `everything --stdio` (4 requests).

It reports calls/s, p50/p99, the server's CPU per flow, its resident memory once
`initialize` was answered and after the flows, and the time from spawn to the first
answer: medians of `--reps` runs, with the spread (max - min) / median as the noise. The
time to the first answer is also taken over `--starts` short runs of each, alternating.
Without `--other`, only ours. Run from the project's root.

rmcp's example, for the comparison: in a clone of `modelcontextprotocol/rust-sdk` next to
this checkout, `cargo build --release -p mcp-server-examples --example servers_counter_stdio`
(remove its `rust-toolchain.toml` if it names a toolchain you do not have), then pass
`--other ../rust-sdk/target/release/examples/servers_counter_stdio`.
"""
import argparse
import json
import os
import subprocess
import sys

from flows import RELEASE, ROOT, summary


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "mcp-mrtr-examples", "--bin", "counter",
                    "--bin", "everything", "--bin", "stdio_load"], cwd=ROOT, check=True)


def load(flow, command, args, tool=None, env=None):
    argv = [os.path.join(RELEASE, "stdio_load"), "--flow", flow, "--flows", str(args.flows),
            "--warmup", str(args.warmup)]
    if tool:
        argv += ["--tool", tool]
    out = subprocess.run(argv + ["--"] + command, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "RUST_LOG": "warn", **(env or {})})
    if out.returncode != 0:
        sys.exit(f"bench: stdio_load failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def line(label, runs):
    def cell(key, fmt):
        median, noise = summary(runs, key)
        return f"{fmt.format(median)} ±{noise:3.0%}"
    return (f"  {label:<12} {cell('flows_per_s', '{:7.0f}/s')}  p50 {cell('p50_ms', '{:5.3f} ms')}"
            f"  p99 {cell('p99_ms', '{:5.2f} ms')}  cpu/flow {cell('server_cpu_us_per_flow', '{:5.1f} µs')}"
            f"  rss {cell('rss_start_kib', '{:5.0f}')} → {cell('rss_end_kib', '{:5.0f} KiB')}"
            f"  first answer {cell('first_answer_ms', '{:4.1f} ms')}")


def alternate(ours, other, times, args):
    """`call` runs of our command and the other server's, A B A B."""
    runs = ([], [])
    for _ in range(times):
        runs[0].append(load("call", ours, args))
        if other:
            runs[1].append(load("call", [other], args))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", help="another stdio server with a get_value tool")
    parser.add_argument("--other-name", default="other")
    parser.add_argument("--flows", type=int, default=20000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--starts", type=int, default=30)
    args = parser.parse_args()
    os.chdir(ROOT)
    build()
    counter = [os.path.join(RELEASE, "counter")]
    print(f"call: tools/call get_value, {args.flows} calls × {args.reps}:")
    ours, other = alternate(counter, args.other, args.reps, args)
    print(line("mcp-mrtr", ours))
    if other:
        print(line(args.other_name, other))
        for key, what in [("server_cpu_us_per_flow", "cpu per call"), ("rss_end_kib", "memory after"),
                          ("first_answer_ms", "first answer")]:
            print(f"  {what}, ours / {args.other_name}: {summary(ours, key)[0] / summary(other, key)[0]:.2f}")
    print(f"start: spawn to the answer to initialize, {args.starts} starts each:")
    ours, other = alternate(counter, args.other, args.starts, argparse.Namespace(flows=1, warmup=0))
    for label, runs in [("mcp-mrtr", ours), (args.other_name, other)]:
        if runs:
            median, _ = summary(runs, "first_answer_ms")
            values = sorted(r["first_answer_ms"] for r in runs)
            print(f"  {label:<12} median {median:4.2f} ms, p10 {values[len(values) // 10]:4.2f} ms, "
                  f"p90 {values[len(values) * 9 // 10]:4.2f} ms")
    print(f"mrtr: counter's reset, 2 rounds, {args.flows} flows × {args.reps}:")
    print(line("mcp-mrtr", [load("mrtr", counter, args, tool="reset") for _ in range(args.reps)]))
    everything = [os.path.join(RELEASE, "everything"), "--stdio"]
    tasks = argparse.Namespace(flows=max(args.flows // 10, 1), warmup=max(args.warmup // 10, 1))
    print(f"task: everything's confirm_delete, 4 requests, {tasks.flows} flows × {args.reps}:")
    # Its production-minded default refuses a client starting more than 1 task a second.
    rate = {"MCP_MRTR_TASK_RATE": "100000"}
    print(line("mcp-mrtr", [load("task", everything, tasks, env=rate) for _ in range(args.reps)]))


if __name__ == "__main__":
    main()
