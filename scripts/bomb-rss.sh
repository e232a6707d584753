#!/usr/bin/env bash
# Peak RSS of the server under 8 concurrent decompression bombs (issue 21 item 1), with
# IMAGE_MEMORY_BUDGET_BYTES at its default and effectively off (16 GiB), side by side in one run:
# each a fresh mock ResNet server on loopback, 8 concurrent 6300x6300 16-bit PNGs of zeros
# (~300 KB each, 318 MB of pixels) to /cnn/search-image; prints the statuses and VmHWM.
#   scripts/bomb-rss.sh            (needs curl; the "off" run peaks at several GB)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bomb-rss.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
(cd "$ROOT" && go build -o "$TMP/tt-media-server" ./cmd/tt-media-server && go run ./scripts/bombpng "$TMP/bomb.png")

run() { # run BUDGET
	local port=$((20000 + RANDOM % 20000)) pid before peak i
	(cd "$TMP" && env -i PATH="$PATH" HOME="$HOME" SERVICE_HOST=127.0.0.1 SERVICE_PORT=$port \
		MODEL_RUNNER=tt-xla-resnet MOCK_DEVICES_COUNT=1 MOCK_WARMUP_SECONDS=0.05 MOCK_CNN_SECONDS=0.001 \
		IMAGE_MEMORY_BUDGET_BYTES="$1" ./tt-media-server >"$TMP/log.$1" 2>&1) &
	pid=$!
	for i in $(seq 100); do curl -sf "http://127.0.0.1:$port/tt-liveness" >/dev/null && break; sleep 0.1; done
	local spid
	spid=$(pgrep -P "$pid" | head -1) # the server, child of the subshell
	[ -n "$spid" ] || spid=$pid
	before=$(awk '/VmHWM/{print $2}' "/proc/$spid/status")
	local curls=()
	for i in $(seq 8); do
		curl -s -o /dev/null -w "%{http_code} " -H 'Authorization: Bearer your-secret-key' \
			-F file=@"$TMP/bomb.png" "http://127.0.0.1:$port/cnn/search-image" &
		curls+=($!)
	done
	wait "${curls[@]}"
	peak=$(awk '/VmHWM/{print $2}' "/proc/$spid/status")
	echo "<- statuses; IMAGE_MEMORY_BUDGET_BYTES=$1: peak RSS $((peak / 1024)) MiB (idle $((before / 1024)) MiB)"
	kill "$spid"
	wait "$pid" 2>/dev/null || true
}
run 536870912
run 17179869184
