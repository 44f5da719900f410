#!/usr/bin/env bash
# Load client: wrk against a release build of `everything` on 127.0.0.1, for three
# requests: a plain tool call, round 1 of an MRTR tool (input_required, state sealed),
# and its retry (state opened, handler replayed, complete). Needs `wrk` (Debian: wrk).
# Bounded: each run lasts DURATION (default 5s). Prints requests/s, latency and RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-32}
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/mcp"

cargo build --quiet --release -p mcp-mrtr-examples --bin everything
KEY=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')
RUST_LOG=warn MCP_MRTR_STATE_KEYS="load:$KEY" "${CARGO_TARGET_DIR:-target}/release/everything" --port "$PORT" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -f "$SCRIPT"' EXIT
SCRIPT=$(mktemp --suffix=.lua)
cat > "$SCRIPT" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = os.getenv("TOOL")
wrk.body = os.getenv("BODY")
LUA
sleep 1

META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
call() { # tool [extra params]
  echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",${2:-}$META}}"
}
run() { # label tool body
  echo "== $1"
  TOOL=$2 BODY=$3 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -s "$SCRIPT" "$URL" | grep -E "Requests/sec|Latency|Non-2xx"
}

MRTR=test_input_required_result_elicitation
run "plain tool call" test_simple_text "$(call test_simple_text)"
run "MRTR round 1 (input_required)" "$MRTR" "$(call $MRTR)"
STATE=$(curl -s -X POST "$URL" -H 'content-type: application/json' -H 'mcp-protocol-version: 2026-07-28' \
  -H 'mcp-method: tools/call' -H "mcp-name: $MRTR" -d "$(call $MRTR)" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["requestState"])')
ANSWER="\"inputResponses\":{\"user_name\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}},\"requestState\":\"$STATE\","
run "MRTR round 2 (state opened, complete)" "$MRTR" "$(call $MRTR "$ANSWER")"
echo "== server RSS: $(ps -o rss= -p $SERVER) KiB"
