#!/usr/bin/env bash
# check-metal.sh: build, vet and test the metal backend (ttnn/ttb_metal.cc, build tag `ttnn`)
# against tt-mlir's real runtime API — the pinned headers and schemas in ../shared/tt-mlir-sdk
# (see its README) — and run it over the project's fake of tt::runtime (ttnn/fakert).
#
#   1. installs Debian flatbuffers-compiler and libflatbuffers-dev (flatc 2.0.8) if missing;
#   2. generates the flatbuffer headers the runtime headers include (Common, TTNN schemas and
#      tt/runtime/flatbuffer/types.fbs, tt-mlir's own flatc flags) into a build directory;
#   3. builds ttnn/fakert/fake_runtime.cc into libTTMLIRRuntime.so there (-Werror,
#      -Wl,--no-undefined: every symbol it needs is in libstdc++);
#   4. `go vet` and `go build` of the whole module with -tags ttnn, the metal backend's C++
#      compiled with -Wall -Wextra -Wpedantic -Werror (the SDK headers are -isystem), linked
#      against the fake (CGO_LDFLAGS -L/-rpath);
#   5. `go test -tags ttnn` of $CHECK_METAL_PKGS (default: ./ttnn/... ./runners/programs/ ./runners/resnet/
#      ./runners/diffusion/diffusionrunner/ ./runners/whisper/whisperrunner/ ./runners/wan/ ./runners/wan/t2v/
#      ./cmd/...):
#      the tests that open DEVICE_BACKEND=metal run the backend over the fake;
#   6. the server binary built with -tags ttnn runs tests/metal_test.go: a resnet50.ttnn that
#      differs from its declaration fails the worker at once with one line; the declared one
#      warms up and serves /cnn/search-image; the same for SDXL and SD3.5 (.ttnn programs for
#      the text encoders, the UNet/MMDiT step and the VAE) serving /v1/images/generations, and
#      for Whisper (whisper-encoder and whisper-decoder-step) serving /v1/audio/transcriptions; a
#      wan22-t2v-transformer.ttnn that differs from its declaration stops tt-wan2.2's start-up;
#   7. scripts/check-metal-mutants.sh: four deliberate mistakes in patched copies of
#      ttb_metal.cc (wrong argument type, a freed tensor reused, a wrong layout, a tensor on the
#      wrong submesh) and four in the Wan2.2 T2V metal path (CFG collapsed, the expert switch
#      ignored, no declaration check, an integer timestep) must be caught by the compiler, by
#      the fake or by the Wan metal test.
#
# Without ../shared/tt-mlir-sdk it says so and exits 0 — except under CI=true, where a missing
# SDK or a tool that cannot be installed fails the run. TT_MLIR_SDK overrides the SDK path;
# CHECK_METAL_BUILD the build directory (default ~/.cache/tt-media-server-go/metal-build,
# regenerated each run, never committed).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
sdk=${TT_MLIR_SDK:-$root/../shared/tt-mlir-sdk}
build=${CHECK_METAL_BUILD:-${TT_TOOLS_CACHE:-$HOME/.cache/tt-media-server-go}/metal-build}
pkgs=${CHECK_METAL_PKGS:-./ttnn/... ./runners/programs/ ./runners/resnet/ ./runners/diffusion/diffusionrunner/ ./runners/whisper/whisperrunner/ ./runners/wan/ ./runners/wan/t2v/ ./cmd/...}

fail_or_skip() {
	if [ "${CI:-}" = true ]; then
		echo "check-metal: FAIL (CI=true): $*" >&2
		exit 1
	fi
	echo "check-metal: SKIP: $* (the metal backend was not built or tested)"
	exit 0
}

[ -d "$sdk/runtime/include/tt/runtime" ] && [ -d "$sdk/include/ttmlir/Target" ] ||
	fail_or_skip "tt-mlir SDK headers not found at $sdk (../shared/tt-mlir-sdk beside the repository)"

if ! command -v flatc >/dev/null || [ ! -f /usr/include/flatbuffers/flatbuffers.h ] || ! command -v g++ >/dev/null; then
	if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
		fail_or_skip "flatc, libflatbuffers-dev or g++ missing and not root (apt-get install flatbuffers-compiler libflatbuffers-dev g++)"
	fi
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	echo "== check-metal: installing flatbuffers-compiler libflatbuffers-dev g++"
	export DEBIAN_FRONTEND=noninteractive
	# Wait for another apt run to finish instead of failing on its lock.
	apt_get() { $SUDO apt-get -o DPkg::Lock::Timeout=600 "$@"; }
	apt_get install -y -qq --no-install-recommends flatbuffers-compiler libflatbuffers-dev g++ >/dev/null 2>&1 ||
		{ apt_get update -qq && apt_get install -y -qq --no-install-recommends flatbuffers-compiler libflatbuffers-dev g++ >/dev/null; } ||
		fail_or_skip "could not install flatbuffers-compiler libflatbuffers-dev g++"
