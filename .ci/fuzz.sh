#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that read client bytes (mcp-mrtr/fuzz: cargo-fuzz,
# libFuzzer, on the nightly toolchain). Builds every target once, then runs each for a fixed
# budget from a copy of its seed corpus, so the seeds in the repository are only read. Fails
# on the first target that crashes, times out or runs out of memory, printing the input.
#
#   bash .ci/fuzz.sh                  # every target, FUZZ_SECONDS (default 20) each
#   bash .ci/fuzz.sh envelope 60      # one target, 60 s
#
# A crash's input is kept in mcp-mrtr/fuzz/artifacts/<target>/ (git-ignored); replay it with
# `cargo +nightly fuzz run <target> <file>` from mcp-mrtr/, and make it a regression test.
set -euo pipefail
cd "$(dirname "$0")/../mcp-mrtr"

seconds="${2:-${FUZZ_SECONDS:-20}}"
# Per input: a parser that takes seconds on a few KiB is a finding too.
timeout_s="${FUZZ_TIMEOUT:-10}"
rss_mb="${FUZZ_RSS_MB:-2048}"
# Pinned: the fuzz build's flags are cargo-fuzz's, so a new release could change what CI builds.
cargo_fuzz_version="${CARGO_FUZZ_VERSION:-0.13.2}"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --version "$cargo_fuzz_version"
fi

started=$SECONDS
# Once for every target: each `run` below then finds its binary built.
cargo +nightly fuzz build
built=$((SECONDS - started))

if [ $# -ge 1 ]; then
  targets=("$1")
else
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for target in "${targets[@]}"; do
  if [ ! -d "fuzz/seeds/$target" ]; then
    echo "fuzz: no seed corpus at mcp-mrtr/fuzz/seeds/$target" >&2
    exit 1
  fi
  # New corpus entries go to the first directory: a copy, never the seeds.
  mkdir -p "$work/corpus/$target" "$work/artifacts/$target"
  cp "fuzz/seeds/$target"/* "$work/corpus/$target/"
  # Every input that once failed this target runs again first, beside the seeds.
  if [ -d "fuzz/regressions/$target" ]; then
    cp "fuzz/regressions/$target"/* "$work/corpus/$target/"
  fi
  log="$work/$target.log"
  echo "fuzz: $target for ${seconds}s"
  if cargo +nightly fuzz run "$target" "$work/corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout="$timeout_s" \
    -artifact_prefix="$work/artifacts/$target/" -print_final_stats=1 >"$log" 2>&1; then
    # libFuzzer's last status line (cov: edges covered, ft: features, corp: corpus size)
    # and its final counters.
    status="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 | sed -E 's/^#[0-9]+[[:space:]]+DONE[[:space:]]+//' || true)"
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
    echo "fuzz: $target ok: ${runs:-?} runs (${rate:-?}/s), ${status:-no status line}"
    continue
  fi
  echo "fuzz: $target FAILED; the end of its log, without stack frames:" >&2
  grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^[[:space:]]+#[0-9]+ 0x|^[[:space:]]+[0-9]+: |^[[:space:]]+at ' "$log" \
    | tail -n 40 >&2
  mkdir -p "fuzz/artifacts/$target"
  found=0
  for artifact in "$work/artifacts/$target"/*; do
    [ -f "$artifact" ] || continue
    found=1
    kept="fuzz/artifacts/$target/$(basename "$artifact")"
    cp "$artifact" "$kept"
    echo "fuzz: the input that failed: mcp-mrtr/$kept ($(wc -c <"$artifact") bytes)" >&2
    echo "fuzz: as hex:" >&2
    od -An -tx1 -v "$artifact" | tr -d ' \n' | fold -w 96 >&2
    echo >&2
    echo "fuzz: as base64:" >&2
    base64 -w 96 "$artifact" >&2
  done
  if [ "$found" = 0 ]; then
    echo "fuzz: $target failed without leaving an input (see the log above)" >&2
  fi
  exit 1
done

echo "fuzz: ${#targets[@]} target(s), ${seconds}s each; built in ${built}s, $((SECONDS - started))s in all"
