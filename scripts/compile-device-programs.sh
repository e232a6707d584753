#!/usr/bin/env bash
# compile-device-programs.sh: compile the declared device programs (runners/programs) into the
# .ttnn files the metal backend loads from MODEL_WEIGHTS_PATH, with tt-mlir, and check them
# against their declarations. See docs/DEVICE-PROGRAMS.md.
#
# CANNOT RUN HERE and has NOT been run: it needs a tt-mlir build (ttmlir-opt, ttmlir-translate,
# ttrt) at tt-mlir@19c86fca, a Tenstorrent machine for the system descriptor, and the model
# components exported to StableHLO beforehand (one STABLEHLO_DIR/<program>.stablehlo.mlir each,
# whose public function is the declared function with the declared arguments in order).
#
#   TT_MLIR_HOME=/opt/tt-mlir STABLEHLO_DIR=exported/ MODEL_WEIGHTS_PATH=/weights \
#     scripts/compile-device-programs.sh [PROGRAM...]      # default: every declared program
#
# Every declared program is compiled for its declared mesh, the Wan2.2 sets included
# (wan22-t2v-* on 2x4, wan22-t2v-720p-* on 4x8; the I2V sets too): with enable-trace=true each
# expert's denoising step becomes the trace the metal backend captures on its first run and
# replays on every later step (docs/ARCHITECTURE.md, "On the metal backend").
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TT_MLIR_HOME:?set TT_MLIR_HOME to a tt-mlir build (bin/ttmlir-opt, bin/ttmlir-translate)}"
: "${STABLEHLO_DIR:?set STABLEHLO_DIR to the exported components (<program>.stablehlo.mlir)}"
: "${MODEL_WEIGHTS_PATH:?set MODEL_WEIGHTS_PATH to the output directory}"
bin=$TT_MLIR_HOME/build/bin
[ -x "$bin/ttmlir-opt" ] || bin=$TT_MLIR_HOME/bin
for tool in ttmlir-opt ttmlir-translate; do
	[ -x "$bin/$tool" ] || { echo "compile-device-programs: $bin/$tool not found" >&2; exit 1; }
done
mkdir -p "$MODEL_WEIGHTS_PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

system_desc=${SYSTEM_DESC_PATH:-}
if [ -z "$system_desc" ]; then
	command -v ttrt >/dev/null || { echo "compile-device-programs: set SYSTEM_DESC_PATH or install ttrt" >&2; exit 1; }
	(cd "$work" && ttrt query --save-artifacts >/dev/null)
	system_desc=$work/ttrt-artifacts/system_desc.ttsys
fi

programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
	mapfile -t programs < <(go run ./runners/programs/declare | awk -F'`' 'NR>2 {print $2}' | sort -u)
fi
compiled=()
for p in "${programs[@]}"; do
	[ "$p" = sdxl-lora-fuse ] && { echo "== $p: no compiled counterpart (host-side LoRA fusion), skipped"; continue; }
	case $p in whisper-decoder-step*)
		echo "== $p: WARNING: the declared step keeps its KV cache inside the program; an export whose caches are arguments will not match it (docs/DEVICE-PROGRAMS.md, 'What a compiled Whisper decoder step needs')" ;;
	esac
	compiled+=("$p")
	src=$STABLEHLO_DIR/$p.stablehlo.mlir
	[ -f "$src" ] || { echo "compile-device-programs: $src missing (export the component first)" >&2; exit 1; }
	mesh=$(go run ./runners/programs/declare -mesh "$p")
	echo "== $p: mesh $mesh"
	"$bin/ttmlir-opt" --stablehlo-to-ttir-pipeline "$src" -o "$work/$p.ttir.mlir"
	"$bin/ttmlir-opt" --ttir-to-ttnn-runtime-pipeline="system-desc-path=$system_desc mesh-shape=$mesh enable-trace=true enable-const-eval=true" \
		"$work/$p.ttir.mlir" -o "$work/$p.ttnn.mlir"
	"$bin/ttmlir-translate" --ttnn-to-flatbuffer "$work/$p.ttnn.mlir" -o "$MODEL_WEIGHTS_PATH/$p.ttnn"
done
# Every file against its declaration (mesh, dtype, shape, layout, placement), without a device.
go run ./runners/programs/declare -check "$MODEL_WEIGHTS_PATH" "${compiled[@]}"
