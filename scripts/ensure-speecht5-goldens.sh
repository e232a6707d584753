#!/usr/bin/env bash
# Makes the SpeechT5 goldens of runners/speecht5 when they are absent, with Debian packages only:
#   - text.json: HEAD's own normalize_text_for_tts and chunk_text (from
#     ../shared/tt-media-server-head, scripts/speecht5/gen_text_goldens.py) run on Debian's
#     python3-num2words over scripts/speecht5/corpus.txt;
#   - spm_char.model, spm_lines.txt, spm_ids.txt: a SentencePiece character model trained by
#     Debian's spm_train on the corpus (SpeechT5's id layout: <s> 0, <pad> 1, </s> 2, <unk> 3),
#     and spm_encode's ids of test lines.
# Output: $TT_GOLDEN_DIR/speecht5 (default ~/.cache/tt-media-server-go/goldens/speecht5); nothing
# goes into the repository. Fails (exit 1) when anything cannot be installed or generated.
#   scripts/ensure-speecht5-goldens.sh [--force]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tt-media-server-go
OUT=${TT_GOLDEN_DIR:-$CACHE/goldens}/speecht5
HEAD_SRC=${TT_HEAD_DIR:-$ROOT/../shared/tt-media-server-head}
if [ "${1:-}" != --force ] && [ -f "$OUT/text.json" ] && [ -f "$OUT/spm_ids.txt" ]; then
	echo "SpeechT5 goldens: present in $OUT"
	exit 0
fi
[ -f "$HEAD_SRC/tt_model_runners/speecht5_runner.py" ] ||
	{ echo "ensure-speecht5-goldens: HEAD's source is not at $HEAD_SRC" >&2; exit 1; }
"$ROOT/scripts/apt-ensure.sh" spm_train:sentencepiece spm_encode:sentencepiece
if ! /usr/bin/python3 -c 'import num2words' 2>/dev/null; then
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends python3-num2words >/dev/null
fi
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ensure-speecht5.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
corpus=$ROOT/scripts/speecht5/corpus.txt
/usr/bin/python3 "$ROOT/scripts/speecht5/gen_text_goldens.py" "$HEAD_SRC" "$WORK/text.json" "$corpus"

# A character model on the corpus plus a pangram, with SpeechT5's special ids.
{ cat "$corpus"; echo "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG!"; } >"$WORK/train.txt"
spm_train --input="$WORK/train.txt" --model_prefix="$WORK/spm_char" --model_type=char \
	--vocab_size=90 --hard_vocab_limit=false --character_coverage=1.0 \
	--bos_id=0 --pad_id=1 --eos_id=2 --unk_id=3 --minloglevel=2 >/dev/null 2>&1 ||
	{ echo "ensure-speecht5-goldens: spm_train failed" >&2; exit 1; }
{
	cat "$corpus"
	printf '%s\n' "  Leading and   inner   spaces  " "Unseen: Zebra ÆØÅ ☃ é ﬁ ½ ①" "tabs	and	more" \
		"FULLWIDTH ＡＢＣ１２３" "x" "..." "The quick brown fox, twice: the quick brown fox."
} >"$WORK/spm_lines.txt"
spm_encode --model="$WORK/spm_char.model" --output_format=id <"$WORK/spm_lines.txt" >"$WORK/spm_ids.txt"
cp "$WORK/text.json" "$WORK/spm_char.model" "$WORK/spm_lines.txt" "$WORK/spm_ids.txt" "$OUT/"
echo "SpeechT5 goldens: written to $OUT"
