# Sourced by the CI stages that need an example server over HTTP: builds the example named
# by $1, serves it on a free port of 127.0.0.1, stops it when the stage exits, and waits (at
# most 15 s) until it answers server/discover. Sets URL and SERVER_PID.
cargo build --quiet -p mcp-mrtr-examples --bin "$1"

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/mcp"
RUST_LOG=warn "${CARGO_TARGET_DIR:-target}/debug/$1" --port "$PORT" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true' EXIT

python3 - "$URL" "$1" <<'PY'
import json, sys, time, urllib.request
url, name = sys.argv[1], sys.argv[2]
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
            sys.exit(f"the {name} server did not answer at {url}: {e}")
        time.sleep(0.2)
PY
