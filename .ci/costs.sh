#!/usr/bin/env bash
# The cost of each guarded flow, counted by callgrind (Debian's valgrind) with its cache
# model, against the baselines in .ci/costs.txt: fails when a flow executes more than 3%
# more instructions than its baseline, or takes more than 3% more first-level
# instruction-cache misses. Counts, not time: the same binary and inputs count the same,
# whatever else the machine does, so a slower commit is caught before it lands.
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
# Why the misses too: a request walks through more code than the instruction cache holds
# (hyper, serde, the seal, the replay, each once), about one miss per 40 instructions, so
# on hardware its time follows the code it touches as much as the instructions it runs
# (the bench README, "The build profile"). A commit that spreads the path over more code
# can cost time without costing instructions. The cache is pinned (32 KiB, 8-way, 64-byte
# lines, as on this machine's CPUs) so the count does not depend on the CPU CI runs on;
# two runs of one binary agree to within 0.1%, and an ordinary change of the code moves
# the misses by about 1.5% (7e9a23f against c23b707: -1.4% to +0.4%).
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

# Instructions `costs FLOW RUNS` executes and the first-level instruction-cache misses
# they take, as "instructions misses"; fails with the flow's own error when it fails.
count() {
  local log
  log=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --cache-sim=yes \
    --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 "$bin" "$1" "$2" 2>&1) || {
    echo "costs: $1 failed:" >&2
    echo "$log" | grep -v '^==' >&2
    return 1
  }
  # Collected: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw.
  echo "$log" | sed -n 's/^==[0-9]*== Collected : //p' | awk '{ print $1, $4 }'
}

measured=$(mktemp)
trap 'rm -f "$measured"' EXIT
for flow in "${flows[@]}"; do
  # Assigned first: a failed count then stops the script (`read` from it would not).
  few_counts=$(count "$flow" "$few")
  many_counts=$(count "$flow" "$many")
  read -r a a_misses <<< "$few_counts"
  read -r b b_misses <<< "$many_counts"
  echo "$flow $(((b - a) / (many - few))) $(((b_misses - a_misses) / (many - few)))" >> "$measured"
done

python3 - "$measured" .ci/costs.txt "${COSTS_UPDATE:-}" <<'PY'
import sys
measured_path, baseline_path, update = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
# flow -> (instructions, instruction-cache misses), per flow.
measured = {flow: (int(ir), int(misses)) for flow, ir, misses in (line.split() for line in open(measured_path))}
header, baseline = [], {}
for line in open(baseline_path):
    if line.startswith("#") or not line.strip():
        header.append(line)
    else:
        # A line of an earlier guard has no misses: they read as unmeasured.
        flow, ir, *misses = line.split()
        baseline[flow] = (int(ir), int(misses[0]) if misses else None)
worse = []
print(f"{'flow':20} {'instructions':>12} {'now':>10} {'change':>7}   {'I1 misses':>9} {'now':>7} {'change':>7}")
for flow, now in measured.items():
    was = baseline.get(flow)
    cells = []
    for n, what in enumerate(("instructions", "misses")):
        before = was[n] if was else None
        change = f"{now[n] / before - 1:+.1%}" if before else "new"
        cells.append(f"{before or '-':>{12 if n == 0 else 9}} {now[n]:>{10 if n == 0 else 7}} {change:>7}")
        if before and now[n] > before * 1.03:
            worse.append(f"{flow} ({what})")
    print(f"{flow:20} {cells[0]}   {cells[1]}")
if update:
    baseline.update(measured)
    with open(baseline_path, "w") as out:
        out.writelines(header)
        out.writelines(f"{flow} {ir} {misses}\n" for flow, (ir, misses) in sorted(baseline.items()))
    print(f"costs: {baseline_path} now holds these costs; commit it saying what the change buys")
elif worse:
    print(f"costs: {', '.join(worse)} more than 3% over the baseline ({baseline_path}); make it "
          "cheaper, or raise the baseline deliberately (COSTS_UPDATE=1) in a commit that says what it buys",
          file=sys.stderr)
    sys.exit(1)
else:
    missing = sorted(flow for flow in measured if flow not in baseline or baseline[flow][1] is None)
    if missing:
        print(f"costs: no baseline for {', '.join(missing)} (COSTS_UPDATE=1 writes it)", file=sys.stderr)
        sys.exit(1)
    print("costs: every flow within 3% of its baseline, in instructions and in instruction-cache misses")
PY
