#!/usr/bin/env bash
# All of issue 12's benchmarks in one go, with one table of ratios and figures at the end:
#   P1  server path:   scripts/bench-server-path.sh   server req/s ÷ bare net/http req/s (≥ 0.7)
#   P2  device bound:  scripts/bench-device-bound.sh  achieved/(N/L) over the steady window
#                      (≥ 0.99), p99 queue wait vs ceil(Q/N)·L + 10 ms, 429s; for each kind in
#                      P2_KINDS (default "image cnn"), each at an L chosen from its measured host
#                      CPU per request (host work ≤ 1% of L), so P2 measures the scheduler
#   P5  start-up:      scripts/bench-startup.sh       time to first / all ready, RSS, 32 workers
#   --media (optional) scripts/bench-cnn.sh (batch 16 vs 1) and scripts/bench-audio.sh (Go vs
#                      ffmpeg / torch); their tables are printed after the main one.
#
#   scripts/bench.sh                 # P1 + P2 + P5, 10–15 minutes (P2 image: L ≈ 5–10 s)
#   scripts/bench.sh --media         # and the CNN batching and audio front-end benchmarks
#   QUICK=1 scripts/bench.sh         # shorter runs (P1 1 round of 2 s, P2 5 jobs per worker), a smoke test
#
# The binaries are built once and shared. Each part's own variables (KINDS, CONCURRENCY, N,
# STEPS, STEP_SECONDS, Q, WORKERS, ...) pass through. Results go to $OUT/{p1,p2-*,p5,...}.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MEDIA=0
for a in "$@"; do
  case "$a" in
    --media) MEDIA=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument $a (want --media)" >&2; exit 2 ;;
  esac
done
P2_KINDS=${P2_KINDS:-"image cnn"}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX")}
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

echo "building into $BIN ..." >&2
bench_build
export SERVER_BIN="$BIN/tt-media-server" BENCH_BIN="$BIN/tt-media-bench"
if [ "${QUICK:-0}" = 1 ]; then
  P1_ENV=(ROUNDS=1 DURATION=2s WARMUP=1s)
  P2_ENV=(JOBS_PER_WORKER=5)
else
  P1_ENV=() P2_ENV=()
fi

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
ROWS=()
row() { ROWS+=("| $1 | $2 | $3 | $4 | $5 |"); }
# field NAME LINE: the value of NAME=value in a "P2 a=1 b=2" line.
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }

echo "== P1 server path ==" >&2
env "${P1_ENV[@]}" OUT="$OUT/p1" "$ROOT/scripts/bench-server-path.sh" >"$OUT/p1.txt" 2>"$OUT/p1.err" ||
  { cat "$OUT/p1.err" >&2; echo "P1 failed; see $OUT/p1.err" >&2; exit 1; }
while IFS='|' read -r _ kind load srv bare ratio _; do
  kind=$(xargs <<<"$kind"); ratio=$(xargs <<<"$ratio")
  case "$kind" in workload|---*|"") continue ;; esac
  res=$(python3 -c "print('PASS' if float('$ratio') >= 0.7 else 'FAIL')" 2>/dev/null || echo "?")
  row "P1 server path" "$kind ($(xargs <<<"$load")): server ÷ bare req/s ($(xargs <<<"$srv") / $(xargs <<<"$bare"))" "$ratio" ">= 0.7" "$res"
done <"$OUT/p1/summary.md"

