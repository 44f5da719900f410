#!/usr/bin/env bash
# The gateway example in front of another SDK's server, over real HTTP on 127.0.0.1: the
# TypeScript SDK 1.32's example server (`simpleStreamableHttp`, from npm), which speaks
# 2025-11-25 only, beside `everything`. The `ask` example, a terminal host on the crate's
# client, calls through the gateway as a person would, answering the TypeScript server's
# form from its standard input.
#
# With MCP_MRTR_RMCP_SERVER set to rmcp 3.11's conformance server (the rust-sdk
# repository's `conformance/src/bin/server.rs` built against `rmcp = "=3.11.0"`; CI has
# no copy of that repository), the conformance suite also runs through a gateway mounting
# it: every scenario rmcp passes directly must pass through the hop, but those listed
# below with why.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash .ci/install-conformance.sh)"
CACHE="${MCP_MRTR_CACHE:-$HOME/.cache/mcp-mrtr}"
TS_DIR="$CACHE/ts-sdk-1.32.2"
TS_SERVER="$TS_DIR/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"
if [ ! -f "$TS_SERVER" ]; then
  mkdir -p "$TS_DIR"
  npm install --prefix "$TS_DIR" --no-audit --no-fund --loglevel=error @modelcontextprotocol/sdk@1.32.2 >&2
fi
cargo build --quiet -p mcp-mrtr-examples --bin everything --bin gateway --bin ask
bin="${CARGO_TARGET_DIR:-target}/debug"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# await_port PORT: until something listens there (at most 10 s; the servers of other SDKs
# answer server/discover in ways await-discover.py need not read).
await_port() {
  for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}
pids=""
trap 'kill $pids 2>/dev/null || true' EXIT

TS_PORT=$(free_port)
MCP_PORT=$TS_PORT "$NODE" "$TS_SERVER" > /dev/null 2>&1 &
pids="$pids $!"
EVERYTHING_PORT=$(free_port)
RUST_LOG=warn "$bin/everything" --port "$EVERYTHING_PORT" &
pids="$pids $!"
python3 .ci/await-discover.py "http://127.0.0.1:$EVERYTHING_PORT/mcp" everything 15
await_port "$TS_PORT"
GATEWAY_PORT=$(free_port)
GATEWAY="http://127.0.0.1:$GATEWAY_PORT/mcp"
RUST_LOG=warn "$bin/gateway" --port "$GATEWAY_PORT" --mount "ts_=http://127.0.0.1:$TS_PORT/mcp" \
  --mount "ev_=http://127.0.0.1:$EVERYTHING_PORT/mcp" &
pids="$pids $!"
python3 .ci/await-discover.py "$GATEWAY" gateway 15

failed=0
# expect WHAT OUTPUT TEXT: fails the run when OUTPUT lacks TEXT.
expect() {
  if grep -qF -- "$3" <<< "$2"; then
    echo "== through the gateway: $1"
  else
    echo "FAILED through the gateway: $1: no \"$3\" in:" >&2
    echo "$2" >&2
    failed=1
  fi
}
out=$("$bin/ask" "$GATEWAY" 2>&1 || true)
expect "the TypeScript server's tools listed beside everything's" "$out" "ts_collect-user-info"
out=$("$bin/ask" "$GATEWAY" ts_greet '{"name": "Ada"}' 2>&1 || true)
expect "a TypeScript tool called" "$out" "Hello, Ada!"
# Its form, asked on its 2025-11-25 call's stream, answered here as a 2026-07-28 round:
# consent, a name, an email, no phone.
out=$(printf 'y\nAda Lovelace\nada@example.com\n\n' | timeout 60 "$bin/ask" "$GATEWAY" ts_collect-user-info \
  '{"infoType": "contact"}' 2>&1 || true)
expect "the TypeScript server's form answered across the hop" "$out" '"email": "ada@example.com"'
out=$(printf 'y\nAda\n' | timeout 60 "$bin/ask" "$GATEWAY" ev_test_input_required_result_elicitation '{}' 2>&1 || true)
expect "everything's form beside it" "$out" "Hello, Ada!"

if [ -n "${MCP_MRTR_RMCP_SERVER:-}" ]; then
  RMCP_PORT=$(free_port)
  PORT=$RMCP_PORT RUST_LOG=warn "$MCP_MRTR_RMCP_SERVER" > /dev/null 2>&1 &
  pids="$pids $!"
  await_port "$RMCP_PORT"
  RMCP_GATEWAY_PORT=$(free_port)
  RUST_LOG=warn "$bin/gateway" --port "$RMCP_GATEWAY_PORT" --mount "=http://127.0.0.1:$RMCP_PORT/mcp" &
  pids="$pids $!"
  python3 .ci/await-discover.py "http://127.0.0.1:$RMCP_GATEWAY_PORT/mcp" gateway 15
  # rmcp 3.11 answers completion/complete without declaring `completions`: the gateway
  # asks completions only of an upstream that declares them. Its fixture tools for the
  # 2025-11-25 elicitation and sampling scenarios send requests on a 2026-07-28 call's
  # stream, which that revision does not allow and the gateway does not answer. And it
  # takes subscriptions to `test://watched-resource`, which it does not list: the gateway
  # refuses a subscription to a resource it does not serve.
  NOT_2026=(completion-complete)
  NOT_2025=(completion-complete elicitation-sep1034-defaults elicitation-sep1330-enums tools-call-elicitation
    tools-call-sampling resources-subscribe resources-unsubscribe)
  out_dir=$(mktemp -d)
  for revision in 2026-07-28 2025-11-25; do
    "$NODE" "$CLI" server --url "http://127.0.0.1:$RMCP_GATEWAY_PORT/mcp" --requirements "$revision" \
      -o "$out_dir/$revision" > "$out_dir/$revision.log" 2>&1 || true
    if [ "$revision" = 2026-07-28 ]; then not=("${NOT_2026[@]}"); else not=("${NOT_2025[@]}"); fi
    python3 - "$out_dir/$revision" "$revision" "${not[@]}" <<'PY' || failed=1
import glob, json, os, sys
out, revision, not_served = sys.argv[1], sys.argv[2], set(sys.argv[3:])
passed, bad, runs = 0, [], sorted(glob.glob(os.path.join(out, "server-*", "checks.json")))
for run in runs:
    scenario = os.path.basename(os.path.dirname(run))[len("server-"):].rsplit("-", 6)[0]
    checks = json.load(open(run))
    failing = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if scenario in not_served:
        if not failing:
            bad.append(f"{scenario} passes through the gateway now: take it off the list")
        continue
    passed += sum(1 for c in checks if c.get("status") == "SUCCESS")
    bad += [f"{scenario}: {c.get('id')}: {c.get('errorMessage', '')}" for c in failing]
print(f"== conformance through the gateway mounting rmcp ({revision}): {passed} checks passed in "
      f"{len(runs) - len(not_served)} scenarios; not served: {', '.join(sorted(not_served))}")
for line in bad:
    print(f"  {line}", file=sys.stderr)
sys.exit(1 if bad or not runs else 0)
PY
  done
fi
[ "$failed" -eq 0 ] || exit 1
