#!/usr/bin/env bash
# Installs the pinned official `openai` npm package for the SDK conformance test
# (tests/sdk/sdk_test.go) into a folder OUTSIDE the Go module, so that go tooling never walks
# node_modules. The test looks in the same place:
#   TT_SDK_NODE_DIR (default: $HOME/.cache/tt-media-server-go/sdk-node)
# Usage: tests/sdk/install.sh    (needs node >= 20 and npm; uses package-lock.json when present)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${TT_SDK_NODE_DIR:-$HOME/.cache/tt-media-server-go/sdk-node}"
mkdir -p "$dest"
cp "$here/package.json" "$dest/"
if [ -f "$here/package-lock.json" ]; then
  cp "$here/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
else
  (cd "$dest" && npm install --no-audit --no-fund --loglevel=error)
fi
echo "openai $(node -p "require('$dest/node_modules/openai/package.json').version") installed in $dest/node_modules"
