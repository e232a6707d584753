#!/usr/bin/env bash
# Server-path benchmark (P1): tt-media-server with zero-latency simulated devices versus a bare
# net/http handler answering the very same bytes, driven by the same tt-media-bench client in
# the same run (alternating rounds). Prints one table row per workload and the ratio
# server req/s ÷ bare req/s (target ≥ 0.7), and — less sensitive to the other processes of a
# shared box — the CPU time each process spends per answered request (user + system of the
# whole process over CPU_REQUESTS requests at the same concurrency, no warm-up in the count) and
# their ratio bare CPU/request ÷ server CPU/request: the server's efficiency against bare
# net/http. The box's load average is printed beside each row.
#
#   scripts/bench-server-path.sh                      # all workloads, c=8, 5 s per round
#   KINDS="image cnn" CONCURRENCY=4 DURATION=10s scripts/bench-server-path.sh
#   PROFILE=1 KINDS=image scripts/bench-server-path.sh   # also a 10 s CPU profile of the server
#
# Everything listens on 127.0.0.1 and is stopped by PID on exit. Results go to $OUT
# (default: a new directory under ${TMPDIR:-/tmp}).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
KINDS=${KINDS:-"liveness image cnn audio"}
CONCURRENCY=${CONCURRENCY:-8}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
ROUNDS=${ROUNDS:-2}
CPU_REQUESTS=${CPU_REQUESTS:-20000} # per process for the CPU-per-request figures (0: skip them)
PROFILE=${PROFILE:-0}
PROFILE_SECONDS=${PROFILE_SECONDS:-10}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-server-path.XXXXXX")}
BIN="$OUT/bin"
mkdir -p "$BIN"

echo "building into $BIN ..." >&2
# SERVER_BIN=path benchmarks an already built server instead of building ./cmd/tt-media-server.
if [ -n "${SERVER_BIN:-}" ]; then cp "$SERVER_BIN" "$BIN/tt-media-server"; else (cd "$ROOT" && go build -o "$BIN/tt-media-server" ./cmd/tt-media-server); fi
# BENCH_BIN=path uses an already built tt-media-bench likewise.
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

runner_for() {
  case "$1" in
    image|liveness) echo tt-sdxl-trace ;;
    audio) echo tt-whisper ;;
    cnn) echo tt-xla-resnet ;;
    *) echo "unknown kind $1" >&2; return 1 ;;
  esac
}

# start_server BINARY KIND PORT [extra env...]: starts it in the background, sets SERVER_PID.
start_server() {
  local bin=$1 kind=$2 port=$3; shift 3
  env MODEL_RUNNER="$(runner_for "$kind")" SERVICE_HOST=127.0.0.1 SERVICE_PORT="$port" \
    MOCK_STEP_SECONDS=0 MOCK_AUDIO_SECONDS_PER_SECOND=0 MOCK_CNN_SECONDS=0 MOCK_WARMUP_SECONDS=0 \
    NEW_DEVICE_DELAY_SECONDS=0 LOG_LEVEL=WARNING "$@" \
    "$bin" >>"$OUT/server-$kind.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
}

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

wait_live() {
  for _ in $(seq 1 200); do
    if curl -fsS "http://127.0.0.1:$1/tt-liveness" >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  echo "server on port $1 did not become live; see $OUT" >&2
  return 1
}

# cpu_per_request PID PORT NAME: warms the process up, then sends CPU_REQUESTS requests at
# CONCURRENCY and prints the process's CPU time (user + system, all threads) per request in µs.
cpu_per_request() {
  local pid=$1 port=$2 name=$3 t0 t1 n
  "$BIN/tt-media-bench" run --url "http://127.0.0.1:$port" --kind "$kind" --concurrency "$CONCURRENCY" \
    --requests 2000 >/dev/null 2>&1
  t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  "$BIN/tt-media-bench" run --url "http://127.0.0.1:$port" --kind "$kind" --concurrency "$CONCURRENCY" \
    --requests "$CPU_REQUESTS" --out "$OUT/cpu-$kind-$name" >"$OUT/cpu-$kind-$name.txt" 2>&1
  t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  n=$(awk -F'|' '/^[|] c=/ {gsub(/ /, "", $6); print $6; exit}' "$OUT/cpu-$kind-$name.txt")
  awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.1f", t / hz / n * 1e6; else print 0 }'
}

