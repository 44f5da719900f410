#!/usr/bin/env python3
"""Flows per second, latency and server CPU per flow, measured with `flow_load`.

    examples/bench/flows.py compare [--other PATH --other-name rmcp] [--flows "task multi_round"]
    examples/bench/flows.py redis   [--flows "once task"] [--deployments "standalone sentinel cluster"]
                                    [--instances 3]

`compare` runs the `everything` fixture (release) against another server that serves the
conformance fixtures on 127.0.0.1:$PORT/mcp (rmcp's conformance server does), started with
TCP_NODELAY forced on its accepted sockets (`nodelay.c`), alternating A B A B so that
drift hits both. Without `--other` it runs ours against itself, which is the noise. It
measures the floor first: the CPU per request of `floor`, a bare hyper server answering
every request with the bytes `everything` answers a `tools/list` with. Each flow's line
then reads against its requests x the floor, the least any HTTP server spends on them.

`redis` runs `everything` with its in-memory stores; for the task flow, with its records
in memory and one Redis `PING` before each store call (`RoundTripStore`: the wait that any
store in another process pays, and nothing else); then with the Redis stores on each
deployment of its own (`standalone`, `sentinel`: a primary, a replica and three sentinels,
`cluster`: three primaries with a replica each): flows/s, server CPU per flow, Redis
commands per flow (from `INFO commandstats`, summed over the data nodes) and Redis CPU per
flow on one instance, then flows/s on 2 ... N instances of the first deployment that share
a key ring, `flow_load` spreading every request round robin over them.

Medians of `--reps` runs (default 3), with the spread (max - min) / median of the same
binary as its noise. Everything listens on 127.0.0.1 only. Run from the project's root.
"""
import argparse
import base64
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RELEASE = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release")


def free_port():
    """A free port whose cluster bus port (10,000 above) is free too: a Redis Cluster node
    listens on both, and fails to start past 55,535."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port <= 55535:
            with socket.socket() as bus:
                try:
                    bus.bind(("127.0.0.1", port + 10000))
                    return port
                except OSError:
                    pass
    sys.exit("bench: no free port with a free cluster bus port")


def wait_port(port, proc, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"bench: a server exited at start ({proc.args[0]})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"bench: nothing listens on {port}")


class Servers:
    """The processes of one run, stopped when it ends."""

    def __init__(self):
        self.procs = []

    def start(self, argv, port, env=None):
        proc = subprocess.Popen(argv, env={**os.environ, **(env or {})},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        wait_port(port, proc)
        return proc

    def everything(self, env=None):
        port = free_port()
        env = {"MCP_MRTR_TASK_RATE": "100000", "RUST_LOG": "warn", **(env or {})}
        proc = self.start([os.path.join(RELEASE, "everything"), "--port", str(port)], port, env)
        return f"http://127.0.0.1:{port}/mcp", proc.pid

    def stop(self):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.procs = []


def load(flow, urls, pids, args):
    argv = [os.path.join(RELEASE, "flow_load"), "--flow", flow, "--seconds", str(args.seconds),
            "--warmup", str(args.warmup), "--workers", str(args.workers)]
    for url in urls:
        argv += ["--url", url]
    for pid in pids:
        argv += ["--pid", str(pid)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=args.seconds + args.warmup + 60)
    if out.returncode != 0:
        sys.exit(f"bench: flow_load failed: {out.stderr.strip()}")
    if out.stderr.strip():
        print(f"  ({flow}: {out.stderr.strip()})", file=sys.stderr)
    return json.loads(out.stdout)


def summary(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    if not values:
        return None, None
    median = statistics.median(values)
    spread = (max(values) - min(values)) / median if median else 0.0
    return median, spread


def line(label, runs):
    fps, fps_noise = summary(runs, "flows_per_s")
    p99, _ = summary(runs, "p99_ms")
    cpu, cpu_noise = summary(runs, "server_cpu_us_per_flow")
    rpf, _ = summary(runs, "requests_per_flow")
    failures = sum(r["failures"] for r in runs)
    cpu_text = f"{cpu:8.0f} µs ±{cpu_noise:4.0%}" if cpu is not None else "       -        "
    return (f"  {label:<22} {fps:9.0f}/s ±{fps_noise:4.0%}  p99 {p99:6.2f} ms  cpu/flow {cpu_text}"
            f"  req/flow {rpf:5.2f}  failures {failures}")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "mcp-mrtr-examples",
                    "--bin", "everything", "--bin", "flow_load", "--bin", "floor"], cwd=ROOT, check=True)


def recorded_list(url):
    """The bytes `everything` at `url` answers `tools/list` with, as `flow_load` asks."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
    request = urllib.request.Request(url, data=body.encode(), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.headers.get("Content-Type", "").split(";")[0] != "application/json":
            sys.exit("bench: everything answered tools/list with SSE; the floor needs its JSON")
        return response.read()


def floor(args):
    """Server CPU per request of `floor` answering what `everything` answers `tools/list`
    with: runs of `args.reps` (the `list` flow is one request), median and spread."""
    servers = Servers()
    url, _ = servers.everything()
    recorded = recorded_list(url)
    servers.stop()
    with tempfile.NamedTemporaryFile(suffix=".json") as body:
        body.write(recorded)
        body.flush()
        runs = []
        for _ in range(args.reps):
            servers = Servers()
            port = free_port()
            proc = servers.start([os.path.join(RELEASE, "floor"), "--port", str(port), "--body", body.name], port)
            runs.append(load("list", [f"http://127.0.0.1:{port}/mcp"], [proc.pid], args))
            servers.stop()
    print(line("floor (bare hyper)", runs).replace("cpu/flow", "cpu/req "))
    print(f"  ({len(recorded)} bytes answered to every request)")
    return summary(runs, "server_cpu_us_per_flow")[0]


def nodelay_shim():
    out = os.path.join(tempfile.gettempdir(), "mcp-mrtr-nodelay.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", out,
                    os.path.join(ROOT, "examples", "bench", "nodelay.c"), "-ldl"], check=True)
    return out


