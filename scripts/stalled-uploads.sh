#!/usr/bin/env bash
# Issue 30 item 5 on the real binary: a mock ResNet server with MAX_CONNECTIONS=40 and
# BODY_STALL_TIMEOUT_SECONDS=${STALL:-3}, 45 uploads that stall after one body byte
# (scripts/stalluploads): prints /tt-liveness's answer while they stall and the uploads' answers.
#   scripts/stalled-uploads.sh [BINARY]     (default: builds ./cmd/tt-media-server)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/stalled-uploads.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
BIN=${1:-}
if [ -z "$BIN" ]; then
	(cd "$ROOT" && go build -o "$TMP/tt-media-server" ./cmd/tt-media-server)
	BIN=$TMP/tt-media-server
fi
(cd "$ROOT" && go build -o "$TMP/stalluploads" ./scripts/stalluploads)
port=$((20000 + RANDOM % 20000))
(cd "$TMP" && exec env -i PATH="$PATH" HOME="$HOME" SERVICE_HOST=127.0.0.1 SERVICE_PORT=$port \
	MODEL_RUNNER=tt-xla-resnet MOCK_DEVICES_COUNT=1 MOCK_WARMUP_SECONDS=0.05 MOCK_CNN_SECONDS=0.001 \
	MAX_CONNECTIONS=40 BODY_STALL_TIMEOUT_SECONDS="${STALL:-3}" "$BIN" >"$TMP/log" 2>&1) &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/tt-liveness" >/dev/null && break; sleep 0.1; done
echo "binary $BIN, MAX_CONNECTIONS=40, BODY_STALL_TIMEOUT_SECONDS=${STALL:-3}"
"$TMP/stalluploads" "127.0.0.1:$port" 45 40
kill "$pid"
wait "$pid" 2>/dev/null || true
