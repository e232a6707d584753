#!/usr/bin/env bash
# Builds the docs UI that /docs serves: installs the redoc version pinned in
# scripts/docs-ui/package.json (+ package-lock.json) with `npm ci` in a folder OUTSIDE the Go
# module (so go tooling never walks node_modules), and copies its standalone bundle and the
# bundle's third-party licence notice into server/web/vendor/, where go:embed picks them up.
#
# The copied files are committed, so `go build` works on a fresh clone without node or npm;
# run this script only to change the redoc version (edit package.json, run
# `npm install --package-lock-only` in scripts/docs-ui, then this script) or to check that the
# committed bundle is what npm serves (`scripts/build-docs-ui.sh --check`).
#
#   TT_DOCS_UI_NODE_DIR   install folder (default: $HOME/.cache/tt-media-server-go/docs-ui)
#
# Needs node >= 18 and npm. Peer dependencies (react, mobx, styled-components) are not
# installed: the standalone bundle already contains them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
dest="${TT_DOCS_UI_NODE_DIR:-$HOME/.cache/tt-media-server-go/docs-ui}"
out="$root/server/web/vendor"
check=false
[ "${1:-}" = "--check" ] && check=true

mkdir -p "$dest"
cp "$here/docs-ui/package.json" "$here/docs-ui/package-lock.json" "$dest/"
want="$(node -p "require('$here/docs-ui/package.json').dependencies.redoc")"
have="$(node -p "try{require('$dest/node_modules/redoc/package.json').version}catch(e){''}")"
if [ "$have" != "$want" ]; then
  (cd "$dest" && npm ci --omit=peer --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
bundle="$dest/node_modules/redoc/bundles"
# The one change made to the bundle: its sidebar footer shows Redocly's logo from
# https://cdn.redoc.ly. /docs loads nothing from other origins (its CSP would block the image
# anyway), so the logo's URL becomes an empty data: URL and the footer shows its text only.
logo='src:"https://cdn.redoc.ly/redoc/logo-mini.svg"'
patched="$(mktemp)"
trap 'rm -f "$patched"' EXIT
if [ "$(grep -o "$logo" "$bundle/redoc.standalone.js" | wc -l)" != 1 ]; then
  echo "build-docs-ui.sh: the redoc bundle no longer has exactly one $logo; review the patch" >&2
  exit 1
fi
sed "s|$logo|src:\"data:,\"|" "$bundle/redoc.standalone.js" > "$patched"
if grep -q 'https://cdn\.' "$patched"; then
  echo "build-docs-ui.sh: the patched redoc bundle still refers to a CDN" >&2
  exit 1
fi
if $check; then
  cmp "$patched" "$out/redoc.standalone.js"
  cmp "$bundle/redoc.standalone.js.LICENSE.txt" "$out/redoc.standalone.js.LICENSE.txt"
  echo "server/web/vendor holds redoc $want as npm serves it (plus the logo patch)"
  exit 0
fi
mkdir -p "$out"
cp "$patched" "$out/redoc.standalone.js"
cp "$bundle/redoc.standalone.js.LICENSE.txt" "$out/"
cp "$dest/node_modules/redoc/LICENSE" "$out/redoc.LICENSE"
printf 'redoc %s (npm, MIT licence: redoc.LICENSE; bundled third-party notices: redoc.standalone.js.LICENSE.txt)\nbundles/redoc.standalone.js with one change by scripts/build-docs-ui.sh: the sidebar logo URL (https://cdn.redoc.ly/redoc/logo-mini.svg) is "data:,", so /docs loads nothing from other origins\n' "$want" > "$out/VERSION"
echo "copied redoc $want standalone bundle to $out"
