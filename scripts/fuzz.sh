#!/usr/bin/env bash
# Runs every go test -fuzz target of the project for FUZZTIME each (default 5m), one after the
# other, and prints one line per target. Not part of `go test ./...`: long fuzzing is run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-5m}
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $target ($FUZZTIME)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | grep -E 'elapsed|FAIL|failing input|panic' | tail -2
  done
done
