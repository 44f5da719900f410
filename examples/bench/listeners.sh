#!/usr/bin/env bash
# Listen streams: the server's memory per open stream at 1k and 10k streams, and how long
# a list change takes to reach every listener (p50/p99/max), unloaded (changes paced) and
# back to back. A fresh release `everything` per size, on 127.0.0.1; listeners connect
# from 127.1.x.y, 16 to an address.
#
#   bash examples/bench/listeners.sh            # SIZES="1000 10000" CHANGES=50 PACE_MS=200
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-"1000 10000"}
CHANGES=${CHANGES:-50}
PACE_MS=${PACE_MS:-200}
BIN=${CARGO_TARGET_DIR:-target}/release
cargo build --quiet --release -p mcp-mrtr-examples --bin everything --bin listen_load
# 10k streams hold 10k sockets in each process.
ulimit -n "$(ulimit -Hn)"

for n in $SIZES; do
  for pace in "$PACE_MS" 0; do
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    RUST_LOG=warn MCP_MRTR_MAX_LISTENERS=$((n + 1000)) "$BIN/everything" --port "$PORT" &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
      (echo > "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
      sleep 0.05
    done
    echo "== $n streams, $CHANGES changes, ${pace} ms apart"
    "$BIN/listen_load" --port "$PORT" --pid "$SERVER" --listeners "$n" --changes "$CHANGES" --pace-ms "$pace"
    kill "$SERVER"
    wait "$SERVER" 2>/dev/null || true
  done
done