SUMMARY="$OUT/summary.md"
{
  echo "| workload | load | server req/s | bare req/s | ratio | server CPU µs/req | bare CPU µs/req | CPU ratio (bare/server) | load avg |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
} >"$SUMMARY"

for kind in $KINDS; do
  port=$(free_port)
  start_server "$BIN/tt-media-server" "$kind" "$port"
  server_pid=$SERVER_PID
  wait_live "$port"

  bport=$(free_port)
  "$BIN/tt-media-bench" bare --listen "127.0.0.1:$bport" --url "http://127.0.0.1:$port" --kind "$kind" \
    >"$OUT/bare-$kind.log" 2>&1 &
  bare_pid=$!
  PIDS+=("$bare_pid")
  for _ in $(seq 1 200); do grep -q "bare: serving" "$OUT/bare-$kind.log" && break; sleep 0.05; done
  grep "bare: serving" "$OUT/bare-$kind.log" >&2

  "$BIN/tt-media-bench" compare --url "http://127.0.0.1:$port" --baseline-url "http://127.0.0.1:$bport" \
    --kind "$kind" --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" \
    --rounds "$ROUNDS" --out "$OUT/$kind" | tee "$OUT/compare-$kind.txt"
  line=$(grep '^server ' "$OUT/compare-$kind.txt")
  srv=$(echo "$line" | awk '{print $2}'); bare=$(echo "$line" | awk '{print $5}'); ratio=$(echo "$line" | awk '{print $8}')
  scpu=- bcpu=- cratio=-
  if [ "$CPU_REQUESTS" -gt 0 ]; then
    scpu=$(cpu_per_request "$server_pid" "$port" server)
    bcpu=$(cpu_per_request "$bare_pid" "$bport" bare)
    cratio=$(awk -v b="$bcpu" -v s="$scpu" 'BEGIN { if (s > 0) printf "%.3f", b / s; else print "-" }')
  fi
  echo "| $kind | c=$CONCURRENCY | $srv | $bare | $ratio | $scpu | $bcpu | $cratio | $(cut -d' ' -f1-3 /proc/loadavg) |" >>"$SUMMARY"

  stop_pid "$bare_pid"
  stop_pid "$server_pid"

  if [ "$PROFILE" = 1 ]; then
    port=$(free_port); pport=$(free_port)
    start_server "$BIN/tt-media-server" "$kind" "$port" PPROF_ADDR="127.0.0.1:$pport"
    prof_pid=$SERVER_PID
    wait_live "$port"
    "$BIN/tt-media-bench" run --url "http://127.0.0.1:$port" --kind "$kind" --concurrency "$CONCURRENCY" \
      --duration "$((PROFILE_SECONDS + 2))s" >"$OUT/profile-load-$kind.md" &
    load_pid=$!
    PIDS+=("$load_pid")
    sleep 1
    curl -fsS -o "$OUT/cpu-$kind.pprof" "http://127.0.0.1:$pport/debug/pprof/profile?seconds=$PROFILE_SECONDS"
    wait "$load_pid" || true
    stop_pid "$prof_pid"
    (cd "$ROOT" && go tool pprof -top -nodecount=40 "$BIN/tt-media-server" "$OUT/cpu-$kind.pprof") >"$OUT/cpu-$kind.top.txt" 2>&1 || true
    (cd "$ROOT" && go tool pprof -top -cum -nodecount=60 "$BIN/tt-media-server" "$OUT/cpu-$kind.pprof") >"$OUT/cpu-$kind.cum.txt" 2>&1 || true
    echo "CPU profile: $OUT/cpu-$kind.pprof (top: $OUT/cpu-$kind.top.txt)" >&2
  fi
done

echo
echo "Server-path benchmark (zero-latency sim vs bare net/http, same client; target ratio >= 0.7; box: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
cat "$SUMMARY"
echo
echo "results: $OUT"
