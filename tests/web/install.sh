#!/usr/bin/env bash
# Installs what the browser test (tests/web/web_test.go) needs, quickly when already there:
#   - Debian's chromium at /usr/bin/chromium (apt-get install -y chromium when it is missing;
#     needs root; playwright's own browser download does not work on these machines);
#   - the pinned playwright-core npm package (package.json + package-lock.json, npm ci) in a
#     folder OUTSIDE the Go module, so go tooling never walks node_modules. The test looks in
#     the same place:
#       TT_WEB_NODE_DIR (default: $HOME/.cache/tt-media-server-go/web-node)
# Usage: tests/web/install.sh    (needs node >= 20 and npm)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${TT_WEB_NODE_DIR:-$HOME/.cache/tt-media-server-go/web-node}"

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 ||
      { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
  else
    echo "tests/web/install.sh: /usr/bin/chromium is missing and this is not root; install Debian's chromium" >&2
  fi
fi

want="$(node -p "require('$here/package.json').dependencies['playwright-core']")"
have="$(node -p "try{require('$dest/node_modules/playwright-core/package.json').version}catch(e){''}" 2>/dev/null || true)"
if [ "$have" != "$want" ] || ! cmp -s "$here/package-lock.json" "$dest/package-lock.json"; then
  mkdir -p "$dest"
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ -x /usr/bin/chromium ]; then browser=/usr/bin/chromium; else browser="no chromium"; fi
echo "playwright-core $want in $dest/node_modules; $browser"
