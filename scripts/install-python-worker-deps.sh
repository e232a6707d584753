#!/usr/bin/env bash
# Installs what the Python worker tests need (tests/python_test.go, runners/procrunner's Python
# interop test, workers/python's unit tests): Debian's python3 with PIL and numpy, which the
# fake runners in workers/python/fakes import. Nothing from PyPI. Quiet when already present.
set -euo pipefail
PY=/usr/bin/python3
if [ -x "$PY" ] && "$PY" -c 'import PIL, numpy' 2>/dev/null; then
	exit 0
fi
pkgs=(python3 python3-pil python3-numpy)
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
	echo "missing Debian packages for the Python worker tests: ${pkgs[*]} (run as root to install them)" >&2
	exit 1
fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing ${pkgs[*]} ..." >&2
export DEBIAN_FRONTEND=noninteractive
lock=(-o DPkg::Lock::Timeout=300)
$SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 ||
	{ $SUDO apt-get "${lock[@]}" update -qq && $SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; }
"$PY" -c 'import PIL, numpy' || { echo "install-python-worker-deps: $PY still lacks PIL or numpy" >&2; exit 1; }
