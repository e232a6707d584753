#!/usr/bin/env bash
# The suites that run on Python workers (DEVICE_BACKEND=python, hosting the fake runners of
# workers/python/fakes): the SDK conformance suites (official openai-go and openai npm clients,
# tests/sdk) and the chaos storm (tests/chaos_test.go) with every server on Python workers, plus
# the Python-worker end-to-end tests and
# protocol tests that `go test ./...` already runs. CI runs it after go test (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-python-worker-deps.sh
TT_TEST_DEVICE_BACKEND=python go test -count=1 "$@" ./tests/sdk/
# The chaos storm (random device errors, aborting workers, client hang-ups, deadlines, overload).
TT_TEST_DEVICE_BACKEND=python go test -count=1 "$@" -run '^TestChaosOnSimulator$' ./tests/
go test -count=1 "$@" -run 'Python|ImageStream' ./tests/ ./runners/procrunner/
# Every catalogued runner name once more on HEAD's real classes (go test ./... serves them on the
# plain stand-ins: a HEAD-road worker imports torch, seconds of CPU each).
TT_TEST_PYTHON_ROAD=head go test -count=1 "$@" -run '^TestPythonEveryRunner$' ./tests/
# The Go SDK's image/audio/CNN suite and both speech and the Go video SDK suites on HEAD's road too
# (the rest of the SDK suites and the chaos storm run on the plain road only, above).
TT_TEST_PYTHON_ROAD=head TT_TEST_DEVICE_BACKEND=python go test -count=1 "$@" -run '^(TestGoSDK|TestSpeechSDKs|TestGoSDKVideo)$' ./tests/sdk/
