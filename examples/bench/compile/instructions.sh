#!/usr/bin/env bash
# Compile cost of a crate of N tools in instructions, not seconds: what rustc executes to
# check and to build the generated "ours" crate itself (gen.py, as run.sh uses it), the
# `#[tool]` and `tools!` expansion included (proc macros run inside rustc), counted by
# valgrind's cachegrind. Wall clock on a small shared machine varies by a fifth from run
# to run; the instruction count of the same rustc invocation is repeatable to well under
# a percent, so two checkouts can be compared per tool.
#
#   examples/bench/compile/instructions.sh                         # this checkout, N = 10 100
#   ROOT=/tmp/base SIZES="10 100" examples/bench/compile/instructions.sh   # another checkout
#
# ROOT is the checkout measured: its own gen.py writes the crate, which depends on
# ROOT/mcp-mrtr by path, and ROOT's Cargo.lock pins the dependencies. The dependencies
# are built once (build and check) into $OUT/target; then, for check and for build, only
# the bench package is cleaned and cargo is run again with a RUSTC_WRAPPER that runs the
# one compile_bench rustc invocation, with the arguments and environment cargo gives it,
# under `valgrind --tool=cachegrind --cache-sim=no`. CARGO_INCREMENTAL=0 throughout.
# Prints instructions per size for check and build, then per tool between the smallest
# and largest size. Valgrind slows rustc 20-50x: N = 100 takes minutes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "${ROOT:-$HERE/../../..}" && pwd)
SIZES=${SIZES:-"10 100"}
OUT=${OUT:-/tmp/mcp-mrtr-instructions/$(basename "$ROOT")-$(printf %s "$ROOT" | cksum | cut -d' ' -f1)}
GEN="$ROOT/examples/bench/compile/gen.py"
mkdir -p "$OUT"
export CARGO_TARGET_DIR="$OUT/target" CARGO_INCREMENTAL=0

# The wrapper cargo calls as `wrapper rustc args...`: valgrind for compile_bench when
# IREFS_LOG names where its report goes, the plain compiler otherwise (dependencies, and
# the bench crate while the dependencies are built, so fingerprints never differ).
WRAPPER="$OUT/rustc-wrapper.sh"
cat >"$WRAPPER" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
if [[ -n "${IREFS_LOG:-}" && " $* " == *" --crate-name compile_bench "* ]]; then
  printf '%q ' "$@" >"$IREFS_LOG.cmd"; echo >>"$IREFS_LOG.cmd"
  start=$(date +%s.%N)
  status=0
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    --log-file="$IREFS_LOG" "$@" || status=$?
  end=$(date +%s.%N)
  echo "$end - $start" | bc >"$IREFS_LOG.seconds"
  exit $status
fi
exec "$@"
EOF
chmod +x "$WRAPPER"
export RUSTC_WRAPPER="$WRAPPER"

irefs() { awk '/I *refs:/ {gsub(",", "", $NF); print $NF}' "$1"; }

declare -A count
for n in $SIZES; do
  crate="$OUT/ours-$n"
  python3 "$GEN" --tools "$n" --flavor ours --out "$crate"
  [[ -f "$crate/Cargo.lock" || ! -f "$ROOT/Cargo.lock" ]] || cp "$ROOT/Cargo.lock" "$crate/Cargo.lock"
  (cd "$crate" && cargo build --quiet && cargo check --quiet)
  for mode in check build; do
    log="$OUT/$mode-$n.cachegrind"
    rm -f "$log" "$log.cmd" "$log.seconds"
    (cd "$crate" && cargo clean --quiet -p compile-bench && IREFS_LOG="$log" cargo "$mode" --quiet)
    [[ -s "$log" ]] || { echo "no valgrind report for $mode N=$n (was compile_bench rebuilt?)" >&2; exit 1; }
    count[$mode-$n]=$(irefs "$log")
    echo "root=$ROOT tools=$n $mode instructions=${count[$mode-$n]} valgrind_seconds=$(cat "$log.seconds")"
  done
done

lo=$(printf '%s\n' $SIZES | sort -n | head -1) hi=$(printf '%s\n' $SIZES | sort -n | tail -1)
if [[ "$lo" != "$hi" ]]; then
  for mode in check build; do
    echo "root=$ROOT $mode per_tool=$(( (count[$mode-$hi] - count[$mode-$lo]) / (hi - lo) )) (N=$lo..$hi)"
  done
fi
