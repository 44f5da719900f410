#!/usr/bin/env bash
# Compile time of a crate of N tools, ours against rmcp 3.11 (outside the workspace; rmcp
# is a comparison, never a dependency): a clean build and a clean check of the crate
# itself (its dependencies built once beforehand, so what is timed is what the tools
# cost), and an incremental check after changing one handler's body, as an editor does.
#
#   examples/bench/compile/run.sh              # N = 10 100 300, REPS=3, medians
#   SIZES="10 100" REPS=5 FLAVORS=ours examples/bench/compile/run.sh
#
# Prints one line per flavor and size, in seconds, and the cost per tool between the
# smallest and largest size. Builds go to $OUT (default /tmp/mcp-mrtr-compile).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SIZES=${SIZES:-"10 100 300"}
REPS=${REPS:-3}
FLAVORS=${FLAVORS:-"ours rmcp"}
OUT=${OUT:-/tmp/mcp-mrtr-compile}
mkdir -p "$OUT"

seconds() { local start end; start=$(date +%s.%N); "$@" >/dev/null 2>&1; end=$(date +%s.%N); echo "$end - $start" | bc; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for flavor in $FLAVORS; do
  for n in $SIZES; do
    crate="$OUT/$flavor-$n"
    python3 "$HERE/gen.py" --tools "$n" --flavor "$flavor" --out "$crate"
    export CARGO_TARGET_DIR="$OUT/target-$flavor"
    (cd "$crate" && cargo build --quiet && cargo check --quiet)
    builds=() checks=() incrementals=()
    for rep in $(seq "$REPS"); do
      (cd "$crate" && cargo clean --quiet -p compile-bench)
      builds+=("$(cd "$crate" && seconds cargo build)")
      (cd "$crate" && cargo clean --quiet -p compile-bench)
      checks+=("$(cd "$crate" && seconds cargo check)")
      sed -i "s|^\( *\)\(let _edit = [0-9]*; \)\?// EDIT-ME|\1let _edit = $rep; // EDIT-ME|" "$crate/src/main.rs"
      incrementals+=("$(cd "$crate" && seconds cargo check)")
    done
    echo "$flavor tools=$n clean_build=$(median "${builds[@]}")s clean_check=$(median "${checks[@]}")s incremental_check=$(median "${incrementals[@]}")s"
  done
done
