#!/usr/bin/env bash
# Go tt-media-server (zero-latency simulated devices) under the loads the Python reference was
# measured with (reference-python-server.md §8.4: mock inference time 0, 4 workers,
# LOG_LEVEL=WARNING), checked against bench/targets/media.json [tt-sdxl-trace / sim].
#
#   scripts/bench-sim-reference.sh          # exit status 1 if any target fails
#
# Everything listens on 127.0.0.1 and is stopped by PID on exit. Results go to $OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-sim-reference.XXXXXX")}
BIN="$OUT/bin"
mkdir -p "$BIN"
# SERVER_BIN=path benchmarks an already built server instead of building ./cmd/tt-media-server.
if [ -n "${SERVER_BIN:-}" ]; then cp "$SERVER_BIN" "$BIN/tt-media-server"; else (cd "$ROOT" && go build -o "$BIN/tt-media-server" ./cmd/tt-media-server); fi
(cd "$ROOT" && go build -o "$BIN/tt-media-bench" ./cmd/tt-media-bench)

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
env MODEL_RUNNER=tt-sdxl-trace MOCK_DEVICES_COUNT=4 SERVICE_HOST=127.0.0.1 SERVICE_PORT="$PORT" \
  MOCK_STEP_SECONDS=0 MOCK_WARMUP_SECONDS=0 NEW_DEVICE_DELAY_SECONDS=0 LOG_LEVEL=WARNING \
  "$BIN/tt-media-server" >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do curl -fsS "http://127.0.0.1:$PORT/tt-liveness" >/dev/null 2>&1 && break; sleep 0.05; done

URL="http://127.0.0.1:$PORT"
T=(--targets "$ROOT/bench/targets/media.json" --model tt-sdxl-trace --device sim)
status=0
"$BIN/tt-media-bench" run --url "$URL" --kind image --concurrency 1 --requests 50 --warmup-requests 5 --out "$OUT/runs" >/dev/null
"$BIN/tt-media-bench" run --url "$URL" --kind image --concurrency 8 --requests 200 --warmup-requests 8 --out "$OUT/runs" >/dev/null
"$BIN/tt-media-bench" run --url "$URL" --kind image --images 4 --concurrency 4 --requests 40 --warmup-requests 4 --out "$OUT/runs" >/dev/null
"$BIN/tt-media-bench" run --url "$URL" --kind liveness --concurrency 16 --requests 2000 --warmup-requests 100 --out "$OUT/runs" >/dev/null
"$BIN/tt-media-bench" report "$OUT"/runs/bench_*.json
"$BIN/tt-media-bench" check "${T[@]}" "$OUT"/runs/bench_*.json >"$OUT/checks.md" || status=$?
cat "$OUT/checks.md"
echo "results: $OUT"
exit "$status"
