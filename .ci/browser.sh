#!/usr/bin/env bash
# MCP Apps in a real browser: the deploy example's apps (a review app that answers an
# elicitation, SEP-3118, and a status app with a tool result, SEP-1865) rendered by a
# minimal host in headless Chromium, driven by Playwright (examples/apps-host/test.mjs).
# Screenshots go to ${CARGO_TARGET_DIR:-target}/apps-host.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's Chromium; Playwright never downloads a browser of its own.
if [ ! -x /usr/bin/chromium ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null; }
fi
npm ci --prefix examples/apps-host --no-audit --no-fund --loglevel=error >/dev/null
cargo build --quiet -p mcp-mrtr-examples --bin deploy

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/mcp"
RUST_LOG=warn "${CARGO_TARGET_DIR:-target}/debug/deploy" --port "$PORT" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true' EXIT

# Wait (at most 15 s) until the server answers server/discover.
python3 - "$URL" <<'PY'
import json, sys, time, urllib.request
url = sys.argv[1]
body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
deadline = time.time() + 15
while True:
    try:
        urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=2).read()
        break
    except Exception as e:
        if time.time() > deadline:
            sys.exit(f"the deploy server did not answer at {url}: {e}")
        time.sleep(0.2)
PY

OUT="${CARGO_TARGET_DIR:-target}/apps-host" timeout 150 node examples/apps-host/test.mjs "$URL"
