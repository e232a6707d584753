#!/usr/bin/env bash
# Generates the Ogg Vorbis / Ogg Opus test fixtures of media/audio (issue 5) from our own
# synthetic signals, records the frame counts the Xiph reference decoders (oggdec, opusdec) and
# ffmpeg return in testdata/ogg/manifest.json, and checks our decoder against ffmpeg's decode
# (TestOggMatchesFFmpeg, which skips when ffmpeg is absent).
#
#   scripts/gen-audio-fixtures.sh          # rewrites media/audio/testdata/ogg/*
#
# The signals are closed-form expressions that media/audio's tests evaluate too
# (fixtureSignal in ogg_test.go): KEEP THEM IN SYNC.
#   left / mono: 0.35·sin(2π·440·t) + 0.25·sin(2π·(300·t + 1200·t²))   (tone + 300→2700 Hz chirp)
#   right:       0.30·sin(2π·880·t) + 0.25·sin(2π·(300·t + 1200·t²))
# Each file has an odd number of frames (not a multiple of any codec block), so exact length
# needs correct pre-skip and end trimming. Installs ffmpeg, vorbis-tools and opus-tools with
# apt-get when missing. The go tests do not need any of these tools.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/media/audio/testdata/ogg
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gen-audio-fixtures.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

missing=()
command -v ffmpeg >/dev/null || missing+=(ffmpeg)
command -v ffprobe >/dev/null || missing+=(ffmpeg)
command -v oggenc >/dev/null || missing+=(vorbis-tools)
command -v opusenc >/dev/null || missing+=(opus-tools)
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing ${missing[*]} ..." >&2
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

L='0.35*sin(2*PI*440*t)+0.25*sin(2*PI*(300*t+1200*t*t))'
R='0.30*sin(2*PI*880*t)+0.25*sin(2*PI*(300*t+1200*t*t))'

# src NAME RATE CHANNELS FRAMES: a 16-bit WAV of the signal with exactly FRAMES frames.
src() {
	local expr=$L
	[ "$3" -eq 2 ] && expr="$L|$R"
	ffmpeg -nostdin -loglevel error -y -f lavfi -i "aevalsrc=exprs=$expr:s=$2:d=2" \
		-af "atrim=end_sample=$4" -c:a pcm_s16le -fflags +bitexact -map_metadata -1 "$TMP/$1.wav"
}

