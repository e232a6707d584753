#!/usr/bin/env bash
# Installs the Debian packages whose commands are missing, quietly.
#   scripts/apt-ensure.sh COMMAND[:PACKAGE] ...     e.g. ffmpeg lame mpg123 ffprobe:ffmpeg
# Without root it names what is missing and exits 1.
set -euo pipefail
missing=()
for spec in "$@"; do
	cmd=${spec%%:*} pkg=${spec#*:}
	command -v "$cmd" >/dev/null || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
	echo "missing Debian packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing ${missing[*]} ..." >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
	{ $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
