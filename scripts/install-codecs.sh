#!/usr/bin/env bash
# Installs Debian's libturbojpeg0 (libjpeg-turbo's TurboJPEG API) and libwebp7, the native
# codecs media/turbojpeg and media/webp load at run time (dlopen; nothing is linked at build
# time), quickly when they are already there. Without them the server runs on the pure-Go
# twins. Without root it only says what is missing. Under CI=true a failed install fails the
# script (CI must test the native path, not skip it).
set -euo pipefail
missing=()
have() { ldconfig -p 2>/dev/null | grep -q "$1"; }
have 'libturbojpeg\.so\.0 ' || missing+=(libturbojpeg0)
have 'libwebp\.so\.7 ' || missing+=(libwebp7)
if [ ${#missing[@]} -gt 0 ]; then
	ok=1
	if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
		echo "install-codecs: missing Debian packages ${missing[*]} (run as root to install them)" >&2
		ok=0
	else
		SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
		echo "install-codecs: installing ${missing[*]} ..." >&2
		export DEBIAN_FRONTEND=noninteractive
		$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
			{ $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } || ok=0
	fi
	if [ $ok = 0 ]; then
		echo "install-codecs: could not install ${missing[*]}; the pure-Go codecs will be used" >&2
		[ "${CI:-}" = true ] && exit 1
		exit 0
	fi
fi
echo "native codecs: $(ldconfig -p | grep -o 'libturbojpeg\.so\.0 \|libwebp\.so\.7 ' | sort -u | tr -d ' ' | tr '\n' ' ')"