def compare(args):
    build()
    shim = nodelay_shim() if args.other else None
    per_request = floor(args)
    for flow in args.flows.split():
        print(f"{flow} ({args.workers} workers, {args.seconds} s × {args.reps}):")
        ours, other = [], []

        def run_ours():
            servers = Servers()
            url, pid = servers.everything()
            ours.append(load(flow, [url], [pid], args))
            servers.stop()

        def run_other():
            servers = Servers()
            if args.other:
                port = free_port()
                proc = servers.start([args.other], port, {"PORT": str(port), "LD_PRELOAD": shim})
                other.append(load(flow, [f"http://127.0.0.1:{port}/mcp"], [proc.pid], args))
            else:
                url, pid = servers.everything()
                other.append(load(flow, [url], [pid], args))
            servers.stop()

        # Who goes first takes turns: on this machine the first of a pair read about 5% more
        # CPU per flow than the second, whichever binary it was (2026-12-07).
        for rep in range(args.reps):
            for run in ((run_ours, run_other) if rep % 2 == 0 else (run_other, run_ours)):
                run()
        print(line("mcp-mrtr", ours))
        print(line(args.other_name if args.other else "mcp-mrtr (again)", other))
        a, b = summary(ours, "flows_per_s")[0], summary(other, "flows_per_s")[0]
        if a and b:
            print(f"  ratio {a / b:.2f}")
        requests = summary(ours, "requests_per_flow")[0]
        if per_request and requests:
            least = requests * per_request
            print(f"  floor: {requests:.2f} requests × {per_request:.1f} µs = {least:.0f} µs per flow"
                  + "".join(f"; {name} {cpu / least:.1f}× it"
                            for name, runs in (("mcp-mrtr", ours), (args.other_name if args.other else "again", other))
                            for cpu in [summary(runs, "server_cpu_us_per_flow")[0]] if cpu))


class Node:
    """One redis-server process on 127.0.0.1 in a folder of its own, nothing saved."""

    def __init__(self, *settings):
        self.dir = tempfile.mkdtemp(prefix="mcp-mrtr-bench-redis.")
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, *settings], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def cli(self, *words):
        return subprocess.run(["redis-cli", "-p", str(self.port), *words], capture_output=True, text=True,
                              check=True).stdout

    def commands(self):
        """Every command this node has run, by name."""
        counts = {}
        for row in self.cli("info", "commandstats").splitlines():
            if row.startswith("cmdstat_"):
                name, stats = row[len("cmdstat_"):].split(":", 1)
                counts[name] = int(stats.split(",")[0].split("=")[1])
        return counts

    def cpu_ticks(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def until(what, done, seconds=60):
    deadline = time.time() + seconds
    while not done():
        if time.time() > deadline:
            sys.exit(f"bench: waited too long for {what}")
        time.sleep(0.1)


class Redis:
    """A Redis deployment of the benchmark's own: `standalone` (one node), `sentinel` (a
    primary, a replica and three sentinels) or `cluster` (three primaries with a replica
    each). Commands and CPU are summed over the data nodes; `env` tells `everything`."""

    def __init__(self, shape="standalone"):
        self.nodes, self.sentinels = [], []
        if shape == "standalone":
            self.nodes.append(Node())
            self.env = {"MCP_MRTR_REDIS_URL": f"redis://127.0.0.1:{self.nodes[0].port}/"}
        elif shape == "sentinel":
            primary = Node()
            self.nodes += [primary, Node("--replicaof", "127.0.0.1", str(primary.port))]
            for _ in range(3):
                port = free_port()
                conf = os.path.join(primary.dir, f"sentinel-{port}.conf")
                with open(conf, "w") as f:
                    f.write(f"port {port}\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 {primary.port} 2\n"
                            "sentinel down-after-milliseconds mymaster 1000\n")
                proc = subprocess.Popen(["redis-server", conf, "--sentinel"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                wait_port(port, proc)
                self.sentinels.append((port, proc))
            sentinel = self.sentinels[0][0]
            ask = lambda *words: subprocess.run(["redis-cli", "-p", str(sentinel), *words], capture_output=True,
                                                text=True).stdout
            until("the sentinels", lambda: ask("sentinel", "ckquorum", "mymaster").startswith("OK")
                  and ask("sentinel", "replicas", "mymaster").strip() != "")
            self.env = {"MCP_MRTR_REDIS_SENTINELS": ",".join(f"127.0.0.1:{p}" for p, _ in self.sentinels),
                        "MCP_MRTR_REDIS_MASTER": "mymaster"}
        elif shape == "cluster":
            self.nodes = [Node("--cluster-enabled", "yes", "--cluster-node-timeout", "1000") for _ in range(6)]
            subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in self.nodes],
                            "--cluster-replicas", "1", "--cluster-yes"], capture_output=True, check=True)
            until("the cluster", lambda: all("cluster_state:ok" in n.cli("cluster", "info") for n in self.nodes))
            self.env = {"MCP_MRTR_REDIS_CLUSTER": ",".join(f"redis://127.0.0.1:{n.port}/" for n in self.nodes)}
        else:
            sys.exit(f"bench: no deployment {shape!r} (standalone, sentinel, cluster)")

    def commands(self):
        total = {}
        for node in self.nodes:
            for name, count in node.commands().items():
                total[name] = total.get(name, 0) + count
        return total

    def cpu_ticks(self):
        return sum(node.cpu_ticks() for node in self.nodes)

    def stop(self):
        for _, proc in self.sentinels:
            proc.terminate()
            proc.wait(timeout=10)
        for node in self.nodes:
            node.stop()


