#!/usr/bin/env bash
# install-golangci-lint.sh: build the pinned golangci-lint once per machine and print its path.
#
# The version is pinned by tools/go.mod (a module of its own, so the linter's ~300 dependencies
# stay out of the server's go.mod); it is built from the Go module proxy with `go build` into
# ${TT_TOOLS_CACHE:-~/.cache/tt-media-server-go}/golangci-lint-<version>/ (about 3 minutes on
# 2 cores, the first time) and reused by every clone on the machine, CI's included.
# GOLANGCI_LINT=/path/to/golangci-lint uses an existing binary instead (it must be the pinned
# version).
set -euo pipefail
cd "$(dirname "$0")/../tools"

version=$(go list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2)
if [ -n "${GOLANGCI_LINT:-}" ]; then
	bin=$GOLANGCI_LINT
else
	dir=${TT_TOOLS_CACHE:-$HOME/.cache/tt-media-server-go}/golangci-lint-$version
	bin=$dir/golangci-lint
	if [ ! -x "$bin" ]; then
		echo "building golangci-lint $version into $dir (once per machine) ..." >&2
		mkdir -p "$dir"
		nice -n 10 go build -trimpath -o "$bin.tmp" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
		mv "$bin.tmp" "$bin"
	fi
fi
got=$("$bin" version --short 2>/dev/null || "$bin" --version)
case "$got" in
*"${version#v}"*) ;;
*) echo "golangci-lint at $bin is $got, tools/go.mod pins $version" >&2; exit 1 ;;
esac
echo "$bin"
