#!/usr/bin/env bash
# Soak and chaos, short: 60 s of mixed traffic over three `everything` instances sharing a
# key ring and a redis-server of their own on 127.0.0.1, with a front end whose tasks run on
# two task workers, and the default fault schedule (a 60 s run gets a SIGKILL, a SIGTERM, a
# Redis restart and a stalled reader, plus one more, and two workers SIGTERMed inside a
# task's once! step). Fails if any operation was lost, duplicated, wrong or hung (soak exits
# 1), if the run could not start (2), or if the schedule did not kill an instance, restart
# Redis and SIGTERM a worker inside a step.
#
#   bash .ci/soak.sh            # SOAK_SECONDS, SOAK_SEED, SOAK_OUT and SOAK_REDIS override the defaults
#
# SOAK_REDIS picks the Redis deployment, and so its fault: standalone (restarted empty, the
# default), persistent (restarted from its AOF), sentinel (the primary killed, the replica
# promoted) or cluster (a primary killed).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends redis-server >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends redis-server >/dev/null; }
fi

cargo build -p mcp-mrtr-examples --bins --quiet

seconds="${SOAK_SECONDS:-60}"
seed="${SOAK_SEED:-$RANDOM$RANDOM}"
out="${SOAK_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcp-mrtr-soak.XXXXXX")}"
redis="${SOAK_REDIS:-standalone}"
echo "soak: ${seconds} s, seed ${seed} (SOAK_SEED=${seed} repeats the schedule), redis ${redis}, output in ${out}"

status=0
"${CARGO_TARGET_DIR:-target}"/debug/soak --seconds "$seconds" --instances 3 --seed "$seed" --out "$out" --faults default --redis "$redis" \
  || status=$?
if [ "$status" -ne 0 ]; then
  echo "soak: FAILED (exit $status); the history of each operation named above is in ${out}/history.jsonl" >&2
  exit "$status"
fi

# The run must have had the faults it is meant to survive.
faults="$(grep '^faults injected:' "$out/summary.txt")"
for needed in sigkill redis_restart worker_sigterm; do
  if ! grep -Eq "${needed} [1-9]" <<<"$faults"; then
    echo "soak: the run injected no ${needed} (${faults})" >&2
    exit 1
  fi
done
# A worker's SIGTERM must have landed inside a step for the run to show a stop lets it finish.
steps="$(grep '^task steps' "$out/summary.txt")"
if ! grep -Eq ", [1-9][0-9]* of them inside a step" <<<"$steps"; then
  echo "soak: no worker SIGTERM landed inside a step (${steps})" >&2
  exit 1
fi
echo "soak: clean (${faults}; ${steps#task steps (the outbox, outside the processes): })"
