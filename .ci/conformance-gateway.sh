#!/usr/bin/env bash
# The official conformance suite against the `gateway` example mounting the `everything`
# fixture (both over real HTTP on 127.0.0.1), for both revisions, twice: with the upstream
# spoken to in 2026-07-28, and in a 2025-11-25 session (`--mount-2025`). Every
# scenario must pass through the hop (rounds, state, headers, lists, progress, completions,
# subscriptions, tasks) but those the mount cannot serve, listed below with why; one of
# those that starts to pass fails this too, so the lists shrink as the mount grows.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash .ci/install-conformance.sh)"
cargo build --quiet -p mcp-mrtr-examples --bin everything --bin gateway
bin="${CARGO_TARGET_DIR:-target}/debug"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

UPSTREAM_PORT=$(free_port)
UPSTREAM="http://127.0.0.1:$UPSTREAM_PORT/mcp"
RUST_LOG=warn "$bin/everything" --port "$UPSTREAM_PORT" &
pids=$!
trap 'kill $pids 2>/dev/null || true' EXIT
python3 .ci/await-discover.py "$UPSTREAM" everything 15

# Through a 2025-11-25 session, what that revision cannot carry: tasks (the extension is
# 2026-07-28's; a session lists no tool that runs only as a task), the keys the upstream's
# handler gave its questions (a session's questions are requests, without keys: the
# scenarios that look for `user_name` by name), and a question the caller did not declare
# (the session declares every kind, once, for all callers: the mount refuses such a
# question with -32021 where the upstream would have chosen another path).
LEGACY_NOT_YET_2026=(
  tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-mrtr-composition
  tasks-required-task-error
  input-required-result-basic-elicitation input-required-result-ignore-extra-params
  input-required-result-capability-check
)

failed=0
# check NAME REVISION OUT NOT_YET…: the scenarios of one run, against the not-yet list.
check() {
  local name=$1 revision=$2 out=$3
  shift 3
  python3 - "$out" "$revision callers, $name" "$@" <<'PY'
import glob, json, os, sys
out, revision, not_yet = sys.argv[1], sys.argv[2], set(sys.argv[3:])
runs = sorted(glob.glob(os.path.join(out, "server-*", "checks.json")))
scenario_of = lambda run: next((n for n in sorted(not_yet, key=len, reverse=True)
                                if os.path.basename(os.path.dirname(run)).startswith(f"server-{n}-")), None)
bad, passed, expected = [], 0, {}
for run in runs:
    name = scenario_of(run)
    checks = json.load(open(run))
    failing = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if name:
        expected[name] = expected.get(name, False) or bool(failing)
        continue
    passed += sum(1 for c in checks if c.get("status") == "SUCCESS")
    for c in failing:
        bad.append(f"{os.path.basename(os.path.dirname(run))}: {c.get('id')} {c.get('status')}: {c.get('errorMessage', '')}")
for name in sorted(not_yet):
    if name in expected and not expected[name]:
        bad.append(f"{name} passes through the gateway now: take it off the not-yet list")
print(f"== conformance through the gateway ({revision}): {passed} checks passed in {len(runs) - len(expected)} scenarios; not served yet: {', '.join(sorted(not_yet)) or 'none'}")
for line in bad:
    print(f"  {line}", file=sys.stderr)
sys.exit(1 if bad or not runs else 0)
PY
}

# serve NAME MOUNT-FLAG: a gateway mounting the upstream so, both revisions run against it.
serve() {
  local name=$1
  shift
  local port
  port=$(free_port)
  RUST_LOG=warn "$bin/gateway" --port "$port" "$@" "=$UPSTREAM" &
  local gateway=$!
  pids="$pids $gateway"
  python3 .ci/await-discover.py "http://127.0.0.1:$port/mcp" gateway 15
  local out
  out=$(mktemp -d)
  for revision in 2026-07-28 2025-11-25; do
    "$NODE" "$CLI" server --url "http://127.0.0.1:$port/mcp" --requirements "$revision" -o "$out/$revision" \
      > "$out/$revision.log" 2>&1 || true
    local not_yet=()
    if [ "$name" = "2025-11-25 upstream" ] && [ "$revision" = 2026-07-28 ]; then not_yet=("${LEGACY_NOT_YET_2026[@]}"); fi
    if ! check "$name" "$revision" "$out/$revision" "${not_yet[@]}"; then
      tail -n 40 "$out/$revision.log" >&2
      failed=1
    fi
  done
  kill "$gateway" 2>/dev/null || true
}

serve "2026-07-28 upstream" --mount
serve "2025-11-25 upstream" --mount-2025
[ "$failed" -eq 0 ] || exit 1
