#!/usr/bin/env bash
# Makes the Wan2.2 T2V and I2V host goldens (scripts/gen-wan-goldens.sh) when they are absent, from
# DIFFUSERS_SRC (default: ../shared/diffusers-58eb52c beside the repository). Output:
# $TT_GOLDEN_DIR/wan (default ~/.cache/tt-media-server-go/goldens/wan); nothing goes into the
# repository. Fails (exit 1) when they are absent and cannot be generated, so CI says why
# instead of failing in the tests. Goldens of another format (README.md's "format N") are remade.
#   scripts/ensure-wan-goldens.sh [--force]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The same place internal/shareddata.GeneratedRoot reads (TT_GOLDEN_DIR, else ~/.cache/...).
OUT=${TT_GOLDEN_DIR:-$HOME/.cache/tt-media-server-go/goldens}/wan
if [ "${1:-}" != --force ] && [ -f "$OUT/README.md" ] && [ -f "$OUT/unipc.json" ] && [ -f "$OUT/pipeline.json" ] && [ -f "$OUT/umt5.json" ] &&
	[ -f "$OUT/i2v.json" ] && grep -q 'gen-wan-goldens.sh` (format 3)' "$OUT/README.md"; then
	echo "wan goldens: present in $OUT"
	exit 0
fi
SRC=${DIFFUSERS_SRC:-$ROOT/../shared/diffusers-58eb52c}
if [ ! -e "$SRC" ]; then
	echo "ensure-wan-goldens: $OUT is absent and the diffusers source $SRC is not there (set DIFFUSERS_SRC to a huggingface/diffusers checkout or bare git directory)" >&2
	exit 1
fi
"$ROOT/scripts/gen-wan-goldens.sh" "$SRC" "$OUT"
echo "wan goldens: generated in $OUT"
