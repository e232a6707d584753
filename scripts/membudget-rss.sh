#!/usr/bin/env bash
# Peak RSS of the server under LoRA and audio memory bombs (issue 30 items 2 and 4), before
# and after the budgets, side by side in one run: the real binary built from BEFORE_REF (default
# c829e7a^, main before the LoRA/audio budgets) and from this tree, each case on a fresh mock
# server on loopback:
#   (a) C concurrent /image/generations naming a 1 GiB file of zeros, then C naming a valid
#       ~1 GiB SDXL adapter (scripts/bomblora: every module, F16, PEFT names), each case on a
#       fresh tt-sdxl-trace mock server (MOCK_DEVICES_COUNT=5, so C <= 5 workers take them);
#       reported: statuses, peak RSS (VmHWM), RSS after, and the bytes the server read (rchar of
#       /proc/PID/io: one read of a 1 GiB file is ~1 GiB);
#   (b) N concurrent /v1/audio/transcriptions uploads of the 100k-block WebM (scripts/bombwebm,
#       700 KB decoding to 250 s at 48 kHz) on a tt-whisper mock server.
# Big fixtures are made in a temporary directory and deleted at exit.
#   scripts/membudget-rss.sh [BEFORE_REF]     C=4 N=48 by default (C=2 on a box short of memory;
#                                            the "before" LoRA cases peak at 10-17 GB with C=4)
#   ONLY=after scripts/membudget-rss.sh      this tree only
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEFORE_REF=${1:-c829e7a^}
C=${C:-4}
N=${N:-48}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/membudget-rss.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/loras"
cd "$ROOT"
echo "building: after = this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo +changes))"
go build -o "$TMP/after" ./cmd/tt-media-server
if [ "${ONLY:-}" != after ]; then
	echo "building: before = $BEFORE_REF ($(git rev-parse --short "$BEFORE_REF"))"
	mkdir "$TMP/src"
	git archive "$BEFORE_REF" | tar -x -C "$TMP/src"
	(cd "$TMP/src" && go build -o "$TMP/before" ./cmd/tt-media-server)
	rm -rf "$TMP/src"
fi
truncate -s 1G "$TMP/loras/zeros.safetensors"
go run ./scripts/bomblora "$TMP/loras/adapter.safetensors" $((1 << 30))
go run ./scripts/bombwebm "$TMP/bomb.webm" 100000
ls -l "$TMP/loras" "$TMP/bomb.webm" | sed 's/^/  /'

SPID= WPID= PORT=
start() { # start BINARY ENV...
	local bin=$1
	shift
	PORT=$((20000 + RANDOM % 20000))
	(cd "$TMP" && env -i PATH="$PATH" HOME="$HOME" SERVICE_HOST=127.0.0.1 SERVICE_PORT=$PORT \
		MOCK_WARMUP_SECONDS=0.05 "$@" "./$bin" >"$TMP/log.$bin" 2>&1) &
	WPID=$!
	local i
	for i in $(seq 300); do curl -sf "http://127.0.0.1:$PORT/tt-liveness" >/dev/null && break; sleep 0.1; done
	SPID=$(pgrep -P "$WPID" | head -1) # the server, child of the subshell
	[ -n "$SPID" ] || SPID=$WPID
}
stop() {
	kill "$SPID" 2>/dev/null || true
	wait "$WPID" 2>/dev/null || true
}
# guard: the box is shared; a server that brings MemAvailable under 1.5 GiB is killed (its case
# is then reported as aborted) rather than let the OOM killer choose.
guard() {
	while kill -0 "$SPID" 2>/dev/null; do
		if [ "$(awk '/^MemAvailable/{print $2}' /proc/meminfo)" -lt $((3 << 19)) ]; then
			echo "  !! MemAvailable under 1.5 GiB: killing the server (case aborted; its peak is a lower bound)"
			kill -9 "$SPID"
			return
		fi
		sleep 0.2
	done
}
kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$SPID/status"; }
rchar() { awk '/^rchar/{print $2}' "/proc/$SPID/io"; }
report() { # report LABEL IDLE_KIB RCHAR_BEFORE
	local peak now read
	peak=$(kib VmHWM)
	now=$(kib VmRSS)
	read=$(($(rchar) - $3))
	echo "  <- statuses; $1: peak RSS $((peak / 1024)) MiB, RSS after $((now / 1024)) MiB (idle $(($2 / 1024)) MiB), read $((read >> 20)) MiB"
}

lora_case() { # lora_case BINARY FILE
	start "$1" MODEL_RUNNER=tt-sdxl-trace MOCK_DEVICES_COUNT=5 MOCK_STEP_SECONDS=0.001 LORA_ROOT="$TMP/loras"
	local idle r0 i g curls=()
	idle=$(kib VmHWM)
	r0=$(rchar)
	guard &
	g=$!
	printf '  '
	for i in $(seq "$C"); do
		curl -s -o /dev/null -w "%{http_code} " -H 'Authorization: Bearer your-secret-key' -H 'Content-Type: application/json' \
			-d "{\"prompt\": \"a lighthouse\", \"num_inference_steps\": 12, \"seed\": $i, \"lora_path\": \"$2\"}" \
			"http://127.0.0.1:$PORT/image/generations" &
		curls+=($!)
	done
	wait "${curls[@]}"
	report "$1, $C x $2" "$idle" "$r0" || echo "  (server gone)"
	stop
	wait "$g" 2>/dev/null || true
}

audio_case() { # audio_case BINARY
	start "$1" MODEL_RUNNER=tt-whisper MOCK_DEVICES_COUNT=5 MOCK_AUDIO_SECONDS_PER_SECOND=0.0005 MAX_QUEUE_SIZE=4096
	local idle r0 i curls=()
	idle=$(kib VmHWM)
	r0=$(rchar)
	for i in $(seq "$N"); do
		curl -s -o "$TMP/body.$1.$i" -w "%{http_code}\n" -H 'Authorization: Bearer your-secret-key' \
			-F file=@"$TMP/bomb.webm" -F model=whisper-1 "http://127.0.0.1:$PORT/v1/audio/transcriptions" >>"$TMP/codes.$1" &
		curls+=($!)
	done
	wait "${curls[@]}"
	printf '  %s' "$(sort "$TMP/codes.$1" | uniq -c | awk '{printf "%s x %s, ", $1, $2}')"
	report "$1, $N x 100k-block WebM" "$idle" "$r0"
	grep -h -o '"message": *"[^"]*"' "$TMP"/body."$1".* 2>/dev/null | sort | uniq -c | sed 's/^/     /' | head -5
	stop
}

bins="after"
[ "${ONLY:-}" = after ] || bins="before after"
echo "(a) LoRA: $C concurrent requests per case ($(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg))"
for b in $bins; do
	lora_case "$b" zeros.safetensors
	lora_case "$b" adapter.safetensors
done
echo "(b) audio: $N concurrent uploads (load: $(cut -d' ' -f1-3 /proc/loadavg))"
for b in $bins; do
	audio_case "$b"
done
