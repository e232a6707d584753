#!/usr/bin/env bash
# Memory and start-up benchmark (P5): tt-media-server with WORKERS simulated workers
# (MOCK_DEVICES_COUNT=WORKERS, DEVICE_IDS unset, so one worker per simulated chip), once with
# in-process runners and once with WORKER_ISOLATION=process. For each it reports
#   * time to first ready: launch until GET /health answers 200 (at least one worker ready);
#   * time to all ready: launch until every worker in /tt-liveness worker_info is_ready;
#   * RSS (VmRSS from /proc/<pid>/status) of the server process once all workers are ready,
#     the sum over its descendants (the device-worker children in process mode), the total,
#     the server's peak (VmHWM), and the total PSS (smaps_rollup), which counts shared pages
#     once rather than once per process.
#
#   scripts/bench-startup.sh                       # 32 workers, MOCK_WARMUP_SECONDS=0.05, sdxl
#   WORKERS=8 MODES=process MODEL_RUNNER=tt-whisper scripts/bench-startup.sh
#
# The times are wall clock from just before exec, polled every ~20 ms (curl), so they carry
# ~20-30 ms of polling granularity. Output: a Markdown table (also $OUT/summary.md) and one line
# per mode "P5 mode=… first_ready_ms=… all_ready_ms=… rss_server_mb=… rss_children_mb=… rss_total_mb=…".
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-32}
MODES=${MODES:-"inprocess process"}
MODEL_RUNNER=${MODEL_RUNNER:-tt-sdxl-trace}
WARMUP_SECONDS=${WARMUP_SECONDS:-0.05}
SETTLE=${SETTLE:-1}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-startup.XXXXXX")}
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
unset DEVICE_IDS # one worker per simulated chip

echo "building into $BIN ..." >&2
bench_build

# rss_kb PID [FIELD]: VmRSS (or FIELD) of one process in kB; 0 if it is gone.
rss_kb() {
  awk -v f="${2:-VmRSS}:" '$1 == f {print $2; found=1} END {if (!found) print 0}' "/proc/$1/status" 2>/dev/null || echo 0
}

# pss_kb PID: proportional set size in kB (shared pages, such as the binary's text that every
# child maps, split between the processes sharing them); 0 if unreadable.
pss_kb() {
  awk '$1 == "Pss:" {print $2; found=1} END {if (!found) print 0}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0
}

# descendants PID: every descendant PID (children, grandchildren, ...), from /proc/*/stat.
descendants() {
  local kids k
  kids=$(awk -v p="$1" '{ # field 4 is the ppid; the comm field (2) may hold spaces, so
      # find the ")" that ends it and count from there
      s = $0; i = index(s, ") "); split(substr(s, i + 2), a, " "); if (a[2] == p) print $1 }' \
    /proc/[0-9]*/stat 2>/dev/null || true)
  for k in $kids; do echo "$k"; descendants "$k"; done
}

SUMMARY="$OUT/summary.md"
{
  echo "Memory and start-up (P5): $WORKERS simulated workers ($MODEL_RUNNER, MOCK_WARMUP_SECONDS=$WARMUP_SECONDS)"
  echo
  echo "| isolation | first ready (/health 200) | all $WORKERS ready | RSS server | RSS children (n) | RSS total | PSS total | server peak (VmHWM) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
} >"$SUMMARY"
LINES=()

for mode in $MODES; do
  case "$mode" in
    inprocess) iso=() ;;
    process) iso=(WORKER_ISOLATION=process) ;;
    *) echo "unknown mode $mode (want inprocess or process)" >&2; exit 2 ;;
  esac
  port=$(free_port)
  t0=$(now_ms)
  start_server "$OUT/server-$mode.log" "$port" "${iso[@]}" \
    MODEL_RUNNER="$MODEL_RUNNER" MOCK_DEVICES_COUNT="$WORKERS" MOCK_WARMUP_SECONDS="$WARMUP_SECONDS"
  pid=$SERVER_PID
  first="" all=""
  deadline=$(( $(date +%s) + 120 ))
  while [ -z "$all" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    kill -0 "$pid" 2>/dev/null || { echo "server ($mode) exited; see $OUT/server-$mode.log" >&2; exit 1; }
    if [ -z "$first" ] && curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null; then
      first=$(( $(now_ms) - t0 ))
    fi
    if [ -n "$first" ]; then
      read -r r t < <(workers_ready "$port")
      if [ "$t" -gt 0 ] && [ "$r" = "$t" ]; then
        all=$(( $(now_ms) - t0 ))
        [ "$t" = "$WORKERS" ] || echo "warning: /tt-liveness lists $t workers, expected $WORKERS" >&2
      fi
    fi
    [ -n "$all" ] || sleep 0.02
  done
  [ -n "$all" ] || { echo "server ($mode): not all workers ready after 120 s" >&2; exit 1; }
  sleep "$SETTLE" # let warm-up garbage be collected and RSS settle before reading it
  srv=$(rss_kb "$pid")
  hwm=$(rss_kb "$pid" VmHWM)
  pss=$(pss_kb "$pid")
  kids=0 nkids=0
  for k in $(descendants "$pid"); do
    kids=$(( kids + $(rss_kb "$k") )); pss=$(( pss + $(pss_kb "$k") )); nkids=$(( nkids + 1 ))
  done
  stop_pid "$pid"
  mb() { python3 -c "print(f'{$1/1024:.1f}')"; }
  echo "| $mode | $first ms | $all ms | $(mb "$srv") MB | $(mb "$kids") MB ($nkids) | $(mb $(( srv + kids ))) MB | $(mb "$pss") MB | $(mb "$hwm") MB |" >>"$SUMMARY"
  LINES+=("P5 mode=$mode workers=$WORKERS first_ready_ms=$first all_ready_ms=$all rss_server_mb=$(mb "$srv") rss_children_mb=$(mb "$kids") children=$nkids rss_total_mb=$(mb $(( srv + kids ))) pss_total_mb=$(mb "$pss") server_hwm_mb=$(mb "$hwm")")
done

cat "$SUMMARY"
echo
printf '%s\n' "${LINES[@]}"
echo "results: $OUT"
