#!/usr/bin/env bash
# Installs Debian's mpg123, the reference MP3 decoder that media/mp3dec's TestMatchesReference
# compares against (the test skips without it), quickly when it is already there. Without root
# it only says what is missing.
set -euo pipefail
"$(dirname "$0")/apt-ensure.sh" mpg123 || exit 0
echo "mpg123: $(mpg123 --version 2>&1 | head -1)"
