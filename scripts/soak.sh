#!/usr/bin/env bash
# Soak: the chaos tests with CHAOS_SCALE times the load, repeated ROUNDS times. Not part of
# `go test ./...` (which runs them once at scale 1). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
export CHAOS_SCALE=${CHAOS_SCALE:-10}
ROUNDS=${ROUNDS:-3}
go test -count="$ROUNDS" -timeout 60m -run 'TestChaos' -v ./scheduler ./tests 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL)|outcomes|admitted'
