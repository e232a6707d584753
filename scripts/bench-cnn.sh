#!/usr/bin/env bash
# CNN cross-request batching benchmark (issue 9): requests/s on POST /cnn/search-image with 4
# simulated chips (MOCK_DEVICES_COUNT=4, one worker each) at MAX_BATCH_SIZE=16 with
# MAX_BATCH_DELAY_MS=5 versus MAX_BATCH_SIZE=1, both driven by tt-media-bench with the same
# closed-loop concurrency. Each latency in CNN_SECONDS (MOCK_CNN_SECONDS: device time per image
# of a full batch of 16; a device batch, padded or not, costs 16× that) gets ROUNDS rounds; a
# round starts the server at batch 16, measures, stops it, then the same at batch 1. Prints the
# median req/s of both and their ratio.
#
#   scripts/bench-cnn.sh                                # process isolation, c=64, 10 s per run
#   CNN_SECONDS=0.005 ROUNDS=3 scripts/bench-cnn.sh
#   ISOLATION=inprocess scripts/bench-cnn.sh            # the Go twin of the simulator instead
#
# 0.0002128 s is the simulator program's own latency (3.404 ms per batch of 16 = 4,700 img/s per
# chip, tt-metal's n150 figure); 0.005 is MOCK_CNN_SECONDS's default. The image is
# tt-media-bench's generated 224² JPEG (or FILE=...). Everything listens on 127.0.0.1 and is
# stopped by PID on exit. Results go to $OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CNN_SECONDS=${CNN_SECONDS:-"0.0002128 0.005"}
CONCURRENCY=${CONCURRENCY:-64}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-2}
DEVICES=${DEVICES:-4}
ISOLATION=${ISOLATION:-process}
DELAY_MS=${DELAY_MS:-5}
FILE=${FILE:-}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-cnn.XXXXXX")}
BIN="$OUT/bin"
mkdir -p "$BIN"

echo "building into $BIN ..." >&2
# SERVER_BIN / BENCH_BIN: use already built binaries instead of building them.
if [ -n "${SERVER_BIN:-}" ]; then cp "$SERVER_BIN" "$BIN/tt-media-server"; else (cd "$ROOT" && go build -o "$BIN/tt-media-server" ./cmd/tt-media-server); fi
if [ -n "${BENCH_BIN:-}" ]; then cp "$BENCH_BIN" "$BIN/tt-media-bench"; else (cd "$ROOT" && go build -o "$BIN/tt-media-bench" ./cmd/tt-media-bench); fi

PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_live() { # the liveness route answers 200 once a worker is warm
	for _ in $(seq 1 600); do
		if curl -fsS "http://127.0.0.1:$1/tt-liveness" >/dev/null 2>&1; then return 0; fi
		sleep 0.05
	done
	echo "server on port $1 did not become live; see $OUT" >&2
	return 1
}

# wait_workers PORT N: until N workers report ready in /tt-liveness.
wait_workers() {
	for _ in $(seq 1 600); do
		n=$(curl -fsS "http://127.0.0.1:$1/tt-liveness" 2>/dev/null | python3 -c '
import json, sys
info = json.load(sys.stdin).get("worker_info", {})
print(sum(1 for w in info.values() if str(w.get("is_ready", w.get("state", ""))).lower() in ("true", "ready")))' 2>/dev/null || echo 0)
		[ "$n" -ge "$2" ] && return 0
		sleep 0.05
	done
	echo "only $n of $2 workers ready on port $1; measuring anyway" >&2
}

# run_one LATENCY BATCH ROUND: one server, one measured run; appends "latency batch req/s device_ms" to rows.txt.
run_one() {
	local lat=$1 batch=$2 round=$3 port pid delay=0 label
	[ "$batch" -gt 1 ] && delay=$DELAY_MS
	label="cnn-s$lat-b$batch-r$round"
	port=$(free_port)
	env MODEL_RUNNER=tt-xla-resnet SERVICE_HOST=127.0.0.1 SERVICE_PORT="$port" \
		MOCK_DEVICES_COUNT="$DEVICES" WORKER_ISOLATION="$ISOLATION" \
		MAX_BATCH_SIZE="$batch" MAX_BATCH_DELAY_MS="$delay" MAX_QUEUE_SIZE=$((4 * CONCURRENCY)) \
		MOCK_CNN_SECONDS="$lat" MOCK_WARMUP_SECONDS=0 LOG_LEVEL=WARNING \
		"$BIN/tt-media-server" >>"$OUT/server-$label.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	wait_live "$port"
	wait_workers "$port" "$DEVICES"
	"$BIN/tt-media-bench" run --url "http://127.0.0.1:$port" --kind cnn ${FILE:+--file "$FILE"} \
		--concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" --server-metrics \
		--label "$label" --out "$OUT/$label" >"$OUT/$label.md"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	python3 - "$OUT/$label" "$lat" "$batch" >>"$OUT/rows.txt" <<'PY'
import glob, json, sys
d, lat, batch = sys.argv[1:]
runs = [json.load(open(p)) for p in glob.glob(d + "/*.json")]
runs = [r for r in runs if "requests_per_s" in r]
if not runs:
    sys.exit("no run JSON in " + d)
r = runs[0]
srv = r.get("server") or {}
print(lat, batch, r["requests_per_s"], srv.get("device_mean_ms", "nan"), r.get("failed", 0))
PY
	tail -n 1 "$OUT/rows.txt" >&2
}

echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt" >&2
for lat in $CNN_SECONDS; do
	for r in $(seq 1 "$ROUNDS"); do
		echo "MOCK_CNN_SECONDS=$lat round $r/$ROUNDS ..." >&2
		run_one "$lat" 16 "$r"
		run_one "$lat" 1 "$r"
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt" >&2

python3 - "$OUT/rows.txt" "$CONCURRENCY" "$DEVICES" "$ISOLATION" "$ROUNDS" <<'PY'
import statistics as st, sys
path, conc, devices, isolation, rounds = sys.argv[1:]
rows = {}
for line in open(path):
    lat, batch, rps, dev, failed = line.split()
    rows.setdefault(lat, {}).setdefault(int(batch), []).append((float(rps), float(dev), int(failed)))
print(f"\nCNN route, {devices} simulated chips ({isolation}), c={conc}, median of {rounds} round(s)\n")
print("| MOCK_CNN_SECONDS | device ms / batch of 16 | batch 16 req/s | batch 1 req/s | ratio | device ms per job (b16 / b1) | failed |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for lat, b in rows.items():
    r16, r1 = st.median(x[0] for x in b[16]), st.median(x[0] for x in b[1])
    d16, d1 = st.median(x[1] for x in b[16]), st.median(x[1] for x in b[1])
    failed = sum(x[2] for v in b.values() for x in v)
    print(f"| {lat} | {16 * float(lat) * 1e3:.2f} | {r16:.1f} | {r1:.1f} | {r16 / r1:.2f} | {d16:.1f} / {d1:.1f} | {failed} |")
PY
echo "results: $OUT"
