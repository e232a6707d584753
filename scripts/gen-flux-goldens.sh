#!/usr/bin/env bash
# Generates the golden data of the Flux.1 host maths (issue 27 item 4) into
# $TT_GOLDEN_DIR/flux (default ~/.cache/tt-media-server-go/goldens/flux; never into the
# repository), where runners/diffusion/samplers' and diffusionpipeline's tests find it
# (internal/shareddata).
#
#   scripts/gen-flux-goldens.sh DIFFUSERS_SRC [OUT_DIR]
#
# DIFFUSERS_SRC  a huggingface/diffusers checkout (../shared/diffusers-58eb52c), or its bare git
#                directory (the files are then read at $DIFFUSERS_COMMIT). Nothing is downloaded.
# OUT_DIR        default: $TT_GOLDEN_DIR/flux, ~/.cache/tt-media-server-go/goldens/flux.
#
# The upstream scheduler runs unchanged from a scratch directory inside a minimal package shim
# (as scripts/gen-img2img-goldens.sh does): schedulers/scheduling_flow_match_euler_discrete.py,
# scheduling_utils.py, configuration_utils.py, utils/outputs.py. From pipelines/flux/
# pipeline_flux.py the module functions calculate_shift and retrieve_timesteps and FluxPipeline's
# _pack_latents, _unpack_latents, _prepare_latent_image_ids and prepare_latents are taken out
# with Python's ast module and executed as written (randn_tensor likewise from torch_utils.py).
# The one line of FluxPipeline.__call__ that makes the sigmas is checked to be in the file
# verbatim and then evaluated. No stub is on the computation path.
#
# Needs Debian's python3-torch, python3-numpy, python3-packaging and python3-typing-extensions
# (installed with apt-get if missing).
set -euo pipefail

SRC=${1:?usage: gen-flux-goldens.sh DIFFUSERS_SRC [OUT_DIR]}
OUT=${2:-${TT_GOLDEN_DIR:-$HOME/.cache/tt-media-server-go/goldens}/flux}
DIFFUSERS_COMMIT=${DIFFUSERS_COMMIT:-58eb52c0803ea9af3abec60841c2a093bdf1f951}
PY=/usr/bin/python3

# shellcheck source=scripts/diffusers-shim.sh
. "$(dirname "$0")/diffusers-shim.sh"
ensure_python_debs 'torch, numpy, packaging, typing_extensions' python3-torch python3-numpy python3-packaging python3-typing-extensions

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gen-flux-goldens.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

D=$TMP/pkg/diffusers
for f in configuration_utils.py schedulers/scheduling_flow_match_euler_discrete.py \
	schedulers/scheduling_utils.py utils/outputs.py; do
	getsrc "src/diffusers/$f" "$D/$f"
done
getsrc src/diffusers/pipelines/flux/pipeline_flux.py "$TMP/up/pipeline_flux.py"
getsrc src/diffusers/utils/torch_utils.py "$TMP/up/torch_utils.py"
COMMIT=$( (git --git-dir="$SRC" rev-parse "$DIFFUSERS_COMMIT^{commit}" 2>/dev/null || git -C "$SRC" rev-parse HEAD 2>/dev/null || echo "$DIFFUSERS_COMMIT (checkout without git metadata)") | head -1)

diffusers_shim

cd "$TMP"
PYTHONPATH="$TMP/pkg" $PY - "$OUT" "$TMP" <<'EOF'
import ast, inspect, json, os, sys, textwrap, types
import numpy as np
import torch
from diffusers.schedulers.scheduling_flow_match_euler_discrete import FlowMatchEulerDiscreteScheduler
from diffusers.utils.torch_utils import randn_tensor

out, tmp = sys.argv[1], sys.argv[2]
up = tmp + "/up/pipeline_flux.py"
src = open(up).read()
body = ast.parse(src).body

def take(name, cls=None):
    nodes = body
    if cls is not None:
        nodes = next(n for n in body if getattr(n, "name", None) == cls).body
    for node in nodes:
        if getattr(node, "name", None) == name:
            return textwrap.dedent(ast.get_source_segment(src, node))
    raise KeyError(name)

