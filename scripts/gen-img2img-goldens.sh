#!/usr/bin/env bash
# Generates the golden data of the SDXL image-to-image and inpainting host maths (issue 18,
# items 5) into $TT_GOLDEN_DIR/img2img (default ~/.cache/tt-media-server-go/goldens/img2img;
# never into the repository), where runners/diffusion/imageproc's and samplers' tests find it
# (internal/shareddata).
#
#   scripts/gen-img2img-goldens.sh DIFFUSERS_SRC [OUT_DIR]
#
# DIFFUSERS_SRC  a huggingface/diffusers checkout, or its bare git directory (the script then
#                reads the files at $DIFFUSERS_COMMIT with `git show`). Nothing is downloaded.
# OUT_DIR        default: $TT_GOLDEN_DIR/img2img, ~/.cache/tt-media-server-go/goldens/img2img.
#
# The upstream files run unchanged from a scratch directory inside a minimal package shim (as
# ../shared/testdata/README.md describes for the scheduler goldens): image_processor.py
# (VaeImageProcessor), configuration_utils.py, schedulers/scheduling_euler_discrete.py and
# scheduling_utils.py, utils/outputs.py and utils/pil_utils.py. Functions that live in modules
# too heavy to import (the pipelines' get_timesteps and prepare_mask_latents, vae.py's
# DiagonalGaussianDistribution, torch_utils' randn_tensor) are taken out of the upstream file with
# Python's ast module and executed as written. No stub is on the computation path.
#
# Needs Debian's python3-torch, python3-numpy, python3-pil, python3-packaging and
# python3-typing-extensions (installed with apt-get if missing).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=${1:?usage: gen-img2img-goldens.sh DIFFUSERS_SRC [OUT_DIR]}
OUT=${2:-${TT_GOLDEN_DIR:-$HOME/.cache/tt-media-server-go/goldens}/img2img}
DIFFUSERS_COMMIT=${DIFFUSERS_COMMIT:-58eb52c0803ea9af3abec60841c2a093bdf1f951}
PY=/usr/bin/python3

# shellcheck source=scripts/diffusers-shim.sh
. "$(dirname "$0")/diffusers-shim.sh"
ensure_python_debs 'torch, numpy, PIL, packaging, typing_extensions' python3-torch python3-numpy python3-pil python3-packaging python3-typing-extensions

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gen-img2img-goldens.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

D=$TMP/pkg/diffusers
for f in configuration_utils.py image_processor.py schedulers/scheduling_euler_discrete.py \
	schedulers/scheduling_utils.py utils/outputs.py utils/pil_utils.py; do
	getsrc "src/diffusers/$f" "$D/$f"
done
getsrc src/diffusers/pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl_img2img.py "$TMP/up/img2img.py"
getsrc src/diffusers/pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl_inpaint.py "$TMP/up/inpaint.py"
getsrc src/diffusers/models/autoencoders/vae.py "$TMP/up/vae.py"
getsrc src/diffusers/utils/torch_utils.py "$TMP/up/torch_utils.py"
COMMIT=$( (git --git-dir="$SRC" rev-parse "$DIFFUSERS_COMMIT^{commit}" 2>/dev/null || git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown) | head -1)

diffusers_shim 'from .pil_utils import PIL_INTERPOLATION'

# Synthetic inputs drawn with Pillow (kept beside the goldens, so the Go tests decode the same
# bytes): an RGB photo-like gradient with shapes (downscaled 160x120 -> 96x64, aspect change),
# a small RGB image (upscaled 40x24 -> 96x64), an RGB image already at the target size, and
# masks: a grayscale disc with soft edges (downscaled), a hard-edged rectangle (upscaled).
cd "$TMP"
PYTHONPATH="$TMP/pkg" $PY - "$OUT" "$TMP" <<'EOF'
import ast, json, math, os, sys, types
import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFilter
from diffusers.image_processor import VaeImageProcessor
from diffusers.schedulers.scheduling_euler_discrete import EulerDiscreteScheduler

out, tmp = sys.argv[1], sys.argv[2]

def take(path, name, cls=None):
    src = open(path).read()
    body = ast.parse(src).body
    if cls is not None:
        body = next(n for n in body if getattr(n, "name", None) == cls).body
    for node in body:
        if getattr(node, "name", None) == name:
            return ast.get_source_segment(src, node)
    raise KeyError(name)

def method(path, cls, name, ns):
    import textwrap
    exec(compile(textwrap.dedent(take(path, name, cls)), path, "exec"), ns)
    return ns[name]

from diffusers.utils.torch_utils import randn_tensor
ns = {"torch": torch, "randn_tensor": randn_tensor}
get_timesteps = method(tmp + "/up/img2img.py", "StableDiffusionXLImg2ImgPipeline", "get_timesteps", ns)
prepare_mask_latents = method(tmp + "/up/inpaint.py", "StableDiffusionXLInpaintPipeline", "prepare_mask_latents", ns)
exec(compile(take(tmp + "/up/vae.py", "DiagonalGaussianDistribution"), "vae.py", "exec"), ns)
DiagonalGaussianDistribution = ns["DiagonalGaussianDistribution"]

