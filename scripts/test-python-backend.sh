#!/usr/bin/env bash
# The suites that run on Python workers (DEVICE_BACKEND=python) hosting the fake runners of
# workers/python/fakes as subclasses of HEAD's REAL classes (TT_TEST_PYTHON_ROAD=head: HEAD's
# BaseDeviceRunner, request models and Settings from ../shared/tt-media-server-head, with the
# pyenv python3 that has pydantic 2; e2e.HeadRoad): every SDK conformance suite (official
# openai-go and openai npm clients: images, edits, image streams, audio, speech streams, video;
# tests/sdk), the chaos storm (tests/chaos_test.go), the Python-worker fault tests (SIGKILL,
# SIGSTOP, GIL held, abort, canary, warm-up failure, cancel), the restart/revive tests and the
# image streaming tests, and every catalogued runner name (TestPythonEveryRunner). go test ./...
# runs the tests/ ones on our plain stand-ins of HEAD's classes (no pydantic, Debian's python3),
# and the SDK suites on the Go mock runners. CI runs it after go test (.ci/run); under CI=true a
# test that skips (a missing tool: node, the npm package, HEAD's tree, pydantic 2) fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-python-worker-deps.sh
export TT_TEST_PYTHON_ROAD=head

# gotest runs go test; under CI=true through .ci/testsummary.go, which fails on a skip that
# .ci/allowed-skips.txt does not allow.
gotest() {
  if [ "${CI:-}" = true ]; then
    go test -json "$@" 2>&1 | go run .ci/testsummary.go -allow .ci/allowed-skips.txt
  else
    go test "$@"
  fi
}

# Every SDK suite, each server of it on Python workers.
TT_TEST_DEVICE_BACKEND=python gotest -count=1 -timeout 30m "$@" ./tests/sdk/
# The chaos storm (random device errors, aborting workers, client hang-ups, deadlines, overload).
TT_TEST_DEVICE_BACKEND=python gotest -count=1 -timeout 30m "$@" -run '^TestChaosOnSimulator$' ./tests/
# The Python-worker tests, the fault, restart and revive tests and image streaming, and every
# catalogued runner name (the tests that already run both roads in go test ./... do so here too).
gotest -count=1 -timeout 30m "$@" -run 'Python|ImageStream|^TestKilledIdleWorkerComesBack$|^TestFailedWorkerRevivedByReset$' ./tests/ ./runners/procrunner/
