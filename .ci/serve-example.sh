# Sourced by the CI stages that need an example server over HTTP: builds the example named
# by $1, serves it on a free port of 127.0.0.1, stops it when the stage exits, and waits (at
# most 15 s) until it answers server/discover. Sets URL and SERVER_PID.
cargo build --quiet -p mcp-mrtr-examples --bin "$1"

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/mcp"
RUST_LOG=warn "${CARGO_TARGET_DIR:-target}/debug/$1" --port "$PORT" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true' EXIT

python3 "$(dirname "${BASH_SOURCE[0]}")/await-discover.py" "$URL" "$1" 15
