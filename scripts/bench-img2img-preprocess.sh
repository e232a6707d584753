#!/usr/bin/env bash
# Image-to-image / inpainting input preprocessing, ours against Pillow, side by side in one run:
# a 1920x1080 RGB image to SDXL's 1024x1024 in [-1, 1] (diffusers' VaeImageProcessor.preprocess:
# Lanczos resize, /255, 2x-1, HWC->CHW), and a 1920x1080 grayscale mask to 1024x1024 binarised.
# Pillow is Debian's python3-pil with numpy; the same pictures are drawn on both sides, and the
# Go benchmarks first check that their outputs are bit-identical to Pillow's (they fail if not).
# Two settings: both sides pinned to one core (taskset -c ${CPU:-1}; the fair per-core figure,
# wall and CPU time per call) and both unpinned (the default: the whole box). Each figure is the
# best of 3 runs of 20 calls. Prints ms per call and the ratio Pillow/ours (> 1: we are faster).
#   scripts/bench-img2img-preprocess.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CPU=${CPU:-1}
PY=/usr/bin/python3
$PY -c 'import PIL, numpy' 2>/dev/null || scripts/apt-ensure.sh python3:python3-pil python3:python3-numpy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/imageproc.test" ./runners/diffusion/imageproc/

pillow() { # $1: command prefix (taskset or nothing); $2: where to write Pillow's outputs, or ""
	$1 $PY - "$2" <<'PYEOF'
import sys, time
import numpy as np
from PIL import Image
w, h = 1920, 1080
x = np.arange(w)[None, :].repeat(h, 0); y = np.arange(h)[:, None].repeat(w, 1)
rgb = np.stack([(x * 255 // 1919), (y * 255 // 1079), ((x + y) * 7) % 256], -1).astype(np.uint8)
img = Image.fromarray(rgb, "RGB")
mask = Image.fromarray((np.arange(w * h) % 251).astype(np.uint8).reshape(h, w), "L")
def pre(im):
    a = np.array(im.resize((1024, 1024), Image.LANCZOS)).astype(np.float32) / 255.0
    return 2.0 * a.transpose(2, 0, 1) - 1.0
def pre_mask(m):
    a = np.array(m.resize((1024, 1024), Image.LANCZOS)).astype(np.float32) / 255.0
    return (a >= 0.5).astype(np.float32)
if sys.argv[1]:
    np.ascontiguousarray(pre(img), dtype="<f4").tofile(sys.argv[1] + "/image.f32")
    np.ascontiguousarray(pre_mask(mask), dtype="<f4").tofile(sys.argv[1] + "/mask.f32")
def best(f, arg, n=20):
    wall, cpu = [], []
    for _ in range(3):
        s, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            f(arg)
        wall.append((time.perf_counter() - s) / n)
        cpu.append((time.process_time() - c) / n)
    return "%.2f %.2f" % (min(wall) * 1000, min(cpu) * 1000)
print(best(pre, img), best(pre_mask, mask))
PYEOF
}

ours() { # $1: command prefix; prints image wall, image cpu, mask wall, mask cpu (ms)
	$1 "$work/imageproc.test" -test.run '^$' -test.bench '^BenchmarkPreprocess(Mask)?$' -test.benchtime 20x \
		-test.count 3 -pillow-ref "$work" |
		awk '/^BenchmarkPreprocess/ {n=$1; sub(/-[0-9]+$/, "", n); w=$3; c=$5
			if (!(n in bw) || w < bw[n]) bw[n]=w; if (!(n in bc) || c < bc[n]) bc[n]=c}
			/FAIL|not bit-identical/ {print > "/dev/stderr"; bad=1}
			END {if (bad || !("BenchmarkPreprocess" in bw)) exit 1
				printf "%.2f %.2f %.2f %.2f\n", bw["BenchmarkPreprocess"]/1e6, bc["BenchmarkPreprocess"]/1e6,
					bw["BenchmarkPreprocessMask"]/1e6, bc["BenchmarkPreprocessMask"]/1e6}'
}

ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; Pillow $($PY -c 'import PIL; print(PIL.__version__)')"
read -r p1iw p1ic p1mw p1mc < <(pillow "taskset -c $CPU" "$work")
read -r o1iw o1ic o1mw o1mc < <(ours "taskset -c $CPU")
read -r pdiw _ pdmw _ < <(pillow "" "")
read -r odiw _ odmw _ < <(ours "")
echo "outputs: bit-identical to Pillow's (image [3,1024,1024] and mask [1,1024,1024] float32)"
printf '%-34s %-8s %10s %10s %8s\n' case setting "Pillow ms" "ours ms" ratio
printf '%-34s %-8s %10s %10s %8s\n' "image 1920x1080 -> 1024x1024" "1 core" "$p1iw" "$o1iw" "$(ratio "$p1iw" "$o1iw")"
printf '%-34s %-8s %10s %10s %8s\n' "image 1920x1080 -> 1024x1024" "1 cpu" "$p1ic" "$o1ic" "$(ratio "$p1ic" "$o1ic")"
printf '%-34s %-8s %10s %10s %8s\n' "image 1920x1080 -> 1024x1024" "default" "$pdiw" "$odiw" "$(ratio "$pdiw" "$odiw")"
printf '%-34s %-8s %10s %10s %8s\n' "mask  1920x1080 -> 1024x1024" "1 core" "$p1mw" "$o1mw" "$(ratio "$p1mw" "$o1mw")"
printf '%-34s %-8s %10s %10s %8s\n' "mask  1920x1080 -> 1024x1024" "1 cpu" "$p1mc" "$o1mc" "$(ratio "$p1mc" "$o1mc")"
printf '%-34s %-8s %10s %10s %8s\n' "mask  1920x1080 -> 1024x1024" "default" "$pdmw" "$odmw" "$(ratio "$pdmw" "$odmw")"
echo "(1 core: wall time, both pinned with taskset -c $CPU; 1 cpu: CPU time of the same pinned runs; default: wall time, unpinned)"
