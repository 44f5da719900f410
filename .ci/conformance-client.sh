#!/usr/bin/env bash
# The crate's client (`mcp_mrtr::client`, driven by examples/src/bin/conformance_client.rs)
# against the official conformance suite's client scenarios, for 2026-07-28 and 2025-11-25:
# each scenario run on its own, so a warning fails it as a failure does. The OAuth scenarios
# (`auth/*`) exercise authorization flows the client does not implement and are not run;
# every other scenario a revision requires must be in its list below, or this fails.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash .ci/install-conformance.sh)"
cargo build --quiet -p mcp-mrtr-examples --bin conformance_client
bin="$(pwd)/${CARGO_TARGET_DIR:-target}/debug/conformance_client"
[ -x "$bin" ] || bin="${CARGO_TARGET_DIR:-target}/debug/conformance_client"

# The scenarios each revision requires (OAuth aside), and the ones it runs unscored.
declare -A required_of=(
  [2026-07-28]="tools_call request-metadata sep-2322-client-request-state http-standard-headers http-custom-headers http-invalid-tool-headers json-schema-ref-no-deref"
  [2025-11-25]="initialize tools_call elicitation-sep1034-client-defaults sse-retry"
)
declare -A unscored_of=(
  [2026-07-28]="json-schema-2020-12-preservation"
  [2025-11-25]="json-schema-2020-12-preservation"
)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
for revision in 2026-07-28 2025-11-25; do
  read -r -a ours <<< "${required_of[$revision]}"
  read -r -a extra <<< "${unscored_of[$revision]}"
  required=$("$NODE" "$CLI" list --client --requirements "$revision" \
    | sed -n '/^Client scenarios/,/^$/p' | sed -n 's/^  - //p' | grep -v '^auth/' | sort)
  if [ "$required" != "$(printf '%s\n' "${ours[@]}" | sort)" ]; then
    echo "conformance-client: $revision requires other client scenarios than this script runs:" >&2
    diff <(echo "$required") <(printf '%s\n' "${ours[@]}" | sort) >&2 || true
    exit 1
  fi
  for scenario in "${ours[@]}" "${extra[@]}"; do
    log="$out/$revision-$scenario.log"
    if timeout 120 "$NODE" "$CLI" client --command "$bin" --scenario "$scenario" --spec-version "$revision" > "$log" 2>&1; then
      echo "client conformance $revision: $scenario passed"
    else
      echo "client conformance $revision: $scenario FAILED" >&2
      tail -40 "$log" >&2
      failed=1
    fi
  done
done
exit "$failed"
