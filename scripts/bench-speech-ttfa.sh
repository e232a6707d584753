#!/usr/bin/env bash
# Time to first audio of /v1/audio/speech on the simulated SpeechT5 (mock-device mode): a 10-word
# and a 200-word text, streamed as pcm, RUNS times each (default 5), the two texts alternating so
# that a change in the box's load hits both alike; prints each run's time to the first byte and
# total, the medians, their ratio, and the load (uptime) before and after.
# Usage: scripts/bench-speech-ttfa.sh [RUNS]   (MOCK_TTS_STEP_SECONDS passes through; default 0.0065)
set -euo pipefail
runs=${1:-5}
port=${PORT:-18791}
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/srv" ./cmd/tt-media-server
MODEL_RUNNER=tt-speecht5-tts DEVICE_IDS='(0)' MOCK_WARMUP_SECONDS=0 API_KEY=k SERVICE_PORT=$port \
	MOCK_TTS_STEP_SECONDS=${MOCK_TTS_STEP_SECONDS:-0.0065} "$dir/srv" >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 1 120); do curl -sf "localhost:$port/tt-liveness" >/dev/null && break; sleep 0.5; done
short="The quick brown fox jumps over the lazy dog today."
long=""
while [ "$(wc -w <<<"$long")" -lt 200 ]; do
	long+="Streaming speech starts with a short first chunk, and the rest of this long text follows it in larger chunks. "
done
measure() { # text -> "ttfb total"
	curl -s -o /dev/null -w '%{time_starttransfer} %{time_total}\n' -H 'Authorization: Bearer k' \
		-H 'Content-Type: application/json' \
		-d "{\"model\":\"tts-1\",\"voice\":\"alloy\",\"response_format\":\"pcm\",\"input\":\"$1\"}" \
		"localhost:$port/v1/audio/speech"
}
echo "load before: $(uptime)"
measure "$short" >/dev/null # the first request after start-up pays for cold caches
: >"$dir/short"
: >"$dir/long"
for _ in $(seq 1 "$runs"); do
	for name in short long; do
		text=${!name}
		measure "$text" | tee -a "$dir/$name" | sed "s/^/$name ($(wc -w <<<"$text") words): ttfb total /"
	done
done
for name in short long; do
	sort -n "$dir/$name" | awk -v n="$name" '{a[NR]=$1} END {m=int((NR+1)/2); printf "%s median: time to first audio %.3f s\n", n, a[m]}' | tee -a "$dir/medians"
done
awk '/short median/ {s=$7} /long median/ {l=$7} END {printf "200 words vs 10 words: %+.1f%%\n", 100*(l/s-1)}' "$dir/medians"
echo "load after: $(uptime)"
