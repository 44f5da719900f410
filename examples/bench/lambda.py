#!/usr/bin/env python3
"""A Lambda function's cold start, ours against the least a function can be.

    examples/bench/lambda.py [--starts 30]

Builds `examples/bench/lambda` with the deploy guide's `lambda` profile: `lean`, the reports
function with the `lambda` feature alone, and `bare`, a lambda_http function answering
every invocation with the bytes `lean` answered (recorded by a first start). Then starts
each `--starts` times, alternating, every process directly against an emulated runtime
API on 127.0.0.1 (a port of its own per start, so a killed process's late requests reach
only its own) that hands it one Function URL event carrying `tools/list`.

Per start: the time from spawn to the response's arrival at the runtime API, the resident
memory at that moment, and the process's CPU (user + system, from `wait4` after a SIGKILL
once it answered). Prints the medians and ours / bare. Run from the project's root; Python's
standard library only.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from flows import ROOT

CRATE = os.path.join(ROOT, "examples", "bench", "lambda")
BUILT = os.path.join(ROOT, "target", "bench-lambda", "lambda")

MESSAGE = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}
# A Function URL's event (payload 2.0), as AWS sends it.
EVENT = {
    "version": "2.0", "routeKey": "$default", "rawPath": "/mcp", "rawQueryString": "",
    "headers": {"content-type": "application/json", "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"},
    "requestContext": {
        "accountId": "anonymous", "apiId": "reports", "domainName": "reports.lambda-url.eu-west-1.on.aws",
        "domainPrefix": "reports", "requestId": "id", "routeKey": "$default", "stage": "$default",
        "time": "07/Dec/2026:12:00:00 +0000", "timeEpoch": 0,
        "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
                 "userAgent": "bench"}},
    "body": json.dumps(MESSAGE), "isBase64Encoded": False}


class Invocation:
    """What the runtime API saw of the one start under way."""

    def __init__(self):
        self.handed = False
        self.arrived = None
        self.answer = None
        self.done = threading.Event()


def runtime_api(invocation):
    class Api(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if not self.path.endswith("/invocation/next"):
                self.send_error(404)
                return
            if invocation.handed:
                # A function asks for its next event once it answered: it never comes.
                invocation.done.wait(10)
                return
            invocation.handed = True
            body = json.dumps(EVENT).encode()
            self.send_response(200)
            for name, value in [("Lambda-Runtime-Aws-Request-Id", "req-1"),
                                ("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 30000)),
                                ("Lambda-Runtime-Invoked-Function-Arn",
                                 "arn:aws:lambda:eu-west-1:123456789012:function:bench"),
                                ("Lambda-Runtime-Trace-Id", "Root=1-0-0"), ("Content-Type", "application/json"),
                                ("Content-Length", str(len(body)))]:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.endswith("/response"):
                invocation.arrived = time.perf_counter()
                invocation.answer = data
            else:
                invocation.answer = b"ERROR " + self.path.encode() + b" " + data
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            invocation.done.set()

    return Api


class Quiet(ThreadingHTTPServer):
    """The runtime API: a function killed once it answered resets its connection, which is
    the point, not an error to print."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


def start(binary, body_file):
    """One cold start: (ms to the answer, CPU ms, resident KiB at the answer, the answer)."""
    invocation = Invocation()
    api = Quiet(("127.0.0.1", 0), runtime_api(invocation))
    threading.Thread(target=api.serve_forever, daemon=True).start()
    env = {**os.environ, "BODY_FILE": body_file, "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{api.server_address[1]}",
           "AWS_LAMBDA_FUNCTION_NAME": "bench", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
           "AWS_LAMBDA_FUNCTION_VERSION": "1", "AWS_LAMBDA_LOG_STREAM_NAME": "s", "AWS_LAMBDA_LOG_GROUP_NAME": "g"}
    started = time.perf_counter()
    process = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not invocation.done.wait(10):
            raise SystemExit(f"{binary}: no answer within 10 s")
        with open(f"/proc/{process.pid}/status") as status:
            rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    finally:
        os.kill(process.pid, signal.SIGKILL)
        _, _, usage = os.wait4(process.pid, 0)
        api.shutdown()
        api.server_close()
    if invocation.answer.startswith(b"ERROR"):
        raise SystemExit(f"{binary}: {invocation.answer.decode(errors='replace')}")
    cpu = (usage.ru_utime + usage.ru_stime) * 1000
    return (invocation.arrived - started) * 1000, cpu, rss, invocation.answer


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=30)
    args = parser.parse_args()
    subprocess.run(["cargo", "build", "--quiet", "--profile", "lambda", "--target-dir",
                    os.path.join(ROOT, "target", "bench-lambda")], cwd=CRATE, check=True)
    functions = [("ours", os.path.join(BUILT, "lean")), ("bare", os.path.join(BUILT, "bare"))]
    with tempfile.TemporaryDirectory() as scratch:
        body_file = os.path.join(scratch, "body.json")
        # What ours answers (the API Gateway response's body), for bare to give back.
        _, _, _, answer = start(functions[0][1], body_file)
        with open(body_file, "w") as body:
            body.write(json.loads(answer)["body"])
        runs = {name: [] for name, _ in functions}
        for i in range(args.starts):
            for name, binary in functions if i % 2 == 0 else functions[::-1]:
                runs[name].append(start(binary, body_file)[:3])
    median = lambda name, k: statistics.median(run[k] for run in runs[name])
    sizes = {name: os.path.getsize(binary) / 1e6 for name, binary in functions}
    for name, _ in functions:
        print(f"{name}: {sizes[name]:.1f} MB, start {median(name, 0):.2f} ms, CPU {median(name, 1):.2f} ms, "
              f"resident {median(name, 2) / 1024:.2f} MiB (medians of {args.starts})")
    print(f"ours / bare: start {median('ours', 0) / median('bare', 0):.2f}x, "
          f"CPU {median('ours', 1) / median('bare', 1):.2f}x, memory {median('ours', 2) / median('bare', 2):.2f}x")


if __name__ == "__main__":
    main()
