#!/usr/bin/env bash
# The ffprobe table of /v1/audio/speech (issue 28): starts the server with the simulated
# SpeechT5 (mock-device mode), asks for one text in OpenAI's six response formats (streamed, as
# OpenAI answers) and HEAD's wav/mp3/ogg (whole files, legacy /audio/speech), and prints what
# ffprobe reports (codec, sample rate, duration; headerless pcm read as s16le at 24 kHz) and the
# length ffmpeg decodes. Needs ffmpeg/ffprobe (scripts/install-codecs.sh or Debian's ffmpeg).
# Usage: scripts/speech-ffprobe-table.sh
set -euo pipefail
port=${PORT:-18792}
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/srv" ./cmd/tt-media-server
MODEL_RUNNER=tt-speecht5-tts DEVICE_IDS='(0)' MOCK_WARMUP_SECONDS=0 API_KEY=k SERVICE_PORT=$port "$dir/srv" >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 1 120); do curl -sf "localhost:$port/tt-liveness" >/dev/null && break; sleep 0.5; done
text="Hello from Tenstorrent. The quick brown fox jumps over the lazy dog, 42 times."
post() { # route body out
	curl -sf -o "$3" -H 'Authorization: Bearer k' -H 'Content-Type: application/json' -d "$2" "localhost:$port$1"
}
row() { # dialect format file
	local args=(-v error -show_entries stream=codec_name,sample_rate:format=duration -of default=nw=1)
	local in=()
	[ "$2" = pcm ] && in=(-f s16le -ar 24000 -ac 1)
	local out codec rate dur decoded
	out=$(ffprobe "${args[@]}" "${in[@]}" "$3")
	codec=$(sed -n 's/^codec_name=//p' <<<"$out")
	rate=$(sed -n 's/^sample_rate=//p' <<<"$out")
	dur=$(sed -n 's/^duration=//p' <<<"$out")
	decoded=$(ffmpeg -v error "${in[@]}" -i "$3" -f s16le -ac 1 -ar 16000 - | wc -c | awk '{printf "%.3f", $1/32000}')
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$codec" "$rate" "$dur" "$decoded" "$(stat -c %s "$3")"
}
echo "| dialect | response_format | codec | sample rate | ffprobe duration (s) | decoded (s) | bytes |"
echo "|---|---|---|---:|---:|---:|---:|"
for f in mp3 opus aac flac wav pcm; do
	post /v1/audio/speech "{\"model\":\"tts-1\",\"voice\":\"alloy\",\"response_format\":\"$f\",\"input\":\"$text\"}" "$dir/openai.$f"
	row "OpenAI (streamed)" "$f" "$dir/openai.$f"
done
for f in wav mp3 ogg; do
	post /audio/speech "{\"text\":\"$text\",\"response_format\":\"$f\"}" "$dir/head.$f"
	row "HEAD (whole)" "$f" "$dir/head.$f"
done
