#!/usr/bin/env bash
# Servers as AWS Lambda functions in a real Lambda runtime on this machine: cargo-lambda's
# emulator (`cargo lambda watch`, from PyPI) serves the examples' functions on 127.0.0.1.
# 1. The reports example: a `reports_worker` runs its tasks, both share a redis-server of
#    this stage's own, and examples/tests/serverless.rs drives its flows over HTTP through
#    the emulator's Function URL (MCP_MRTR_LAMBDA_URL). `cargo test` runs the same in-process.
# 2. The conformance fixture as a function: the official suite (2026-07-28) through it.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)"
export CARGO_TARGET_DIR="$TARGET"

# cargo-lambda in a venv of its own. `watch` needs no zig (only `cargo lambda build`
# cross-compiles with it), so its 100 MB wheel is left out.
VENV="$TARGET/cargo-lambda"
if [ ! -x "$VENV/bin/cargo-lambda" ]; then
  # Debian's python3 makes venvs only with python3-venv installed.
  python3 -m venv "$VENV" 2>/dev/null || {
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends python3-venv >/dev/null \
      || { apt-get update >/dev/null && apt-get install -y --no-install-recommends python3-venv >/dev/null; }
    rm -rf "$VENV"
    python3 -m venv "$VENV"
  }
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps cargo-lambda==1.9.2
fi

# Built before the emulator's first invoke, which would otherwise build them (its `cargo run`
# then finds them fresh).
cargo build --quiet --locked -p mcp-mrtr-examples --bin reports_lambda --bin reports_worker --bin everything

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
REDIS_PORT=$(free_port)
LAMBDA_PORT=$(free_port)
KEY="k1:$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')"
REDIS_URL="redis://127.0.0.1:$REDIS_PORT/"
URL="http://127.0.0.1:$LAMBDA_PORT/lambda-url/reports_lambda/mcp"
LOG="$TARGET/lambda"
# Fresh each run: the conformance check reads every result folder under it.
rm -rf "$LOG"
mkdir -p "$LOG"

PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no >"$LOG/redis.log" 2>&1 &
PIDS+=($!)
# Every binary of the package is a function at /lambda-url/<bin>/ (each started at its first invoke).
"$VENV/bin/cargo-lambda" lambda watch -A 127.0.0.1 -P "$LAMBDA_PORT" --ignore-changes --locked -p mcp-mrtr-examples \
  --env-var "MCP_MRTR_STATE_KEYS=$KEY" --env-var "MCP_MRTR_REDIS_URL=$REDIS_URL" --env-var RUST_LOG=info \
  --env-var MCP_MRTR_TASK_RATE=100 \
  >"$LOG/emulator.log" 2>&1 &
PIDS+=($!)
MCP_MRTR_STATE_KEYS="$KEY" MCP_MRTR_REDIS_URL="$REDIS_URL" RUST_LOG=info \
  "$TARGET/debug/reports_worker" >"$LOG/worker.log" 2>&1 &
PIDS+=($!)

# The function starts at its first invoke: wait (at most 120 s) until it answers.
python3 .ci/await-discover.py "$URL" reports_lambda 120 || { tail -n 40 "$LOG/emulator.log" "$LOG/worker.log"; exit 1; }
echo "lambda: the function answered server/discover through the emulator"

MCP_MRTR_LAMBDA_URL="$URL" cargo test --quiet -p mcp-mrtr-examples --test integration -- serverless:: \
  || { tail -n 40 "$LOG/emulator.log" "$LOG/worker.log"; exit 1; }
grep -q "running tasks from the task store" "$LOG/worker.log"
echo "lambda: the serverless flows passed through cargo-lambda's emulator (logs in $LOG)"

# The fixture as a function (its tasks run in it: the emulator does not freeze it between
# invokes), sharing the Redis: every check of the 2026-07-28 suite, scored or not, must pass.
# The suite is one client that starts its tasks back to back; a run takes most of the
# default creation burst (16, then 1 a second), so a second run against the same function
# (the retry below) would be refused tasks: MCP_MRTR_TASK_RATE above raises the fixture's
# limits. The HTTP stage (.ci/conformance.sh) runs the suite once, on the defaults.
FIXTURE="http://127.0.0.1:$LAMBDA_PORT/lambda-url/everything/mcp"
python3 .ci/await-discover.py "$FIXTURE" everything 120 || { tail -n 40 "$LOG/emulator.log"; exit 1; }
eval "$(bash .ci/install-conformance.sh)"
# One run of the suite into $LOG/$1: it passes when every check of every scenario does.
conformance() {
  local status=0
  "$NODE" "$CLI" server --url "$FIXTURE" --requirements 2026-07-28 -o "$LOG/$1" >"$LOG/$1.log" 2>&1 || status=$?
  grep -E '^Total' "$LOG/$1.log" || true
  [ "$status" -eq 0 ] || { echo "the suite exited with $status; the end of its log:"; tail -n 30 "$LOG/$1.log"; }
  # Every failed check with its message (a log's tail may not reach them), then the verdict.
  python3 - "$LOG/$1" "$status" <<'PY'
import glob, json, sys
runs = glob.glob(f"{sys.argv[1]}/*/checks.json")
bad = [f"{run.split('/')[-2]}: {c.get('id')} {c.get('status')}: {c.get('errorMessage', '')}"
       for run in runs for c in json.load(open(run)) if c.get("status") in ("FAILURE", "WARNING")]
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad or not runs or sys.argv[2] != "0" else 0)
PY
}
# Once (of some fifteen runs here) the emulator itself answered two tools/list calls with its
# own 500 page; not reproduced since. A failed run prints all it saw and the emulator's log,
# and is run once more: the stage passes only on a clean second run, and says so.
RUN=conformance
if ! conformance "$RUN"; then
  echo "lambda: FLAKY? the first conformance run through the emulator failed (above); the emulator's log:" >&2
  tail -n 60 "$LOG/emulator.log" >&2
  RUN=conformance-again
  conformance "$RUN" || exit 1
  echo "lambda: the second conformance run passed clean"
fi
echo "lambda: conformance 2026-07-28 through the fixture as a function: $(grep -E '^Total' "$LOG/$RUN.log"), every unscored check passed too"