ns = {"torch": torch, "np": np, "inspect": inspect, "randn_tensor": randn_tensor,
      "Optional": __import__("typing").Optional, "Union": __import__("typing").Union,
      "List": list}
for name in ("calculate_shift", "retrieve_timesteps"):
    exec(compile("from __future__ import annotations\n" + take(name), up, "exec"), ns)
for name in ("_pack_latents", "_unpack_latents", "_prepare_latent_image_ids", "prepare_latents"):
    code = take(name, "FluxPipeline")
    code = "\n".join(l for l in code.splitlines() if l.strip() != "@staticmethod")
    exec(compile("from __future__ import annotations\n" + code, up, "exec"), ns)
calculate_shift, retrieve_timesteps = ns["calculate_shift"], ns["retrieve_timesteps"]
pipe = types.SimpleNamespace(vae_scale_factor=8)
pipe._pack_latents = ns["_pack_latents"]
pipe._unpack_latents = ns["_unpack_latents"]
pipe._prepare_latent_image_ids = ns["_prepare_latent_image_ids"]
prepare_latents = ns["prepare_latents"]

# FluxPipeline.__call__'s sigma line, checked to be upstream's verbatim.
SIGMA_LINE = "sigmas = np.linspace(1.0, 1 / num_inference_steps, num_inference_steps) if sigmas is None else sigmas"
assert SIGMA_LINE in take("__call__", "FluxPipeline"), "FluxPipeline.__call__ no longer makes its sigmas as expected"
MU_CALL = "image_seq_len = latents.shape[1]"
assert MU_CALL in take("__call__", "FluxPipeline")

# black-forest-labs/FLUX.1-dev and FLUX.1-schnell scheduler_config.json.
CONFIGS = {
    "dev": {"num_train_timesteps": 1000, "shift": 3.0, "use_dynamic_shifting": True, "base_shift": 0.5,
            "max_shift": 1.15, "base_image_seq_len": 256, "max_image_seq_len": 4096},
    "schnell": {"num_train_timesteps": 1000, "shift": 1.0, "use_dynamic_shifting": False, "base_shift": 0.5,
                "max_shift": 1.15, "base_image_seq_len": 256, "max_image_seq_len": 4096},
}

def f32(a):
    return [float(x) for x in np.asarray(a, dtype=np.float32).reshape(-1)]

