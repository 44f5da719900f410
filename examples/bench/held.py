#!/usr/bin/env python3
"""Resident memory of `everything` (release) while calls are held: what the serving
guide's "memory at the caps" column says, measured.

    examples/bench/held.py [--binary PATH] [--calls 64] [--pad zeros|text] [--values 99000]

Each case starts a fresh `everything --port 0` (or `--stdio`), makes one call first so
what serving a call allocates once is in the baseline, then holds `--calls` calls of
`slow_compute` (30 s) whose arguments carry a pad the tool never reads, and reports the
resident memory gained, in all and per call, after 3 s:

- `http`: modern calls, each on its own connection (one client address: its share of
  the handler slots is 64);
- `bridge`: 2025-11-25 `test_elicitation` calls with the same pad, each waiting for the
  client's answer to its question (its share of the bridge waits is 32);
- `stdio`: lines on one stdio connection (at most `Stdio::max_requests`, 64, run).

`--pad zeros` is a JSON array of zeros (the most values a byte buys, 2 bytes each; keep
`--values` under the 100,000 a request may hold), `--pad text` one string of the same
bytes (one value). Everything listens on 127.0.0.1 only. Run from the project's root.
"""
import argparse
import json
import os
import socket
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RELEASE = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release")
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def resident_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def post(port, body, headers):
    """Sends a POST and returns the socket, unread."""
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(data)}\r\n{head}\r\n".encode() + data
    )
    return sock


def read_head(sock):
    seen = b""
    while b"\r\n\r\n" not in seen:
        chunk = sock.recv(65536)
        if not chunk:
            break
        seen += chunk
    return seen


def start(binary, mode):
    if mode == "stdio":
        proc = subprocess.Popen([binary, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env={**os.environ, "RUST_LOG": "error"})
        return proc, None
    proc = subprocess.Popen([binary, "--port", "0"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            env={**os.environ, "RUST_LOG": "info"}, text=True)
    for line in proc.stderr:
        if "serving MCP over HTTP" in line:
            port = int(line.split("127.0.0.1:")[1].split("/")[0].split()[0])
            return proc, port
    raise SystemExit("everything did not start")


def pad(kind, values):
    return [0] * values if kind == "zeros" else "x" * (2 * values)


def http_call(port, arguments, ident=1):
    body = {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": "slow_compute", "arguments": arguments, "_meta": MODERN}}
    return post(port, body, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                             "Mcp-Name": "slow_compute"})


def legacy_session(port):
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "clientInfo": {"name": "held", "version": "0"},
        "capabilities": {"elicitation": {}}}}
    sock = post(port, init, {})
    head = read_head(sock).decode(errors="replace")
    sock.close()
    session = next(l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("mcp-session-id"))
    sock = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    read_head(sock)
    sock.close()
    return session


def bridge_call(port, session, padding, ident):
    body = {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "Who?", "pad": padding}}}
    sock = post(port, body, {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    read_head(sock)  # the stream opens with the question; the answer never comes
    return sock


def measure(binary, mode, calls, padding):
    proc, port = start(binary, mode)
    try:
        held = []
        if mode == "stdio":
            line = lambda i: (json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "slow_compute", "arguments": {"seconds": 30, "pad": padding}, "_meta": MODERN}}) + "\n").encode()
            proc.stdin.write(line(0)); proc.stdin.flush()
            time.sleep(0.5)
            before = resident_kib(proc.pid)
            for i in range(1, calls + 1):
                proc.stdin.write(line(i))
            proc.stdin.flush()
        elif mode == "http":
            http_call(port, {"seconds": 30, "pad": padding}).close()
            time.sleep(0.5)
            before = resident_kib(proc.pid)
            held = [http_call(port, {"seconds": 30, "pad": padding}, i) for i in range(calls)]
        else:
            sessions = [legacy_session(port) for _ in range((calls + 15) // 16)]
            bridge_call(port, sessions[0], padding, 0).close()
            time.sleep(0.5)
            before = resident_kib(proc.pid)
            held = [bridge_call(port, sessions[i // 16], padding, i + 1) for i in range(calls)]
        time.sleep(3)
        grown = resident_kib(proc.pid) - before
        for sock in held:
            sock.close()
        return before, grown
    finally:
        proc.kill()
        proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(RELEASE, "everything"))
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--pad", choices=["zeros", "text"], default="zeros")
    parser.add_argument("--values", type=int, default=99_000)
    parser.add_argument("--modes", default="http bridge stdio")
    args = parser.parse_args()
    padding = pad(args.pad, args.values)
    body = len(json.dumps(padding))
    for mode in args.modes.split():
        calls = min(args.calls, 32) if mode == "bridge" else args.calls
        before, grown = measure(args.binary, mode, calls, padding)
        print(f"{mode}: {calls} held calls, pad {args.pad} of {body} bytes: baseline {before / 1024:.1f} MiB, "
              f"+{grown / 1024:.1f} MiB ({grown / calls / 1024:.2f} MiB a call)", flush=True)


if __name__ == "__main__":
    main()
