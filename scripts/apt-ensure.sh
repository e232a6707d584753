#!/usr/bin/env bash
# Installs the Debian packages whose commands are missing, quietly.
#   scripts/apt-ensure.sh COMMAND[:PACKAGE] ...     e.g. ffmpeg lame mpg123 ffprobe:ffmpeg
# Without root it names what is missing and exits 1; a failed install exits non-zero too (it waits
# up to 5 minutes for another apt/dpkg run's lock instead of failing at once).
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
lock=(-o DPkg::Lock::Timeout=300)
$SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
	{ $SUDO apt-get "${lock[@]}" update -qq && $SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
for spec in "$@"; do
	command -v "${spec%%:*}" >/dev/null || { echo "apt-ensure: ${spec%%:*} still missing after installing ${missing[*]}" >&2; exit 1; }
done