def redis(args):
    if not shutil.which("redis-server"):
        sys.exit("bench: redis-server is not installed (Debian's redis-server package)")
    build()
    keys = {"MCP_MRTR_STATE_KEYS": "bench:" + base64.b64encode(secrets.token_bytes(32)).decode()}
    shapes = args.deployments.split()
    for flow in args.flows.split():
        print(f"{flow}, one instance ({args.workers} workers, {args.seconds} s × {args.reps}):")
        memory, waits, shared = [], [], {shape: ([], [], []) for shape in shapes}
        for _ in range(args.reps):
            servers = Servers()
            url, pid = servers.everything(keys)
            memory.append(load(flow, [url], [pid], args))
            servers.stop()
            if flow == "task":
                # The wait alone: records in memory, one PING to a Redis before each
                # store call (`RoundTripStore`), the least any store in another
                # process costs.
                node = Node()
                servers = Servers()
                url, pid = servers.everything({**keys, "MCP_MRTR_BENCH_ROUND_TRIP": f"127.0.0.1:{node.port}"})
                waits.append(load(flow, [url], [pid], args))
                servers.stop()
                node.stop()
            for shape in shapes:
                runs, per_flow, redis_cpu = shared[shape]
                store = Redis(shape)
                servers = Servers()
                url, pid = servers.everything({**keys, **store.env})
                before, ticks = store.commands(), store.cpu_ticks()
                run = load(flow, [url], [pid], args)
                after, ticks = store.commands(), store.cpu_ticks() - ticks
                servers.stop()
                store.stop()
                runs.append(run)
                # Commands counted over the whole run (warm-up too): per flow of the run's
                # rate, an estimate; the by-name split shows what a round pays. Replicas
                # replay their primary's writes, so a deployment's commands and CPU
                # include its replication.
                total_flows = run["flows_per_s"] * (args.seconds + args.warmup)
                per_flow.append({name: (after.get(name, 0) - before.get(name, 0)) / total_flows
                                 for name in after if total_flows})
                redis_cpu.append(ticks * 10_000 / total_flows if total_flows else 0)
        print(line("in memory", memory))
        if waits:
            print(line("in memory + a PING", waits))
        for shape in shapes:
            runs, per_flow, redis_cpu = shared[shape]
            print(line(f"Redis, {shape}", runs))
            names = sorted({n for p in per_flow for n in p})
            split = ", ".join(f"{n} {statistics.median([p.get(n, 0) for p in per_flow]):.2f}" for n in names)
            total = statistics.median([sum(p.values()) for p in per_flow]) if per_flow else 0
            print(f"    Redis commands per flow, a script's own included: {total:.2f} ({split}); Redis CPU per flow "
                  f"{statistics.median(redis_cpu):.0f} µs")
        for n in range(2, args.instances + 1):
            runs = []
            for _ in range(args.reps):
                store = Redis(shapes[0])
                servers = Servers()
                started = [servers.everything({**keys, **store.env}) for _ in range(n)]
                runs.append(load(flow, [u for u, _ in started], [p for _, p in started], args))
                servers.stop()
                store.stop()
            print(line(f"{n} instances, Redis {shapes[0]}", runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["compare", "redis"])
    parser.add_argument("--flows", default=None)
    parser.add_argument("--other", help="another server's binary, started with PORT=n")
    parser.add_argument("--other-name", default="other")
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--deployments", default="standalone sentinel cluster",
                        help="the Redis deployments `redis` runs side by side")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    os.chdir(ROOT)
    if args.what == "compare":
        args.flows = args.flows or "task elicitation multi_round"
        compare(args)
    else:
        args.flows = args.flows or "once task"
        redis(args)


if __name__ == "__main__":
    main()
