#!/usr/bin/env bash
# run_uvicorn_equivalent.sh: the Python tt-media-server's run_uvicorn.sh, for the Go binary.
#
# The Python script activates tt-metal's venv (unless --skip-venv) and runs
#   uvicorn --host 0.0.0.0 main:app --lifespan on --port "${SERVICE_PORT:-8000}"
# and the app itself reads MODEL/DEVICE, TP2, SD_3_5_BASE, SD_3_5_FAST from the environment.
# This script keeps those conventions for tt-media-server:
#
#   * host and port: SERVICE_HOST (default 0.0.0.0) and SERVICE_PORT (default 8000);
#     uvicorn-style --host H / --port P arguments set them;
#   * --skip-venv is accepted and ignored (there is no Python venv);
#   * MODEL + DEVICE, TP2, SD_3_5_BASE, SD_3_5_FAST, MODEL_RUNNER, DEVICE_IDS... are passed
#     through unchanged: the binary applies them exactly as the Python Settings do
#     (SD_3_5_FAST (4,8) beats SD_3_5_BASE (2,4) beats TP2 (2,1); each is on only when its
#     value is "true", any case). The script explains on stderr what they select and warns
#     about values the Python server would silently ignore (TP2=1 is OFF there and here);
#   * `source run_uvicorn_equivalent.sh` works like `source run_uvicorn.sh`: the server runs in
#     the foreground and the calling shell's options are left alone.
#
# Usage: run_uvicorn_equivalent.sh [--skip-venv] [--host H] [--port P] [--print-env]
#   --print-env   print the environment the server would be started with (KEY=VALUE, sorted,
#                 secrets shown as ***) and the command line, then exit 0 without starting it.
# The binary is $TT_MEDIA_SERVER_BIN, else tt-media-server next to this script, else on PATH;
# in a source checkout without one (a fresh clone), the script builds it next to itself first
# (go build -o tt-media-server ./cmd/tt-media-server) and says so on stderr.

_ttms_main() {
	set -eo pipefail
	local print_env=false arg
	while [ "$#" -gt 0 ]; do
		arg=$1
		shift
		case "$arg" in
		--skip-venv) ;;
		--print-env) print_env=true ;;
		--host | --port)
			if [ "$#" -eq 0 ] || [ -z "$1" ] || [ "${1#-}" != "$1" ]; then
				echo "run_uvicorn_equivalent.sh: $arg needs a value" >&2
				return 2
			fi
			if [ "$arg" = --host ]; then export SERVICE_HOST=$1; else export SERVICE_PORT=$1; fi
			shift
			;;
		--host=* | --port=*)
			if [ "${arg%%=*}" = --host ]; then export SERVICE_HOST=${arg#*=}; else export SERVICE_PORT=${arg#*=}; fi
			;;
		-h | --help)
			sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
			return 0
			;;
		*)
			echo "run_uvicorn_equivalent.sh: unknown argument '$arg' (the server is configured by environment variables)" >&2
			return 2
			;;
		esac
	done

	export SERVICE_HOST="${SERVICE_HOST:-0.0.0.0}"
	export SERVICE_PORT="${SERVICE_PORT:-8000}"
	case "$SERVICE_PORT" in
	'' | *[!0-9]*)
		echo "run_uvicorn_equivalent.sh: SERVICE_PORT='$SERVICE_PORT' is not a port number" >&2
		return 2
		;;
	esac

	_ttms_explain_mesh

	local bin=${TT_MEDIA_SERVER_BIN:-} here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	if [ -z "$bin" ]; then
		if [ -x "$here/tt-media-server" ] && [ ! -d "$here/tt-media-server" ]; then
			bin=$here/tt-media-server
		else
			bin=$(command -v tt-media-server || true)
		fi
	fi
	if { [ -z "$bin" ] || [ ! -x "$bin" ] || [ -d "$bin" ]; } && [ -z "${TT_MEDIA_SERVER_BIN:-}" ] &&
		[ "$print_env" = false ] && [ -f "$here/go.mod" ] && [ -d "$here/cmd/tt-media-server" ] && command -v go >/dev/null; then
		# A source checkout without a binary (a fresh clone): build it once, next to this script.
		echo "run_uvicorn_equivalent.sh: no tt-media-server binary yet; building it: (cd $here && go build -o tt-media-server ./cmd/tt-media-server)" >&2
		(cd "$here" && go build -o tt-media-server ./cmd/tt-media-server) || {
			echo "run_uvicorn_equivalent.sh: the build failed (see above)" >&2
			return 1
		}
		bin=$here/tt-media-server
	fi
	if [ -z "$bin" ] || [ ! -x "$bin" ] || [ -d "$bin" ]; then
		echo "run_uvicorn_equivalent.sh: tt-media-server binary not found (set TT_MEDIA_SERVER_BIN, put it next to this script, or on PATH); in a source checkout build it first: go build -o tt-media-server ./cmd/tt-media-server (needs Go and gcc)" >&2
		return 127
	fi

	if [ "$print_env" = true ]; then
		_ttms_print_env
		echo "exec $bin"
		return 0
	fi
	exec "$bin"
}