fi
echo "== check-metal: $(flatc --version), $(g++ --version | head -1)"

rm -rf "$build"
gen=$build/gen lib=$build/lib
mkdir -p "$gen" "$lib"
echo "== check-metal: generating flatbuffer headers from $sdk into $gen"
flags=(--bfbs-gen-embed --cpp --cpp-std c++17 --scoped-enums --warnings-as-errors --keep-prefix --gen-name-strings --gen-object-api)
(cd "$sdk/include" && find ttmlir/Target/Common ttmlir/Target/TTNN -name '*.fbs' | sort) | while read -r f; do
	flatc -I "$sdk/include" "${flags[@]}" -o "$gen/$(dirname "$f")/" "$sdk/include/$f"
done
flatc -I "$sdk/include" "${flags[@]}" -o "$gen/tt/runtime/flatbuffer/" "$sdk/runtime/include/tt/runtime/flatbuffer/types.fbs"

echo "== check-metal: building the fake tt::runtime (ttnn/fakert) into $lib/libTTMLIRRuntime.so"
nice -n 10 g++ -std=c++20 -O1 -fPIC -shared -Wall -Wextra -Wpedantic -Werror \
	-isystem "$sdk/runtime/include" -isystem "$gen" \
	ttnn/fakert/fake_runtime.cc -o "$lib/libTTMLIRRuntime.so" -Wl,--no-undefined

export CGO_ENABLED=1
export CGO_CPPFLAGS="-isystem $sdk/runtime/include -isystem $gen"
export CGO_CXXFLAGS="-O2 -Wall -Wextra -Wpedantic -Werror"
export CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib"
echo "== check-metal: go vet -tags ttnn ./..."
nice -n 10 go vet -tags ttnn ./...
echo "== check-metal: go build -tags ttnn ./..."
nice -n 10 go build -tags ttnn ./...
if [ -x scripts/install-golangci-lint.sh ]; then
	# The untagged lint in .ci/run does not see the files behind the tag.
	echo "== check-metal: golangci-lint --build-tags ttnn (the tagged packages)"
	nice -n 10 "$(scripts/install-golangci-lint.sh)" run --allow-parallel-runners --build-tags ttnn \
		./ttnn/... ./runners/programs/... ./runners/resnet/... ./runners/diffusion/... ./runners/whisper/whisperrunner/... ./runners/wan/... ./tests/
fi
echo "== check-metal: go test -tags ttnn $pkgs (metal over the fake runtime)"
if [ -f .ci/testsummary.go ]; then
	# go test's closing lines and every skip; a skip .ci/allowed-skips.txt does not allow fails.
	# shellcheck disable=SC2086
	nice -n 10 go test -tags ttnn -count=1 -timeout 15m -json $pkgs 2>&1 | go run .ci/testsummary.go -allow .ci/allowed-skips.txt
else
	# shellcheck disable=SC2086
	nice -n 10 go test -tags ttnn -count=1 -timeout 15m $pkgs
fi
echo "== check-metal: conformance case counts per backend"
nice -n 10 go test -tags ttnn -count=1 -run '^TestConformance$' -v ./ttnn/ | grep -o 'conformance [a-z]*: .*'
echo "== check-metal: the real binary (-tags ttnn, over the fake) serving ResNet-50, SDXL, SD3.5 and Whisper, and refusing a mismatched Wan2.2 program, with DEVICE_BACKEND=metal"
mkdir -p "$build/bin"
nice -n 10 go build -tags ttnn -o "$build/bin/tt-media-server" ./cmd/tt-media-server
TT_MEDIA_SERVER_E2E_BINARY=$build/bin/tt-media-server nice -n 10 go test -tags ttnn -count=1 -run '^TestMetal' -v ./tests/ |
	grep -E '^(=== RUN|--- |\s+--- |ok|FAIL|PASS)|metal_test.go' | cut -c1-400
echo "== check-metal: deliberate mistakes in copies of the backend must be caught"
nice -n 10 scripts/check-metal-mutants.sh "$build" "$sdk"
echo "== check-metal: OK"
