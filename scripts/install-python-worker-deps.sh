#!/usr/bin/env bash
# Installs what the Python worker tests need (tests/python*_test.go, runners/procrunner's Python
# interop test, workers/python's unit tests), on both of their roads (workers/python/fakes/README.md):
#  - plain: Debian's python3 with PIL and numpy, which the fake runners import;
#  - HEAD's: the fakes hosted on tt-media-server HEAD's real classes (../shared/tt-media-server-head)
#    by the python3 on PATH that has pydantic 2 and pydantic-settings (the machine's pyenv python);
#    HEAD also imports numpy, PIL, torch and prometheus_client, which the tests link from Debian's
#    python3-numpy, python3-pil, python3-torch and python3-prometheus-client (same Python 3.11 ABI)
#    into a directory on PYTHONPATH (tests/e2e HeadRoad).
# Nothing from PyPI. Quiet when already present.
set -euo pipefail
PY=/usr/bin/python3
mods='import PIL, numpy, torch, prometheus_client'
if [ -x "$PY" ] && "$PY" -c "$mods" 2>/dev/null; then
	exit 0
fi
pkgs=(python3 python3-pil python3-numpy python3-torch python3-prometheus-client)
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
"$PY" -c "$mods" || { echo "install-python-worker-deps: $PY still lacks one of PIL, numpy, torch, prometheus_client" >&2; exit 1; }
