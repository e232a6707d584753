#!/usr/bin/env bash
# Installs Debian's mpg123, the reference MP3 decoder that media/mp3dec's TestMatchesReference
# compares against (the test skips without it), quickly when it is already there. Needs root
# for apt-get; otherwise it only says what is missing.
set -euo pipefail
if ! command -v mpg123 >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends mpg123 >/dev/null 2>&1 ||
      { apt-get update >/dev/null && apt-get install -y --no-install-recommends mpg123 >/dev/null; }
  else
    echo "scripts/install-mpg123.sh: mpg123 is missing and this is not root; install Debian's mpg123" >&2
    exit 0
  fi
fi
echo "mpg123: $(mpg123 --version 2>&1 | head -1)"
