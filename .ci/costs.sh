#!/usr/bin/env bash
# The cost of each guarded flow, in instructions counted by callgrind (Debian's valgrind),
# against the baselines in .ci/costs.txt: fails when a flow costs more than 3% over its
# baseline. Instructions, not time: the same binary and inputs count the same, whatever
# else the machine does, so a slower commit is caught before it lands.
#
#   bash .ci/costs.sh                   # every flow, checked
#   bash .ci/costs.sh http-elicitation  # some flows
#   COSTS_UPDATE=1 bash .ci/costs.sh    # the measured costs become the baselines
#
# Raising a baseline is a deliberate commit that says what the cost buys. A flow runs
# COSTS_FEW and COSTS_MANY times in a process of its own (`costs`, examples/src/bin/costs.rs);
# the difference between the two counts, over the difference in runs, is one flow's cost,
# the process's start-up aside.
#
# Valgrind hides the CPU's SHA extensions, so SHA-256 (the binding digest, a question's
# digest) runs in software here: about 9% of an elicitation flow's count, ten times what it
# costs on a CPU that has them. Read a change in hashing against that; the flows' CPU time
# on hardware is `examples/bench/flows.py`'s to say.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends valgrind >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends valgrind >/dev/null; }
fi

cargo build --release --quiet -p mcp-mrtr-examples --bin costs
bin="${CARGO_TARGET_DIR:-target}/release/costs"
few="${COSTS_FEW:-10}"
many="${COSTS_MANY:-110}"
flows=("$@")
[ "${#flows[@]}" -gt 0 ] || mapfile -t flows < <("$bin" --list)

# Instructions `costs FLOW RUNS` executes; fails with the flow's own error when it fails.
count() {
  local log
  log=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1) || {
    echo "costs: $1 failed:" >&2
    echo "$log" | grep -v '^==' >&2
    return 1
  }
  echo "$log" | sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p'
}

measured=$(mktemp)
trap 'rm -f "$measured"' EXIT
for flow in "${flows[@]}"; do
  a=$(count "$flow" "$few")
  b=$(count "$flow" "$many")
  echo "$flow $(((b - a) / (many - few)))" >> "$measured"
done

python3 - "$measured" .ci/costs.txt "${COSTS_UPDATE:-}" <<'PY'
import sys
measured_path, baseline_path, update = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
measured = dict(line.split() for line in open(measured_path))
header, baseline = [], {}
for line in open(baseline_path):
    if line.startswith("#") or not line.strip():
        header.append(line)
    else:
        flow, cost = line.split()
        baseline[flow] = cost
worse = []
print(f"{'flow':20} {'baseline':>10} {'now':>10}  change")
for flow, now in measured.items():
    was = baseline.get(flow)
    change = f"{int(now) / int(was) - 1:+.1%}" if was else "new"
    print(f"{flow:20} {was or '-':>10} {now:>10}  {change}")
    if was and int(now) > int(was) * 1.03:
        worse.append(flow)
if update:
    baseline.update(measured)
    with open(baseline_path, "w") as out:
        out.writelines(header)
        out.writelines(f"{flow} {cost}\n" for flow, cost in sorted(baseline.items()))
    print(f"costs: {baseline_path} now holds these costs; commit it saying what the change buys")
elif worse:
    print(f"costs: {', '.join(worse)} cost more than 3% over the baseline ({baseline_path}); make it "
          "cheaper, or raise the baseline deliberately (COSTS_UPDATE=1) in a commit that says what it buys",
          file=sys.stderr)
    sys.exit(1)
else:
    missing = sorted(set(measured) - set(baseline))
    if missing:
        print(f"costs: no baseline for {', '.join(missing)} (COSTS_UPDATE=1 writes it)", file=sys.stderr)
        sys.exit(1)
    print("costs: every flow within 3% of its baseline")
PY
