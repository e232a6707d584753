#!/usr/bin/env bash
# Runs every go test -fuzz target of the project for FUZZTIME each (default 5m), one after the
# other, and prints one line per target. Not part of `go test ./...`: long fuzzing is run by hand.
# FUZZMINIMIZETIME (default 5s; Go's own default is 60s) bounds how long a worker shrinks each
# new interesting input: with multi-kilobyte seeds (the Ogg Vorbis/Opus targets of media/audio)
# the 60 s default left the workers minimising most of the time, at a few execs per second.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-5m}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-5s}
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $target ($FUZZTIME)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" 2>&1 | grep -E 'elapsed|FAIL|failing input|panic' | tail -2
  done
done