for kind in $P2_KINDS; do
  echo "== P2 device bound ($kind) ==" >&2
  env "${P2_ENV[@]}" KIND="$kind" OUT="$OUT/p2-$kind" "$ROOT/scripts/bench-device-bound.sh" >"$OUT/p2-$kind.txt" 2>"$OUT/p2-$kind.err" ||
    { cat "$OUT/p2-$kind.err" >&2; echo "P2 ($kind) failed" >&2; exit 1; }
  line=$(grep '^P2 ' "$OUT/p2-$kind.txt")
  head=$(head -1 "$OUT/p2-$kind.txt" | sed 's/^Device-bound benchmark (P2): //')
  ratio=$(field achieved_ratio "$line"); q99=$(field p99_queue_ms "$line"); bound=$(field bound_ms "$line")
  row "P2 device bound" "$head: achieved ÷ (N/L), steady window (whole run $(field achieved_ratio_whole_run "$line"))" "$ratio" ">= 0.99" "$(python3 -c "print('PASS' if $ratio >= 0.99 else 'FAIL')")"
  row "P2 device bound" "$kind: p99 queue wait (X-Queue-Time-Ms)" "$q99 ms" "<= $bound ms" "$(python3 -c "print('PASS' if 0 <= $q99 <= $bound else 'FAIL')")"
  row "P2 device bound" "$kind: 429s / other failures" "$(field r429 "$line") / $(field other_failures "$line")" "429 for the excess, no other" "$([ "$(field r429 "$line")" -gt 0 ] && [ "$(field other_failures "$line")" = 0 ] && echo PASS || echo FAIL)"
  row "P2 device bound" "$kind: p50 device time; achieved ÷ (N/device p50); server CPU" "$(field device_p50_ms "$line") ms; $(field ratio_vs_device "$line"); $(field server_cores "$line") cores" "" ""
done

echo "== P5 start-up and memory ==" >&2
OUT="$OUT/p5" "$ROOT/scripts/bench-startup.sh" >"$OUT/p5.txt" 2>"$OUT/p5.err" ||
  { cat "$OUT/p5.err" >&2; echo "P5 failed" >&2; exit 1; }
while read -r line; do
  mode=$(field mode "$line"); w=$(field workers "$line")
  row "P5 start-up" "$mode, $w workers: first ready / all ready" "$(field first_ready_ms "$line") / $(field all_ready_ms "$line") ms" "" ""
  row "P5 memory" "$mode, $w workers: RSS server + children ($(field children "$line")) = total; PSS total" \
    "$(field rss_server_mb "$line") + $(field rss_children_mb "$line") = $(field rss_total_mb "$line") MB; $(field pss_total_mb "$line") MB" "" ""
done < <(grep '^P5 ' "$OUT/p5.txt")

if [ "$MEDIA" = 1 ]; then
  echo "== CNN batching ==" >&2
  OUT="$OUT/cnn" "$ROOT/scripts/bench-cnn.sh" >"$OUT/cnn.txt" 2>"$OUT/cnn.err" || echo "bench-cnn.sh failed; see $OUT/cnn.err" >&2
  while IFS='|' read -r _ lat _ r16 r1 ratio _; do
    lat=$(xargs <<<"$lat")
    case "$lat" in MOCK_CNN_SECONDS|---*|"") continue ;; esac
    row "CNN batching" "MOCK_CNN_SECONDS=$lat: batch 16 ÷ batch 1 req/s ($(xargs <<<"$r16") / $(xargs <<<"$r1"))" "$(xargs <<<"$ratio")" "" ""
  done < <(grep '^| ' "$OUT/cnn.txt" || true)
  echo "== audio front end ==" >&2
  OUT="$OUT/audio" "$ROOT/scripts/bench-audio.sh" >"$OUT/audio.txt" 2>"$OUT/audio.err" || echo "bench-audio.sh failed; see $OUT/audio.err" >&2
fi

echo
echo "tt-media-server benchmarks ($(nproc) cores; load average before $LOAD_BEFORE, after $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| benchmark | figure | value | target | result |"
echo "|---|---|---:|---|---|"
printf '%s\n' "${ROWS[@]}"
if [ "$MEDIA" = 1 ]; then
  echo; cat "$OUT/cnn.txt" 2>/dev/null || true
  echo; cat "$OUT/audio.txt" 2>/dev/null || true
fi
echo
echo "details: $OUT (p1/summary.md, p2-*/summary.md, p5/summary.md)"
