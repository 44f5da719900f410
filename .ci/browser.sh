#!/usr/bin/env bash
# MCP Apps in a real browser: the deploy example's apps (a review app that answers an
# elicitation, SEP-3118, and a status app with a tool result, SEP-1865) rendered by a
# minimal host in headless Chromium, driven by Playwright (examples/apps-host/test.mjs).
# Screenshots go to ${CARGO_TARGET_DIR:-target}/apps-host.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's Chromium; Playwright never downloads a browser of its own.
if [ ! -x /usr/bin/chromium ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null; }
fi
npm ci --prefix examples/apps-host --no-audit --no-fund --loglevel=error >/dev/null
# The server, on a free port of 127.0.0.1 (sets URL and SERVER_PID).
source .ci/serve-example.sh deploy

OUT="${CARGO_TARGET_DIR:-target}/apps-host" timeout 150 node examples/apps-host/test.mjs "$URL"
