#!/usr/bin/env bash
# Generates the MP3 test fixtures of media/mp3dec (issue 5) from our own synthetic signals: the
# Layer III features LAME writes only in some modes, or never, so that the speech test files
# (LAME joint stereo, identical block types) do not exercise them:
#   * dual-channel mode (lame -m d) with transients on one channel only: the channels switch
#     to short blocks at different times, so granules have different block types per channel
#     (in stereo and joint-stereo modes LAME switches both channels together);
#   * MPEG-2 (24 kHz) joint stereo: LSF scale factors, middle/side, short blocks;
#   * MPEG-2.5 at 8 kHz mono and 12 kHz stereo: the bands of the 2.5 extension (8 kHz has its
#     own) and where its region 1 starts;
#   * intensity stereo, which LAME never writes: a joint-stereo MPEG-1 file whose frame headers
#     are rewritten to switch intensity stereo on (mode extension bit 0). Frame sizes do not
#     depend on the mode extension, so the stream stays valid; what it decodes to is defined by
#     the standard.
# mpg123 is the reference decoder (TestMatchesReference). ffmpeg 5.1 agrees with mpg123 and
# mp3dec to ~120 dB except in three frames of the MPEG-2 fixture, where mpg123, go-mp3 and
# mp3dec agree with each other and ffmpeg differs (38-53 dB). The files have no Xing/Info frame,
# so every decoded sample is returned and lines up with mp3dec's output from the first frame.
#
#   scripts/gen-mp3-fixtures.sh            # rewrites media/mp3dec/testdata/*.mp3
#
# Installs ffmpeg (with libmp3lame), lame and mpg123 with apt-get when missing. The go tests need
# no tool; TestMatchesReference runs mpg123 when it is installed and skips otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/media/mp3dec/testdata
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gen-mp3-fixtures.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

"$ROOT/scripts/apt-ensure.sh" ffmpeg lame mpg123

# Tones and a chirp, with 3 kHz bursts every 0.25 s (left) or 0.3 s (right) to force short blocks.
# (Commas inside a filter argument are escaped for ffmpeg's filter-graph parser.)
BURST='0.6*lt(mod(t\,@)\,0.003)*sin(2*PI*3000*t)'
L="0.3*sin(2*PI*440*t)+0.2*sin(2*PI*(300*t+1200*t*t))+${BURST//@/0.25}"
R="0.25*sin(2*PI*660*t)+0.2*sin(2*PI*(500*t+900*t*t))"
R2="$R+${BURST//@/0.3}"

mkdir -p "$OUT"
rm -f "$OUT"/*.mp3
wav() { # RATE EXPR_L EXPR_R OUT: 1.5 s of 16-bit stereo
	ffmpeg -nostdin -loglevel error -y -f lavfi -i "aevalsrc=exprs=$2|$3:s=$1:d=1.5" \
		-c:a pcm_s16le -fflags +bitexact -map_metadata -1 "$4"
}
enc() { # RATE EXPR_L EXPR_R OUT ffmpeg-libmp3lame-options...
	local rate=$1 l=$2 r=$3 out=$4
	shift 4
	ffmpeg -nostdin -loglevel error -y -f lavfi -i "aevalsrc=exprs=$l|$r:s=$rate:d=1.5" \
		-c:a libmp3lame "$@" -write_xing 0 -id3v2_version 0 -fflags +bitexact -map_metadata -1 "$out"
}
wav 44100 "$L" "$R" "$TMP/dual.wav"
lame --quiet -t -m d -b 128 "$TMP/dual.wav" "$OUT/dualchannel_44k1_blocktypes.mp3"
enc 24000 "$L" "$R2" "$OUT/mpeg2_24k_joint.mp3" -b:a 64k -joint_stereo 1
# MPEG-2.5: band-limited versions of the signals (the burst is at 3 kHz, under 4 kHz).
enc 8000 "$L" "$L" "$TMP/m8.mp3" -b:a 24k -ac 1
mv "$TMP/m8.mp3" "$OUT/mpeg25_8k_mono.mp3"
enc 12000 "$L" "$R2" "$OUT/mpeg25_12k_joint.mp3" -b:a 32k -joint_stereo 1
enc 44100 "$L" "$R2" "$TMP/js.mp3" -b:a 96k -joint_stereo 1

# Switch intensity stereo on in every frame header (byte 3: mode 01 = joint stereo, ext |= 01).
python3 - "$TMP/js.mp3" "$OUT/stereo_44k1_intensity.mp3" <<'PYEOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
off = frames = 0
while off + 4 <= len(b) and b[off] == 0xFF and b[off + 1] & 0xE0 == 0xE0:
    br = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320][b[off + 2] >> 4]
    rate = [44100, 48000, 32000][(b[off + 2] >> 2) & 3]
    size = 144000 * br // rate + ((b[off + 2] >> 1) & 1)
    b[off + 3] = (b[off + 3] & 0x2F) | 0x40 | 0x10
    off += size
    frames += 1
assert off == len(b) and frames > 10, (off, len(b), frames)
open(sys.argv[2], "wb").write(b)
PYEOF

ls -l "$OUT"
echo "checking media/mp3dec against mpg123's decode ..." >&2
cd "$ROOT" && go test -count 1 -run 'TestMatchesReference|TestFixtures' -v ./media/mp3dec | grep -E '^(--- |ok|FAIL)|dB|granules' || true