mkdir -p "$OUT"
rm -f "$OUT"/*.ogg "$OUT"/*.opus

# name           rate  ch frames  encoder command
src v44s 44100 2 40009
oggenc -Q -q 0 --serial 1 -o "$OUT/vorbis_44k1_stereo_oggenc_q0.ogg" "$TMP/v44s.wav"
src v16m 16000 1 14437
ffmpeg -nostdin -loglevel error -y -i "$TMP/v16m.wav" -c:a libvorbis -q:a 1 -fflags +bitexact \
	-map_metadata -1 "$OUT/vorbis_16k_mono_ffmpeg_q1.ogg"
src o48s 48000 2 43210
opusenc --quiet --bitrate 32 --serial 1 --comp 10 "$TMP/o48s.wav" "$OUT/opus_48k_stereo_opusenc_32k.opus"
src o16m 16000 1 15013
opusenc --quiet --bitrate 12 --serial 1 --comp 10 "$TMP/o16m.wav" "$OUT/opus_16k_mono_opusenc_12k.opus"
src o48m 48000 1 41111
ffmpeg -nostdin -loglevel error -y -i "$TMP/o48m.wav" -c:a libopus -b:a 24k -fflags +bitexact \
	-map_metadata -1 "$OUT/opus_48k_mono_ffmpeg_24k.opus"

# Manifest: source signal, and the frames (at the codec's own output rate) that the Xiph
# reference decoders and ffmpeg return.
{
	echo '{"files": ['
	first=1
	for spec in \
		"vorbis_44k1_stereo_oggenc_q0.ogg 44100 2 40009 oggenc" \
		"vorbis_16k_mono_ffmpeg_q1.ogg 16000 1 14437 ffmpeg-libvorbis" \
		"opus_48k_stereo_opusenc_32k.opus 48000 2 43210 opusenc" \
		"opus_16k_mono_opusenc_12k.opus 16000 1 15013 opusenc" \
		"opus_48k_mono_ffmpeg_24k.opus 48000 1 41111 ffmpeg-libopus"; do
		set -- $spec
		f=$1
		rate=$(ffprobe -v error -select_streams a:0 -show_entries stream=sample_rate -of csv=p=0 "$OUT/$f")
		[[ $f == opus* ]] && rate=48000 # ffprobe reports OpusHead's input rate; Opus decodes at 48 kHz
		ffmpeg -nostdin -loglevel error -y -i "$OUT/$f" -ar "$rate" -f f32le -c:a pcm_f32le "$TMP/dec.f32"
		ch=$(ffprobe -v error -select_streams a:0 -show_entries stream=channels -of csv=p=0 "$OUT/$f")
		frames=$(($(stat -c %s "$TMP/dec.f32") / 4 / ch))
		# The Xiph reference decoders (libvorbisfile, libopusfile) apply pre-skip and granule
		# trimming exactly; ffmpeg 5.1 does not for Vorbis (it ends oggenc's file 128 frames early
		# and leaves its own file's end untrimmed), so they give the truth.
		if [[ $f == opus* ]]; then
			opusdec --quiet --rate 48000 --float "$OUT/$f" "$TMP/ref.wav" 2>/dev/null
			ref=$(ffprobe -v error -show_entries stream=duration_ts -of csv=p=0 "$TMP/ref.wav")
		else
			oggdec -Q -R -b 16 -o "$TMP/ref.raw" "$OUT/$f"
			ref=$(($(stat -c %s "$TMP/ref.raw") / 2 / ch))
		fi
		[ $first -eq 1 ] || echo ','
		first=0
		printf '  {"file": "%s", "encoder": "%s", "source_rate": %d, "channels": %d, "source_frames": %d, "decoded_rate": %d, "reference_frames": %d, "ffmpeg_frames": %d, "bytes": %d}' \
			"$f" "$5" "$2" "$3" "$4" "$rate" "$ref" "$frames" "$(stat -c %s "$OUT/$f")"
	done
	echo
	echo ']}'
} >"$OUT/manifest.json"
cat "$OUT/manifest.json"

# --- What browsers' MediaRecorder and phones send (issue 17 item 4): WebM/Opus (Chrome, Firefox),
# MP4/AAC (Safari; fragmented, as MediaRecorder writes it), M4A/AAC (voice memos), and WebM with
# Vorbis (decoded through ffmpeg). Same signals, ~3.2 s, odd frame counts.
BOUT=$ROOT/media/audio/testdata/browser
mkdir -p "$BOUT"
rm -f "$BOUT"/*.webm "$BOUT"/*.m4a "$BOUT"/*.mp4

# bsrc NAME RATE CHANNELS FRAMES: like src, up to 4 s.
bsrc() {
	local expr=$L
	[ "$3" -eq 2 ] && expr="$L|$R"
	ffmpeg -nostdin -loglevel error -y -f lavfi -i "aevalsrc=exprs=$expr:s=$2:d=4" \
		-af "atrim=end_sample=$4" -c:a pcm_s16le -fflags +bitexact -map_metadata -1 "$TMP/$1.wav"
}
enc() { # enc IN OUT ffmpeg-args...
	local in=$1 out=$2
	shift 2
	ffmpeg -nostdin -loglevel error -y -i "$TMP/$in.wav" "$@" -fflags +bitexact -flags:a +bitexact \
		-map_metadata -1 "$BOUT/$out"
}
bsrc b48m 48000 1 154417
bsrc b48s 48000 2 153611
bsrc b16m 16000 1 51337
bsrc b44s 44100 2 141127
bsrc b44m 44100 1 140009
enc b48m webm_opus_48k_mono_32k.webm -c:a libopus -b:a 32k -f webm
enc b48s webm_opus_48k_stereo_64k.webm -c:a libopus -b:a 64k -f webm
enc b16m webm_opus_16k_mono_voip_12k.webm -c:a libopus -b:a 12k -application voip -f webm
enc b44m webm_vorbis_44k1_mono_q1.webm -c:a libvorbis -q:a 1 -f webm
enc b48m mp4_aac_48k_mono_64k_fragmented.mp4 -c:a aac -b:a 64k -movflags +frag_keyframe+empty_moov+default_base_moof -f mp4
enc b44s m4a_aac_44k1_stereo_96k.m4a -c:a aac -b:a 96k -f ipod

{
	echo '{"files": ['
	first=1
	for spec in \
		"webm_opus_48k_mono_32k.webm 48000 1 154417 libopus" \
		"webm_opus_48k_stereo_64k.webm 48000 2 153611 libopus" \
		"webm_opus_16k_mono_voip_12k.webm 16000 1 51337 libopus-voip" \
		"webm_vorbis_44k1_mono_q1.webm 44100 1 140009 libvorbis" \
		"mp4_aac_48k_mono_64k_fragmented.mp4 48000 1 154417 ffmpeg-aac" \
		"m4a_aac_44k1_stereo_96k.m4a 44100 2 141127 ffmpeg-aac"; do
		set -- $spec
		f=$1
		rate=$(ffprobe -v error -select_streams a:0 -show_entries stream=sample_rate -of csv=p=0 "$BOUT/$f")
		ch=$(ffprobe -v error -select_streams a:0 -show_entries stream=channels -of csv=p=0 "$BOUT/$f")
		ffmpeg -nostdin -loglevel error -y -i "$BOUT/$f" -f f32le -c:a pcm_f32le "$TMP/dec.f32"
		frames=$(($(stat -c %s "$TMP/dec.f32") / 4 / ch))
		[ $first -eq 1 ] || echo ','
		first=0
		printf '  {"file": "%s", "encoder": "%s", "source_rate": %d, "channels": %d, "source_frames": %d, "decoded_rate": %d, "ffmpeg_frames": %d, "bytes": %d}' \
			"$f" "$5" "$2" "$3" "$4" "$rate" "$frames" "$(stat -c %s "$BOUT/$f")"
	done
	echo
	echo ']}'
} >"$BOUT/manifest.json"
cat "$BOUT/manifest.json"

echo "checking media/audio against ffmpeg's decode ..." >&2
cd "$ROOT" && go test -count 1 -run 'TestOgg|TestBrowser' -v ./media/audio | grep -E '^(=== RUN|--- |\s+ogg_test|ok|FAIL)|dB|frames' || true