SDXL = {"num_train_timesteps": 1000, "beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear",
        "trained_betas": None, "prediction_type": "epsilon", "interpolation_type": "linear", "use_karras_sigmas": False,
        "timestep_spacing": "leading", "steps_offset": 1}

def f32(a):
    return [float(x) for x in np.asarray(a, dtype=np.float32).reshape(-1)]

def dump(name, data):
    with open(os.path.join(out, name), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

def raw(name, t):
    np.asarray(t, dtype="<f4").tofile(os.path.join(out, name))

# 1. get_timesteps (strength -> start) on the SDXL Euler schedule.
runs = []
for n in (1, 2, 4, 10, 12, 20, 30, 50):
    for strength in (0.0, 0.05, 0.1, 0.29, 0.3, 0.5, 0.6, 0.7, 0.75, 0.95, 0.9999, 1.0):
        s = EulerDiscreteScheduler.from_config(SDXL)
        s.set_timesteps(n)
        self = types.SimpleNamespace(scheduler=s)
        ts, steps = get_timesteps(self, n, strength, "cpu")
        runs.append({"num_inference_steps": n, "strength": strength, "steps": int(steps),
                     "begin_index": s.begin_index, "timesteps": f32(ts),
                     "sigmas_from_begin": f32(s.sigmas[s.begin_index:])})

# 2. add_noise at the start timestep (img2img, inpainting strength < 1), and after a first step
#    at the next timestep (the 4-channel inpainting blend), on closed-form inputs.
C, H, W = 4, 2, 3
idx = torch.arange(C * H * W, dtype=torch.float32).reshape(1, C, H, W)
orig = torch.sin(idx * 0.37) * 0.8
noise = torch.cos(idx * 0.23 + 0.5)
model_out = torch.sin(idx * 0.11 + 1.0) * 0.5
adds = []
for n, strength in ((20, 0.6), (30, 0.3), (12, 1.0), (50, 0.75)):
    s = EulerDiscreteScheduler.from_config(SDXL)
    s.set_timesteps(n)
    ts, steps = get_timesteps(types.SimpleNamespace(scheduler=s), n, strength, "cpu")
    start = s.add_noise(orig, noise, ts[:1].repeat(1))
    latents = start
    if strength == 1.0:
        latents = noise * s.init_noise_sigma
    x = s.scale_model_input(latents, ts[0])
    prev = s.step(model_out, ts[0], latents, return_dict=False)[0]
    nxt = s.add_noise(orig, noise, torch.tensor([ts[1]])) if len(ts) > 1 else orig
    adds.append({"num_inference_steps": n, "strength": strength, "start": f32(start),
                 "init_noise_sigma": float(s.init_noise_sigma), "scaled_input": f32(x),
                 "step0_prev": f32(prev), "blend_noised_next": f32(nxt)})
dump("schedule.json", {"diffusers_commit": None, "scheduler_config": SDXL, "get_timesteps": runs,
     "add_noise": {"shape": [1, C, H, W], "original": f32(orig), "noise": f32(noise), "model_output": f32(model_out),
                   "runs": adds}})

# 3. Image preprocessing (VaeImageProcessor defaults: lanczos resize to the model size, /255,
#    2x-1) and mask preprocessing (grayscale, lanczos resize, /255, binarize at 0.5), then the
#    masked image and prepare_mask_latents' nearest interpolation to the latent size.
def photo(w, h):
    im = Image.new("RGB", (w, h))
    px = im.load()
    for y in range(h):
        for x in range(w):
            px[x, y] = ((x * 255) // max(w - 1, 1), (y * 255) // max(h - 1, 1), ((x + y) * 7) % 256)
    d = ImageDraw.Draw(im)
    d.ellipse((w // 5, h // 6, w // 2, h // 2), fill=(250, 240, 20))
    d.rectangle((w // 2, h // 2, w - w // 8, h - h // 10), fill=(10, 30, 200))
    d.line((0, h - 1, w - 1, 0), fill=(255, 255, 255), width=3)
    return im

images = {"photo_160x120.png": photo(160, 120), "small_40x24.png": photo(40, 24), "exact_96x64.png": photo(96, 64)}
disc = Image.new("L", (160, 120), 0)
ImageDraw.Draw(disc).ellipse((40, 20, 120, 100), fill=255)
masks = {"disc_soft_160x120.png": disc.filter(ImageFilter.GaussianBlur(6)),
         "rect_40x24.png": Image.new("L", (40, 24), 0)}
ImageDraw.Draw(masks["rect_40x24.png"]).rectangle((10, 5, 29, 17), fill=255)
for name, im in list(images.items()) + list(masks.items()):
    im.save(os.path.join(out, name))

TW, TH = 96, 64
ip = VaeImageProcessor(vae_scale_factor=8)
mp = VaeImageProcessor(vae_scale_factor=8, do_normalize=False, do_binarize=True, do_convert_grayscale=True)
cases = []
for name in images:
    im = Image.open(os.path.join(out, name))
    t = ip.preprocess(im, height=TH, width=TW)
    raw(name + ".pre.f32", t.numpy())
    cases.append({"kind": "image", "input": name, "shape": list(t.shape), "golden": name + ".pre.f32"})
for name in masks:
    im = Image.open(os.path.join(out, name))
    m = mp.preprocess(im, height=TH, width=TW)
    raw(name + ".mask.f32", m.numpy())
    self = types.SimpleNamespace(vae_scale_factor=8)
    ml, _ = prepare_mask_latents(self, m, None, 1, TH, TW, torch.float32, "cpu", None, True)
    raw(name + ".mask_latent.f32", ml[:1].numpy())
    img = ip.preprocess(Image.open(os.path.join(out, "photo_160x120.png")), height=TH, width=TW)
    raw(name + ".masked_photo.f32", (img * (m < 0.5)).numpy())
    cases.append({"kind": "mask", "input": name, "shape": list(m.shape), "golden": name + ".mask.f32",
                  "latent_shape": list(ml[:1].shape), "latent_golden": name + ".mask_latent.f32",
                  "masked_image_of": "photo_160x120.png", "masked_golden": name + ".masked_photo.f32"})
dump("preprocess.json", {"target": [TH, TW], "cases": cases,
     "image_processor": dict(ip.config), "mask_processor": dict(mp.config)})

# 4. VAE latent sampling: DiagonalGaussianDistribution(moments).sample(generator) times the
#    SDXL scaling factor, then the add_noise noise drawn from the same generator (the order of
#    StableDiffusionXLImg2ImgPipeline.prepare_latents).
moments = torch.cat([torch.sin(torch.arange(4 * 4 * 6, dtype=torch.float32) * 0.19).reshape(1, 4, 4, 6) * 3,
                     torch.cos(torch.arange(4 * 4 * 6, dtype=torch.float32) * 0.07).reshape(1, 4, 4, 6) * 40 - 10], dim=1)
samples = []
for seed in (0, 42, 1234567):
    g = torch.Generator("cpu").manual_seed(seed)
    lat = DiagonalGaussianDistribution(moments).sample(g) * 0.13025
    noise2 = randn_tensor(lat.shape, generator=g, device=torch.device("cpu"), dtype=torch.float32)
    samples.append({"seed": seed, "latents": f32(lat), "noise": f32(noise2)})
dump("vae_sample.json", {"moments_shape": [1, 8, 4, 6], "moments": f32(moments), "scaling_factor": 0.13025,
     "runs": samples})
EOF

TORCH=$(dpkg-query -W -f='${Version}' python3-torch 2>/dev/null || echo unknown)
PILV=$(dpkg-query -W -f='${Version}' python3-pil 2>/dev/null || echo unknown)
sed -i "s/\"diffusers_commit\": null/\"diffusers_commit\": \"$COMMIT\"/" "$OUT/schedule.json"
cat >"$OUT/README.md" <<EOF
# SDXL image-to-image / inpainting host goldens

Made by \`scripts/gen-img2img-goldens.sh\` of tt-media-server-go from huggingface/diffusers
$COMMIT (run from a scratch directory, not stored), Debian python3-torch $TORCH, python3-pil $PILV.

| file | what |
| --- | --- |
| \`schedule.json\` | \`get_timesteps\` of StableDiffusionXLImg2ImgPipeline on the SDXL EulerDiscreteScheduler for steps x strength (timesteps, steps, begin_index, sigmas from it); \`add_noise\` at the start timestep, \`scale_model_input\`, one \`step\` and the inpainting blend's \`add_noise\` at the next timestep on closed-form inputs |
| \`*.png\` | synthetic inputs drawn with Pillow |
| \`<image>.pre.f32\` | VaeImageProcessor(vae_scale_factor=8).preprocess(image, 64, 96): [1,3,64,96] float32 |
| \`<mask>.mask.f32\` | the inpainting mask processor (grayscale, binarize, no normalize): [1,1,64,96] |
| \`<mask>.mask_latent.f32\` | prepare_mask_latents' nearest interpolation to [1,1,8,12] |
| \`<mask>.masked_photo.f32\` | preprocessed photo_160x120.png * (mask < 0.5) |
| \`vae_sample.json\` | DiagonalGaussianDistribution(moments).sample(generator) * 0.13025, then the noise drawn next from the same generator |

Raw \`.f32\` files are little-endian float32, C order. Generated data from Apache-2.0 code.
EOF
echo "wrote $(ls "$OUT" | wc -l) files to $OUT" >&2