# _ttms_is_true is the Python server's test for TP2 / SD_3_5_*: value.lower() == "true".
_ttms_is_true() {
	[ "$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')" = true ]
}

# _ttms_explain_mesh reports on stderr which mesh override wins, and values that do nothing.
_ttms_explain_mesh() {
	local var val lower
	for var in SD_3_5_FAST SD_3_5_BASE TP2; do
		val=${!var-}
		[ -n "${!var+x}" ] || continue
		lower=$(printf '%s' "$val" | tr '[:upper:]' '[:lower:]')
		if [ "$lower" != true ] && [ "$lower" != false ] && [ -n "$lower" ]; then
			echo "run_uvicorn_equivalent.sh: warning: $var='$val' is OFF: only 'true' (any case) enables it, as in the Python server" >&2
		fi
	done
	local winner="" mesh=""
	if _ttms_is_true "${SD_3_5_FAST-}"; then
		winner=SD_3_5_FAST mesh="(4,8), 32 chips"
	elif _ttms_is_true "${SD_3_5_BASE-}"; then
		winner=SD_3_5_BASE mesh="(2,4), 8 chips"
	elif _ttms_is_true "${TP2-}"; then
		winner=TP2 mesh="(2,1), 2 chips"
	fi
	if [ -n "$winner" ]; then
		echo "run_uvicorn_equivalent.sh: $winner=true: device mesh $mesh per worker (overrides DEVICE_MESH_SHAPE and the MODEL/DEVICE preset's mesh)" >&2
		for var in SD_3_5_FAST SD_3_5_BASE TP2; do
			if [ "$var" != "$winner" ] && _ttms_is_true "${!var-}"; then
				echo "run_uvicorn_equivalent.sh: warning: $var=true is ignored: $winner takes precedence" >&2
			fi
		done
		local runner=${MODEL_RUNNER:-}
		case "${MODEL:-}" in
		stable-diffusion-xl-base-1.0) runner=tt-sdxl-trace ;;
		stable-diffusion-3.5-large) runner=tt-sd3.5 ;;
		esac
		if [ "$winner" = TP2 ] && [ -n "$runner" ] && [ "$runner" != tt-sdxl-trace ]; then
			echo "run_uvicorn_equivalent.sh: warning: TP2 is meant for SDXL (tt-sdxl-trace), not $runner" >&2
		fi
		if [ "$winner" != TP2 ] && [ -n "$runner" ] && [ "$runner" != tt-sd3.5 ]; then
			echo "run_uvicorn_equivalent.sh: warning: $winner is meant for SD3.5 (MODEL=stable-diffusion-3.5-large), not $runner" >&2
		fi
	fi
	if [ -n "${MODEL:-}" ] && [ -n "${DEVICE:-}" ]; then
		echo "run_uvicorn_equivalent.sh: MODEL=$MODEL DEVICE=$DEVICE: the server applies that preset (runner, DEVICE_IDS, mesh, batch size), overriding those variables" >&2
	elif [ -n "${MODEL:-}" ] || [ -n "${DEVICE:-}" ]; then
		echo "run_uvicorn_equivalent.sh: warning: MODEL and DEVICE select a preset only together; with one of them set, no preset is applied" >&2
	fi
}

# _ttms_print_env prints the exported environment, sorted, secrets redacted.
_ttms_print_env() {
	local name
	while IFS= read -r name; do
		case "$name" in
		*KEY* | *SECRET* | *TOKEN* | *PASSWORD* | *CREDENTIAL*)
			if [ -n "${!name}" ]; then echo "$name=***"; else echo "$name="; fi
			;;
		*) printf '%s=%s\n' "$name" "${!name}" ;;
		esac
	done < <(compgen -e | LC_ALL=C sort)
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced (`source run_uvicorn_equivalent.sh`): run in a subshell so that neither `set -e`
	# nor exec touches the caller's shell.
	(_ttms_main "$@")
	_ttms_status=$?
	unset -f _ttms_main _ttms_is_true _ttms_explain_mesh _ttms_print_env
	return "$_ttms_status"
fi
_ttms_main "$@"
