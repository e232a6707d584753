#!/usr/bin/env bash
# Image-to-image / inpainting input preprocessing, ours against Pillow, side by side in one run
# on one core (taskset -c ${CPU:-1}): a 1920x1080 RGB image to SDXL's 1024x1024 in [-1, 1]
# (diffusers' VaeImageProcessor.preprocess: Lanczos resize, /255, 2x-1), and a 1920x1080
# grayscale mask to 1024x1024 binarised. Pillow is Debian's python3-pil with numpy; the same
# picture is drawn on both sides. Prints ms per call and the ratio Pillow/ours (> 1: we are faster).
#   scripts/bench-img2img-preprocess.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CPU=${CPU:-1}
PY=/usr/bin/python3
$PY -c 'import PIL, numpy' 2>/dev/null || scripts/apt-ensure.sh python3:python3-pil
go_ms() {
	taskset -c "$CPU" go test -run '^$' -bench "^$1\$" -benchtime 20x -count 3 ./runners/diffusion/imageproc/ |
		awk -v n="$1" '$1 ~ "^"n {ns=$3; if (best=="" || ns<best) best=ns} END {printf "%.2f", best/1e6}'
}
read -r pil_img pil_mask < <(taskset -c "$CPU" $PY - <<'PYEOF'
import time
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
def best(f, arg, n=20):
    t = []
    for _ in range(3):
        s = time.perf_counter()
        for _ in range(n):
            f(arg)
        t.append((time.perf_counter() - s) / n)
    return min(t) * 1000
print("%.2f %.2f" % (best(pre, img), best(pre_mask, mask)))
PYEOF
)
ours_img=$(go_ms BenchmarkPreprocess)
ours_mask=$(go_ms BenchmarkPreprocessMask)
printf 'image 1920x1080 -> 1024x1024: Pillow %s ms, ours %s ms, ratio %.2f\n' "$pil_img" "$ours_img" "$(echo "$pil_img / $ours_img" | bc -l)"
printf 'mask  1920x1080 -> 1024x1024: Pillow %s ms, ours %s ms, ratio %.2f\n' "$pil_mask" "$ours_mask" "$(echo "$pil_mask / $ours_mask" | bc -l)"
