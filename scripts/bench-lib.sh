# Shared helpers for scripts/bench-device-bound.sh, bench-startup.sh and bench.sh. Source it;
# it is not a benchmark by itself. Everything listens on 127.0.0.1; every process started
# through these helpers is recorded in BENCH_PIDS and stopped by PID on exit.
#
# Needs: ROOT (repo root), OUT (results directory). Sets BIN (binaries) and BENCH_PIDS.

BIN="$OUT/bin"
mkdir -p "$BIN"
BENCH_PIDS=()

bench_cleanup() {
  for p in "${BENCH_PIDS[@]:-}"; do
    [ -n "$p" ] || continue
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
}
trap bench_cleanup EXIT

# bench_build: builds tt-media-server (or copies $SERVER_BIN) and tt-media-bench (or $BENCH_BIN)
# into $BIN, once.
bench_build() {
  if [ ! -x "$BIN/tt-media-server" ]; then
    if [ -n "${SERVER_BIN:-}" ]; then cp "$SERVER_BIN" "$BIN/tt-media-server"
    else (cd "$ROOT" && go build -o "$BIN/tt-media-server" ./cmd/tt-media-server); fi
  fi
  if [ ! -x "$BIN/tt-media-bench" ]; then
    if [ -n "${BENCH_BIN:-}" ]; then cp "$BENCH_BIN" "$BIN/tt-media-bench"
    else (cd "$ROOT" && go build -o "$BIN/tt-media-bench" ./cmd/tt-media-bench); fi
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_server LOG PORT [VAR=value ...]: starts $BIN/tt-media-server on 127.0.0.1:PORT in the
# background with the given environment (on top of the caller's), sets SERVER_PID.
start_server() {
  local log=$1 port=$2; shift 2
  env SERVICE_HOST=127.0.0.1 SERVICE_PORT="$port" NEW_DEVICE_DELAY_SECONDS=0 LOG_LEVEL=WARNING "$@" \
    "$BIN/tt-media-server" >>"$log" 2>&1 &
  SERVER_PID=$!
  BENCH_PIDS+=("$SERVER_PID")
}

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# now_ms: wall clock in milliseconds.
now_ms() { date +%s%3N; }

# workers_ready PORT: prints "ready total" from /tt-liveness worker_info ("0 0" when unreachable
# or not ready yet: the route answers 503 until a worker is ready).
workers_ready() {
  curl -fsS --max-time 2 "http://127.0.0.1:$1/tt-liveness" 2>/dev/null |
    jq -r '[.worker_info[]] | "\(map(select(.is_ready)) | length) \(length)"' 2>/dev/null || echo "0 0"
}

# wait_all_ready PORT [TIMEOUT_S]: waits until every worker in /tt-liveness is ready.
wait_all_ready() {
  local port=$1 timeout=${2:-60} deadline r t
  deadline=$(( $(date +%s) + timeout ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    read -r r t < <(workers_ready "$port")
    if [ "$t" -gt 0 ] && [ "$r" = "$t" ]; then return 0; fi
    sleep 0.05
  done
  echo "server on port $port: workers not all ready after ${timeout}s; see $OUT" >&2
  return 1
}
