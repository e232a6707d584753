#!/usr/bin/env bash
# Makes the image-to-image / inpainting goldens (scripts/gen-img2img-goldens.sh) when they are
# absent. diffusers is in no package registry this project may use (not in Debian, npm or the
# Go proxy), so its source must be given: DIFFUSERS_SRC = a huggingface/diffusers checkout or
# bare git directory (commit 58eb52c0803ea9af3abec60841c2a093bdf1f951 is read from a bare one).
# Output: $TT_GOLDEN_DIR/img2img (default ~/.cache/tt-media-server-go/goldens/img2img); nothing
# goes into the repository. Fails (exit 1) when they are absent and cannot be generated, so CI
# says why instead of failing in the tests.
#   scripts/ensure-img2img-goldens.sh [--force]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The same place internal/shareddata.GeneratedRoot reads (TT_GOLDEN_DIR, else ~/.cache/...).
OUT=${TT_GOLDEN_DIR:-$HOME/.cache/tt-media-server-go/goldens}/img2img
# Goldens laid in ../shared/testdata/img2img (by whoever can run the generator with a diffusers
# checkout) are used as they are: internal/shareddata.Generated looks there first.
SHARED=$ROOT/../shared/testdata/img2img
if [ "${1:-}" != --force ] && [ -f "$SHARED/README.md" ] && [ -f "$SHARED/vae_sample.json" ]; then
	echo "img2img goldens: present in $SHARED"
	exit 0
fi

if [ "${1:-}" != --force ] && [ -f "$OUT/README.md" ] && [ -f "$OUT/vae_sample.json" ]; then
	echo "img2img goldens: present in $OUT"
	exit 0
fi
if [ -z "${DIFFUSERS_SRC:-}" ]; then
	echo "ensure-img2img-goldens: $OUT and $SHARED are absent and DIFFUSERS_SRC is not set (a huggingface/diffusers checkout or bare git directory; or lay the generator's output in ../shared/testdata/img2img)" >&2
	exit 1
fi
"$ROOT/scripts/gen-img2img-goldens.sh" "$DIFFUSERS_SRC" "$OUT"
echo "img2img goldens: generated in $OUT"