def dump(name, data):
    with open(os.path.join(out, name), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

# 1. Schedules: for each model, resolution and step count, the pipeline's sigmas, mu, and the
#    scheduler's timesteps and sigmas after retrieve_timesteps; plus one Euler step.
runs = []
for model, cfg in CONFIGS.items():
    for (h, w) in ((1024, 1024), (512, 512), (768, 1360), (256, 256), (1024, 768), (2048, 2048), (64, 48), (1000, 600)):
        for n in (1, 2, 4, 8, 20, 28, 50):
            s = FlowMatchEulerDiscreteScheduler.from_config(cfg)
            num_inference_steps = n
            sigmas = None
            exec(SIGMA_LINE, {"np": np}, loc := {"num_inference_steps": n, "sigmas": None})
            sigmas = loc["sigmas"]
            lh, lw = 2 * (h // 16), 2 * (w // 16)
            image_seq_len = (lh // 2) * (lw // 2)
            mu = calculate_shift(image_seq_len, cfg["base_image_seq_len"], cfg["max_image_seq_len"],
                                 cfg["base_shift"], cfg["max_shift"])
            ts, steps = retrieve_timesteps(s, n, "cpu", sigmas=sigmas, mu=mu)
            runs.append({"model": model, "height": h, "width": w, "num_inference_steps": n,
                         "image_seq_len": image_seq_len, "mu": mu,
                         "pipeline_sigmas": [float(x) for x in sigmas], "steps": int(steps),
                         "timesteps": f32(ts), "sigmas": f32(s.sigmas)})
# Custom sigmas (FluxPipeline's sigmas= argument) on both configurations.
for model, cfg in CONFIGS.items():
    for sig in ([1.0, 0.8, 0.5, 0.2], [0.9, 0.31, 0.07], [1.0]):
        s = FlowMatchEulerDiscreteScheduler.from_config(cfg)
        mu = calculate_shift(4096, 256, 4096, 0.5, 1.15)
        ts, steps = retrieve_timesteps(s, None, "cpu", sigmas=sig, mu=mu)
        runs.append({"model": model, "height": 1024, "width": 1024, "num_inference_steps": 0, "image_seq_len": 4096,
                     "mu": mu, "pipeline_sigmas": sig, "steps": int(steps), "timesteps": f32(ts), "sigmas": f32(s.sigmas)})

# One Euler step at every index of a dev schedule, on closed-form inputs.
s = FlowMatchEulerDiscreteScheduler.from_config(CONFIGS["dev"])
mu = calculate_shift(1024, 256, 4096, 0.5, 1.15)
ts, _ = retrieve_timesteps(s, 4, "cpu", sigmas=np.linspace(1.0, 1 / 4, 4), mu=mu)
s.set_begin_index(0)
idx = torch.arange(2 * 4 * 64, dtype=torch.float32).reshape(1, 8, 64)
sample = torch.sin(idx * 0.37) * 0.8
model_out = torch.cos(idx * 0.11 + 1.0) * 0.5
steps_out = []
x = sample
for t in ts:
    x = s.step(model_out, t, x, return_dict=False)[0]
    steps_out.append(f32(x))
dump("schedule.json", {"diffusers_commit": None, "scheduler_configs": CONFIGS, "runs": runs,
     "step": {"mu": mu, "shape": [1, 8, 64], "sample": f32(sample), "model_output": f32(model_out), "after_each_step": steps_out}})

# 2. Latents: prepare_latents (seeded randn_tensor of [1, 16, h, w], packed; latent image ids)
#    and _unpack_latents, for several image sizes.
lat = []
for (h, w, seed) in ((128, 128, 0), (96, 160, 42), (256, 64, 1234567), (48, 80, 7), (100, 70, 3)):
    g = torch.Generator("cpu").manual_seed(seed)
    packed, ids = prepare_latents(pipe, 1, 16, h, w, torch.float32, torch.device("cpu"), g, None)
    unpacked = pipe._unpack_latents(packed, h, w, 8)
    g = torch.Generator("cpu").manual_seed(seed)
    lh, lw = 2 * (h // 16), 2 * (w // 16)
    raw = randn_tensor((1, 16, lh, lw), generator=g, device=torch.device("cpu"), dtype=torch.float32)
    assert torch.equal(unpacked, raw)
    lat.append({"height": h, "width": w, "seed": seed, "latent_shape": list(raw.shape),
                "packed_shape": list(packed.shape), "packed": f32(packed),
                "ids_shape": list(ids.shape), "ids": f32(ids), "unpacked_shape": list(unpacked.shape)})
dump("latents.json", {"num_channels_latents": 16, "vae_scale_factor": 8, "runs": lat})
EOF

TORCH=$(dpkg-query -W -f='${Version}' python3-torch 2>/dev/null || echo unknown)
NUMPY=$(dpkg-query -W -f='${Version}' python3-numpy 2>/dev/null || echo unknown)
sed -i "s|\"diffusers_commit\": null|\"diffusers_commit\": \"$COMMIT\"|" "$OUT/schedule.json"
cat >"$OUT/README.md" <<EOF
# Flux.1 host goldens

Made by \`scripts/gen-flux-goldens.sh\` of tt-media-server-go from huggingface/diffusers
$COMMIT (run from a scratch directory, not stored), Debian python3-torch $TORCH, python3-numpy $NUMPY.

| file | what |
| --- | --- |
| \`schedule.json\` | FLUX.1-dev (dynamic shift) and FLUX.1-schnell (shift 1.0) FlowMatchEulerDiscreteScheduler configurations; for resolutions x step counts: FluxPipeline's sigmas (linspace(1, 1/N, N)), image_seq_len, calculate_shift's mu, and retrieve_timesteps' timesteps and sigmas; custom sigmas; Euler steps on closed-form inputs |
| \`latents.json\` | FluxPipeline.prepare_latents for seeds and sizes: packed latents and their shape, latent image ids, the unpacked shape (unpacking checked to give back the seeded latents) |

Generated data from Apache-2.0 code.
EOF
echo "wrote $(ls "$OUT" | wc -l) files to $OUT" >&2
