#!/usr/bin/env bash
# Claude Code (the real host, pinned) calling a tool that asks, through the gateway example,
# with the upstream spoken to in 2026-07-28 and in a 2025-11-25 session: its model scripted
# on 127.0.0.1 (model.py), its terminal driven in a pty (drive.py) to fill in the form. Not
# part of .ci/run (the host's screens change between releases); run by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
eval "$(bash .ci/install-conformance.sh)"
CACHE="${MCP_MRTR_CACHE:-$HOME/.cache/mcp-mrtr}"
HOST_DIR="$CACHE/claude-code-2.1.197"
CLAUDE="$HOST_DIR/node_modules/.bin/claude"
[ -x "$CLAUDE" ] || npm install --prefix "$HOST_DIR" --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code@2.1.197 >&2
cargo build --quiet -p mcp-mrtr-examples --bin everything --bin gateway
bin="${CARGO_TARGET_DIR:-target}/debug"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
pids=""
trap 'kill $pids 2>/dev/null || true' EXIT
EV=$(free_port)
RUST_LOG=warn "$bin/everything" --port "$EV" & pids="$pids $!"
python3 .ci/await-discover.py "http://127.0.0.1:$EV/mcp" everything 15
MODEL=$(free_port)
TOOL=up_test_input_required_result_elicitation
python3 .ci/hosts/model.py "$MODEL" "$TOOL" '{}' "$work/model.log" & pids="$pids $!"
# A home of its own: onboarding done, the folder trusted, the scripted key approved.
mkdir -p "$work/home"
cat > "$work/home/.claude.json" <<JSON
{"hasCompletedOnboarding": true, "theme": "dark", "customApiKeyResponses": {"approved": ["sk-test"], "rejected": []},
 "projects": {"$PWD": {"hasTrustDialogAccepted": true}}}
JSON
failed=0
for flag in --mount --mount-2025; do
  GW=$(free_port)
  RUST_LOG=warn "$bin/gateway" --port "$GW" "$flag" "up_=http://127.0.0.1:$EV/mcp" & pids="$pids $!"
  python3 .ci/await-discover.py "http://127.0.0.1:$GW/mcp" gateway 15
  echo "{\"mcpServers\": {\"gw\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:$GW/mcp\"}}}" > "$work/mcp.json"
  rm -f "$work/model.log"
  HOME="$work/home" ANTHROPIC_BASE_URL="http://127.0.0.1:$MODEL" ANTHROPIC_API_KEY=sk-test DISABLE_TELEMETRY=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 timeout 120 python3 .ci/hosts/drive.py "$work/model.log" 60 \
    'forshortcuts=>say hello\r' 'Typesomething=>Ada' '✔name=>\r' 'Accept=>\r' \
    -- "$CLAUDE" --mcp-config "$work/mcp.json" --allowedTools "mcp__gw__$TOOL" > "$work/screen.txt" 2>&1 || true
  if grep -q "tool_result: Hello, Ada!" "$work/model.log" 2>/dev/null; then
    echo "== Claude Code through the gateway ($flag): the upstream's form answered in the host's dialog"
  else
    echo "FAILED: Claude Code through the gateway ($flag)" >&2
    cat "$work/model.log" "$work/screen.txt" >&2 || true
    failed=1
  fi
done
[ "$failed" -eq 0 ]
