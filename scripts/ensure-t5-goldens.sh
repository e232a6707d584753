#!/usr/bin/env bash
# Makes the T5 goldens of runners/diffusion/t5 (scripts/gen-t5-goldens.sh) when they are absent,
# from package registries only, so CI generates them instead of skipping four tests:
#   - sentencepiece's source from Debian (`apt-get source sentencepiece`: bookworm's 0.1.97, the
#     tag gen-t5-goldens.sh pins), through a deb-src entry this script adds when none is set up;
#   - Hugging Face tokenizers' Node binding from npm (pinned below) for the hf_*.json goldens.
# Output: $TT_GOLDEN_DIR/t5 (default ~/.cache/tt-media-server-go/goldens/t5); nothing goes into
# the repository. Fails (exit 1) when anything cannot be installed or generated.
#   scripts/ensure-t5-goldens.sh [--force]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tt-media-server-go
OUT=${TT_GOLDEN_DIR:-$CACHE/goldens}/t5
TOKENIZERS_VERSION=0.23.2

if [ "${1:-}" != --force ] && [ -f "$OUT/README.md" ] && ls "$OUT"/hf_*.json >/dev/null 2>&1; then
	echo "T5 goldens: present in $OUT"
	exit 0
fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ensure-t5.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# sentencepiece's source tree, from Debian's source package.
if ! apt-get source --print-uris sentencepiece >/dev/null 2>&1; then
	list=/etc/apt/sources.list.d/tt-media-server-deb-src.sources
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")
	printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$codename" | $SUDO tee "$list" >/dev/null
	$SUDO apt-get update -qq -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
fi
(cd "$WORK" && apt-get source --download-only -qq sentencepiece >/dev/null 2>&1) ||
	{ echo "ensure-t5-goldens: apt-get source sentencepiece failed" >&2; exit 1; }
tar -xzf "$WORK"/sentencepiece_*.orig.tar.gz -C "$WORK"
SRC=$(ls -d "$WORK"/sentencepiece-*/ | head -1)

# Hugging Face tokenizers' Node binding (its prebuilt .node files ship inside the npm package).
NODEDIR=$CACHE/t5-tokenizers-node
if [ "$(node -p "try{require('$NODEDIR/node_modules/tokenizers/package.json').version}catch(e){''}" 2>/dev/null)" != "$TOKENIZERS_VERSION" ]; then
	mkdir -p "$NODEDIR"
	(cd "$NODEDIR" && npm install --no-audit --no-fund --loglevel=error "tokenizers@$TOKENIZERS_VERSION" >/dev/null)
fi

"$ROOT/scripts/gen-t5-goldens.sh" "$SRC" "$NODEDIR" "$OUT"
ls "$OUT"/hf_*.json >/dev/null || { echo "ensure-t5-goldens: no hf_*.json made in $OUT" >&2; exit 1; }
echo "T5 goldens: generated in $OUT"
