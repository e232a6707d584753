#!/usr/bin/env bash
# Generates the golden data of the Wan2.2 T2V and I2V host maths (issue 29 item 5) into
# $TT_GOLDEN_DIR/wan (default ~/.cache/tt-media-server-go/goldens/wan; never into the
# repository), where runners/wan's tests find it (internal/shareddata).
#
#   scripts/gen-wan-goldens.sh DIFFUSERS_SRC [OUT_DIR]
#
# DIFFUSERS_SRC  a huggingface/diffusers checkout (../shared/diffusers-58eb52c), or its bare git
#                directory (the files are then read at $DIFFUSERS_COMMIT). Nothing is downloaded.
# OUT_DIR        default: $TT_GOLDEN_DIR/wan, ~/.cache/tt-media-server-go/goldens/wan.
#
# The upstream UniPCMultistepScheduler runs unchanged from a scratch directory inside a minimal
# package shim (as scripts/gen-flux-goldens.sh does): schedulers/scheduling_unipc_multistep.py,
# scheduling_utils.py, configuration_utils.py, utils/outputs.py. From pipelines/wan/
# pipeline_wan.py, WanPipeline.prepare_latents is taken out with Python's ast module and executed
# as written (randn_tensor likewise from torch_utils.py); the __call__ lines that round
# num_frames, pick the expert and guidance scale by timestep and combine the two predictions
# (classifier-free guidance) are checked to be in the file verbatim and then executed. No stub
# is on the computation path.
#
# The tokenizer goldens: google/umt5-xxl's spiece.model is not here (no weights), so a Unigram
# model with its id layout (pad 0, eos 1, unk 2, no bos, byte fallback) is trained with Debian's
# python3-sentencepiece on diffusers' README and Wan sources (umt5_test.model), and texts are
# cleaned by pipeline_wan.py's own prompt_clean (ast-extracted, run with the regex module it
# imports; ftfy absent, so its fix_text step is not applied, as in diffusers without ftfy) and
# encoded by sentencepiece (ids without eos; the Go test adds eos, truncation and padding to 512
# as the Hugging Face tokenizer call in _get_t5_prompt_embeds does).
#
# The I2V goldens (i2v.json and the i2v_*.png inputs drawn with Pillow beside it): diffusers'
# VideoProcessor.preprocess (image_processor.py, video_processor.py, unchanged) of those images,
# and whole WanImageToVideoPipeline.__call__ runs (pipelines/wan/pipeline_wan_i2v.py imported
# unchanged) with the UniPC scheduler above and stand-in models: a text encoder's states given
# as prompt_embeds, a VAE whose encode returns a closed-form function of the conditioning video
# (a strided sample of it, scaled per channel), and two transformers computing a closed-form
# flow from the 36-channel input (latents, mask, condition), the timestep and the text. The
# DiffusionPipeline base is a stand-in that only stores modules and config (no computation);
# transformers, callbacks, loaders and model classes are names the file imports for typing.
# What is pinned: the conditioning video handed to the VAE, the mask, the normalised condition,
# every step's transformer input, expert and timestep, and the final latents (output_type
# "latent"), for a first image, a first and a last image (last_image), no guidance, and
# num_frames rounding.
#
# Needs Debian's python3-torch, python3-numpy, python3-pil, python3-packaging,
# python3-typing-extensions, python3-regex and python3-sentencepiece (installed with apt-get if
# missing).
set -euo pipefail

SRC=${1:?usage: gen-wan-goldens.sh DIFFUSERS_SRC [OUT_DIR]}
OUT=${2:-${TT_GOLDEN_DIR:-$HOME/.cache/tt-media-server-go/goldens}/wan}
DIFFUSERS_COMMIT=${DIFFUSERS_COMMIT:-58eb52c0803ea9af3abec60841c2a093bdf1f951}
PY=/usr/bin/python3

# shellcheck source=scripts/diffusers-shim.sh
. "$(dirname "$0")/diffusers-shim.sh"
ensure_python_debs 'torch, numpy, PIL, packaging, typing_extensions, regex, sentencepiece' python3-torch python3-numpy python3-pil python3-packaging python3-typing-extensions python3-regex python3-sentencepiece

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gen-wan-goldens.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

D=$TMP/pkg/diffusers
for f in configuration_utils.py schedulers/scheduling_unipc_multistep.py \
	schedulers/scheduling_utils.py utils/outputs.py utils/pil_utils.py image_processor.py video_processor.py \
	pipelines/wan/pipeline_wan_i2v.py pipelines/wan/pipeline_output.py; do
	getsrc "src/diffusers/$f" "$D/$f"
done
getsrc src/diffusers/pipelines/wan/pipeline_wan.py "$TMP/up/pipeline_wan.py"
getsrc src/diffusers/utils/torch_utils.py "$TMP/up/torch_utils.py"
# The tokenizer model's training text: diffusers' README and the two files above (English prose
# and code; characters outside it take the byte-fallback path).
getsrc README.md "$TMP/up/README.md"
getsrc src/diffusers/models/autoencoders/autoencoder_kl_wan.py "$TMP/up/autoencoder_kl_wan.py"
COMMIT=$( (git --git-dir="$SRC" rev-parse "$DIFFUSERS_COMMIT^{commit}" 2>/dev/null || git -C "$SRC" rev-parse HEAD 2>/dev/null || echo "$DIFFUSERS_COMMIT (checkout without git metadata)") | head -1)

diffusers_shim 'from .pil_utils import PIL_INTERPOLATION' \
	'def is_ftfy_available(): return False' 'def is_torch_xla_available(): return False' \
	'def replace_example_docstring(doc): return lambda f: f'
# Names pipeline_wan_i2v.py imports but the golden computation does not run (type hints and
# base classes), and the DiffusionPipeline base: it stores modules and config, nothing more.
: >"$D/pipelines/__init__.py"
: >"$D/pipelines/wan/__init__.py"
echo 'FlowMatchEulerDiscreteScheduler = None  # a type hint in pipeline_wan_i2v.py' >>"$D/schedulers/__init__.py"
printf 'class PipelineCallback: pass\nclass MultiPipelineCallbacks: pass\n' >"$D/callbacks.py"
printf 'class WanLoraLoaderMixin: pass\n' >"$D/loaders.py"
printf 'AutoencoderKLWan = WanTransformer3DModel = None  # type hints\n' >"$D/models.py"
mkdir -p "$TMP/pkg/transformers"
printf 'AutoTokenizer = CLIPImageProcessor = CLIPVisionModel = UMT5EncoderModel = None  # type hints\n' >"$TMP/pkg/transformers/__init__.py"
cat >"$D/pipelines/pipeline_utils.py" <<'PY'
import contextlib, types, torch
class DiffusionPipeline:
    def __init__(self):
        pass
    def register_modules(self, **modules):
        for k, v in modules.items():
            setattr(self, k, v)
    def register_to_config(self, **kw):
        cfg = dict(vars(getattr(self, "config", types.SimpleNamespace())), **kw)
        self.config = types.SimpleNamespace(**cfg)
    @property
    def _execution_device(self):
        return torch.device("cpu")
    def progress_bar(self, total=None):
        return contextlib.nullcontext(types.SimpleNamespace(update=lambda *a: None))
    def maybe_free_model_hooks(self):
        pass
PY

cd "$TMP"
PYTHONPATH="$TMP/pkg" $PY - "$OUT" "$TMP" <<'EOF'
import ast, hashlib, json, os, sys, textwrap, types
import numpy as np
import torch
from diffusers.schedulers.scheduling_unipc_multistep import UniPCMultistepScheduler
from diffusers.utils.torch_utils import randn_tensor

out, tmp = sys.argv[1], sys.argv[2]
up = tmp + "/up/pipeline_wan.py"
src = open(up).read()
body = ast.parse(src).body
cls = next(n for n in body if getattr(n, "name", None) == "WanPipeline")

def method(name):
    for node in cls.body:
        if getattr(node, "name", None) == name:
            return textwrap.dedent(ast.get_source_segment(src, node))
    raise KeyError(name)

call = method("__call__")
def verbatim(block):
    """block (dedented) must appear in WanPipeline.__call__ as written, indentation aside."""
    lines = [l.strip() for l in block.strip().splitlines()]
    have = [l.strip() for l in call.splitlines()]
    for i in range(len(have) - len(lines) + 1):
        if have[i:i + len(lines)] == lines:
            return textwrap.dedent(block)
    raise AssertionError("WanPipeline.__call__ no longer contains:\n" + block)

ns = {"torch": torch, "randn_tensor": randn_tensor}
exec(compile("from __future__ import annotations\n" + method("prepare_latents"), up, "exec"), ns)
pipe = types.SimpleNamespace(vae_scale_factor_temporal=4, vae_scale_factor_spatial=8)

# The Wan2.2 scheduler: UniPCMultistepScheduler with flow_prediction and flow sigmas, as the
# Wan-AI/Wan2.2-T2V-A14B-Diffusers scheduler_config.json and pipeline_wan.py's example set it;
# flow_shift varies (3.0 in that file, 5.0 for Wan2.1 720P, 12.0 in Wan's own t2v-A14B config).
BASE = {"num_train_timesteps": 1000, "solver_order": 2, "prediction_type": "flow_prediction",
        "predict_x0": True, "solver_type": "bh2", "lower_order_final": True, "disable_corrector": [],
        "use_flow_sigmas": True, "final_sigmas_type": "zero", "timestep_spacing": "linspace",
        "beta_schedule": "linear", "beta_start": 0.0001, "beta_end": 0.02, "thresholding": False}

def sched(shift, **kw):
    return UniPCMultistepScheduler.from_config(dict(BASE, flow_shift=shift, **kw))

def f32(a):
    return [float(x) for x in np.asarray(a, dtype=np.float32).reshape(-1)]

def bits(a):
    """float32 values as their IEEE bit patterns (uint32): exact, and JSON has no inf/NaN."""
    return [int(x) for x in np.ascontiguousarray(np.asarray(a, dtype=np.float32).reshape(-1)).view(np.uint32)]

def dump(name, data):
    with open(os.path.join(out, name), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

# 1. Schedules: timesteps and sigmas after set_timesteps, for shifts x step counts.
runs = []
for shift in (1.0, 3.0, 5.0, 8.0, 12.0):
    for n in (1, 2, 3, 4, 7, 10, 20, 27, 30, 40, 50, 100):
        s = sched(shift)
        s.set_timesteps(n, device="cpu")
        runs.append({"flow_shift": shift, "num_inference_steps": n, "timesteps": [int(t) for t in s.timesteps],
                     "sigmas": f32(s.sigmas), "sigma_bits": bits(s.sigmas)})

# 2. Steps: the full multistep UniPC (predictor, then corrector from the second step) on
#    closed-form inputs, a different model output at every step; the sample after every step.
idx = torch.arange(2 * 16 * 2 * 4 * 4, dtype=torch.float32).reshape(2, 16, 2, 4, 4)
sample0 = torch.sin(idx * 0.37) * 1.3
stepruns = []
for shift, n, extra in ((3.0, 4, {}), (3.0, 10, {}), (12.0, 40, {}), (5.0, 3, {}), (3.0, 1, {}), (3.0, 2, {}),
                        (3.0, 6, {"lower_order_final": False}), (3.0, 6, {"disable_corrector": [0, 2]}),
                        (3.0, 5, {"solver_order": 3}), (1.0, 8, {})):
    s = sched(shift, **extra)
    s.set_timesteps(n, device="cpu")
    x = sample0.clone()
    after = []
    for k, t in enumerate(s.timesteps):
        mo = (torch.remainder(idx, 37.0) * 0.053 - 0.9 + float(k) * 0.17) + x * 0.25
        x = s.step(mo, t, x, return_dict=False)[0]
        after.append(bits(x))
    stepruns.append({"flow_shift": shift, "num_inference_steps": n, "config": extra, "timesteps": [int(t) for t in s.timesteps],
                     "after_each_step": after})
dump("unipc.json", {"diffusers_commit": None, "scheduler_config": BASE, "runs": runs,
     "steps": {"shape": list(idx.shape), "sample_bits": bits(sample0),
               "model_output": "(remainder(idx, 37)*0.053 - 0.9 + k*0.17) + sample*0.25 in float32 torch ops, k the step index, idx = arange(numel)",
               "runs": stepruns}})

# 3. The pipeline: num_frames rounding, latent shapes, seeded latents, expert and guidance by
#    timestep (boundary_ratio), classifier-free guidance.
ROUND = verbatim("""
        if num_frames % self.vae_scale_factor_temporal != 1:
            logger.warning(
                f"`num_frames - 1` has to be divisible by {self.vae_scale_factor_temporal}. Rounding to the nearest number."
            )
            num_frames = num_frames // self.vae_scale_factor_temporal * self.vae_scale_factor_temporal + 1
        num_frames = max(num_frames, 1)
""")
SIZE = verbatim("""
        h_multiple_of = self.vae_scale_factor_spatial * patch_size[1]
        w_multiple_of = self.vae_scale_factor_spatial * patch_size[2]
        calc_height = height // h_multiple_of * h_multiple_of
        calc_width = width // w_multiple_of * w_multiple_of
""")
BOUNDARY = verbatim("""
        if self.config.boundary_ratio is not None:
            boundary_timestep = self.config.boundary_ratio * self.scheduler.config.num_train_timesteps
        else:
            boundary_timestep = None
""")
PICK = verbatim("""
                if boundary_timestep is None or t >= boundary_timestep:
                    # wan2.1 or high-noise stage in wan2.2
                    current_model = self.transformer
                    current_guidance_scale = guidance_scale
                else:
                    # low-noise stage in wan2.2
                    current_model = self.transformer_2
                    current_guidance_scale = guidance_scale_2
""")
GS2 = verbatim("""
        if self.config.boundary_ratio is not None and guidance_scale_2 is None:
            guidance_scale_2 = guidance_scale
""")
CFG = verbatim("""
                    noise_pred = noise_uncond + current_guidance_scale * (noise_pred - noise_uncond)
""")

class Logger:
    def warning(self, *a):
        pass

shapes = []
for frames, h, w in ((81, 480, 832), (81, 720, 1280), (1, 480, 832), (17, 64, 48), (80, 480, 832), (82, 720, 1280),
                     (5, 100, 70), (121, 704, 1280), (33, 496, 880)):
    self = types.SimpleNamespace(vae_scale_factor_temporal=4, vae_scale_factor_spatial=8)
    loc = {"self": self, "num_frames": frames, "logger": Logger(), "height": h, "width": w, "patch_size": (1, 2, 2)}
    exec(ROUND, {"max": max}, loc)
    exec(SIZE, {}, loc)
    g = torch.Generator("cpu").manual_seed(frames * 7 + h)
    lat = ns["prepare_latents"](pipe, 1, 16, loc["calc_height"], loc["calc_width"], loc["num_frames"], torch.float32,
                                torch.device("cpu"), g, None)
    shapes.append({"num_frames": frames, "height": h, "width": w, "rounded_frames": loc["num_frames"],
                   "calc_height": loc["calc_height"], "calc_width": loc["calc_width"],
                   "seed": frames * 7 + h, "latent_shape": list(lat.shape),
                   "latents_sha256": hashlib.sha256(lat.contiguous().numpy().astype("<f4").tobytes()).hexdigest(),
                   "latents_head_bits": bits(lat.reshape(-1)[:16])})

picks = []
for boundary in (0.875, 0.9, None):
    for shift, n in ((3.0, 40), (12.0, 40), (3.0, 50), (5.0, 4), (3.0, 27), (12.0, 2)):
        for gs, gs2 in ((4.0, 3.0), (5.0, None), (3.5, 3.5)):
            if boundary is None and gs2 is not None:
                continue  # check_inputs refuses guidance_scale_2 without boundary_ratio
            s = sched(shift)
            s.set_timesteps(n, device="cpu")
            self = types.SimpleNamespace(config=types.SimpleNamespace(boundary_ratio=boundary), scheduler=s,
                                         transformer="transformer", transformer_2="transformer_2")
            loc = {"self": self, "guidance_scale": gs, "guidance_scale_2": gs2}
            exec(GS2, {}, loc)
            exec(BOUNDARY, {}, loc)
            experts, scales = [], []
            for t in s.timesteps:
                loc["t"] = t
                exec(PICK, {}, loc)
                experts.append(1 if loc["current_model"] == "transformer" else 2)
                scales.append(float(loc["current_guidance_scale"]))
            picks.append({"boundary_ratio": boundary, "flow_shift": shift, "num_inference_steps": n,
                          "guidance_scale": gs, "guidance_scale_2": gs2, "boundary_timestep": loc["boundary_timestep"],
                          "timesteps": [int(t) for t in s.timesteps], "expert": experts, "scale": scales})

cfg = []
ci = torch.arange(512, dtype=torch.float32)
cond = torch.sin(ci * 0.13) * 2.1
uncond = torch.cos(ci * 0.07) * 1.7
for g in (4.0, 3.0, 5.0, 3.5, 1.7, 7.25):
    loc = {"noise_pred": cond.clone(), "noise_uncond": uncond, "current_guidance_scale": g}
    exec(CFG, {}, loc)
    cfg.append({"guidance_scale": g, "out_bits": bits(loc["noise_pred"])})
# 4. Tokenizer: a UMT5-layout Unigram model and prompt_clean + sentencepiece ids.
import html, importlib.util, random
import regex
import sentencepiece as spm
assert importlib.util.find_spec("ftfy") is None, "ftfy is installed: prompt_clean would run ftfy.fix_text, which the Go side does not"
tns = {"html": html, "re": regex, "is_ftfy_available": lambda: False}
for name in ("basic_clean", "whitespace_clean", "prompt_clean"):
    fn = next(n for n in body if getattr(n, "name", None) == name)
    exec(compile(ast.get_source_segment(src, fn), up, "exec"), tns)
corpus = os.path.join(tmp, "corpus.txt")
with open(corpus, "w", encoding="utf-8") as f:
    for name in ("README.md", "pipeline_wan.py", "torch_utils.py"):
        for line in open(os.path.join(tmp, "up", name), encoding="utf-8"):
            if line.strip():
                f.write(line.strip() + "\n")
spm.set_random_generator_seed(1)
cwd = os.getcwd()
os.chdir(tmp)
spm.SentencePieceTrainer.train(input="corpus.txt", model_prefix="umt5_test", vocab_size=1500, model_type="unigram",
                               byte_fallback=True, num_threads=1, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                               character_coverage=1.0, minloglevel=2)
os.replace("umt5_test.model", os.path.join(out, "umt5_test.model"))
os.chdir(cwd)
sp = spm.SentencePieceProcessor(model_file=os.path.join(out, "umt5_test.model"))
TEXTS = ["", " ", "A cat walks on the grass, realistic", "  Two  anthropomorphic cats\tin comfy boxing gear\n\nfight  ",
         "Tom &amp; Jerry &lt;3 &amp;amp; &quot;quoted&quot; &#39;x&#39; &#x263A; &copy &nbsp;end",
         "caf\u00e9 na\u00efve \u5409\u7965\u7269 \ud55c\uad6d\uc5b4 emoji \U0001F600\U0001F680",
         "\u00a0nbsp\u2003em\u3000ideographic\u2028line\x1cfs\x85nel\u200bzw",
         "Bright tones, overexposed, static, blurred details, subtitles, style, works, paintings, images, static, overall gray, worst quality, low quality",
         "\u8272\u8c03\u8273\u4e3d\uff0c\u8fc7\u66dd\uff0c\u9759\u6001",
         "&amp;lt;b&amp;gt; double-escaped", "digits 0123456789 3.14 1,000"]
rng = random.Random(7)
words = open(corpus, encoding="utf-8").read().split()
TEXTS.append(" ".join(rng.choice(words) for _ in range(700)))  # longer than 512 tokens
tok = []
for text in TEXTS:
    cleaned = tns["prompt_clean"](text)
    ids = sp.encode(cleaned)
    tok.append({"text": text, "cleaned": cleaned, "ids": ids})
dump("umt5.json", {"model": "umt5_test.model", "sentencepiece_version": spm.__version__, "regex_version": regex.__version__,
                   "vocab_size": sp.get_piece_size(), "pad_id": sp.pad_id(), "eos_id": sp.eos_id(), "unk_id": sp.unk_id(),
                   "max_sequence_length": 512, "cases": tok})

# The VAE's latent normalisation (AutoencoderKLWan's latents_mean/latents_std defaults) and the
# __call__ lines that undo it before decoding, run on fixed latents.
vsrc = open(os.path.join(tmp, "up", "autoencoder_kl_wan.py")).read()
vcls = next(n for n in ast.parse(vsrc).body if getattr(n, "name", None) == "AutoencoderKLWan")
init = next(n for n in vcls.body if getattr(n, "name", None) == "__init__")
args = init.args.args[-len(init.args.defaults):]
vdef = {a.arg: ast.literal_eval(d) for a, d in zip(args, init.args.defaults) if a.arg in ("latents_mean", "latents_std", "z_dim")}
UNNORM = verbatim("""
            latents = latents.to(self.vae.dtype)
            latents_mean = (
                torch.tensor(self.vae.config.latents_mean)
                .view(1, self.vae.config.z_dim, 1, 1, 1)
                .to(latents.device, latents.dtype)
            )
            latents_std = 1.0 / torch.tensor(self.vae.config.latents_std).view(1, self.vae.config.z_dim, 1, 1, 1).to(
                latents.device, latents.dtype
            )
            latents = latents / latents_std + latents_mean
""")
li = torch.arange(16 * 2 * 3 * 2, dtype=torch.float32).reshape(1, 16, 2, 3, 2)
lat_in = torch.remainder(li * 0.731, 5.0) - 2.5
self = types.SimpleNamespace(vae=types.SimpleNamespace(dtype=torch.float32, config=types.SimpleNamespace(**vdef)))
loc = {"self": self, "latents": lat_in.clone(), "torch": torch}
exec(UNNORM, {"torch": torch}, loc)
vae = {"latents_mean": vdef["latents_mean"], "latents_std": vdef["latents_std"], "z_dim": vdef["z_dim"],
       "shape": list(lat_in.shape), "in_bits": bits(lat_in), "out_bits": bits(loc["latents"])}

dump("pipeline.json", {"vae": vae, "latent_channels": 16, "vae_scale_factor_temporal": 4, "vae_scale_factor_spatial": 8,
                       "patch_size": [1, 2, 2], "shapes": shapes, "picks": picks,
                       "cfg": {"cond_bits": bits(cond), "uncond_bits": bits(uncond), "runs": cfg}})
EOF

# 5. Wan2.2 I2V: VideoProcessor.preprocess and whole WanImageToVideoPipeline.__call__ runs.
PYTHONPATH="$TMP/pkg" $PY - "$OUT" "$TMP" <<'EOF'
import ast, contextlib, hashlib, json, os, sys, types
import numpy as np
import torch
from PIL import Image, ImageDraw
from diffusers.schedulers.scheduling_unipc_multistep import UniPCMultistepScheduler
from diffusers.video_processor import VideoProcessor
from diffusers.pipelines.wan.pipeline_wan_i2v import WanImageToVideoPipeline

out, tmp = sys.argv[1], sys.argv[2]

def bits(a):
    return [int(x) for x in np.ascontiguousarray(np.asarray(a, dtype=np.float32).reshape(-1)).view(np.uint32)]

def sha(t):
    return hashlib.sha256(t.detach().contiguous().numpy().astype("<f4").tobytes()).hexdigest()

vsrc = open(os.path.join(tmp, "up", "autoencoder_kl_wan.py")).read()
vcls = next(n for n in ast.parse(vsrc).body if getattr(n, "name", None) == "AutoencoderKLWan")
init = next(n for n in vcls.body if getattr(n, "name", None) == "__init__")
args = init.args.args[-len(init.args.defaults):]
vdef = {a.arg: ast.literal_eval(d) for a, d in zip(args, init.args.defaults) if a.arg in ("latents_mean", "latents_std", "z_dim")}

# Inputs drawn with Pillow and saved as PNG beside the goldens (the Go tests decode these bytes).
def draw(name, w, h, seed):
    im = Image.new("RGB", (w, h))
    im.putdata([((x * 255) // max(w - 1, 1), (y * 255) // max(h - 1, 1), (x * y + seed * 37) % 256) for y in range(h) for x in range(w)])
    d = ImageDraw.Draw(im)
    d.ellipse((w // 5, h // 6, w // 2, h // 2 + h // 5), fill=(250, 40 + seed, 30))
    d.rectangle((w // 2, h // 3, w - w // 6, h - h // 8), fill=(20, 200, 90 + seed))
    d.line((0, h - 1, w - 1, 0), fill=(255, 255, 255), width=max(1, w // 40))
    path = os.path.join(out, name)
    im.save(path, format="PNG")
    return Image.open(path).convert("RGB")

imgs = {"i2v_a.png": draw("i2v_a.png", 100, 60, 1), "i2v_b.png": draw("i2v_b.png", 40, 24, 2),
        "i2v_c.png": draw("i2v_c.png", 48, 32, 3), "i2v_d.png": draw("i2v_d.png", 320, 200, 4)}

vp = VideoProcessor(vae_scale_factor=8)
pre = []
for name, h, w in (("i2v_a.png", 32, 48), ("i2v_b.png", 32, 48), ("i2v_c.png", 32, 48), ("i2v_a.png", 64, 32),
                   ("i2v_d.png", 480, 832), ("i2v_b.png", 720, 1280)):
    t = vp.preprocess(imgs[name], height=h, width=w)
    assert t.dtype == torch.float32 and list(t.shape) == [1, 3, h, w], t.shape
    pre.append({"image": name, "height": h, "width": w, "sha256": sha(t), "head_bits": bits(t.reshape(-1)[:32])})

# Stand-in models. The VAE encoder's "mode" is a closed form of the video it is given: channel
# c takes video channel c%3 at the last frame of each latent frame's group (frame 0, then 4k),
# every 8th pixel, times K[c] plus B[c] (each op in float32).
K = [0.5 + 0.0625 * c for c in range(16)]
B = [(c % 5) * 0.125 - 0.25 for c in range(16)]

class Dist:
    def __init__(self, m):
        self.m = m
    def mode(self):
        return self.m

class VAE:
    dtype = torch.float32
    def __init__(self):
        self.config = types.SimpleNamespace(scale_factor_temporal=4, scale_factor_spatial=8, **vdef)
        self.seen = []
    def encode(self, x):
        self.seen.append(x.clone())
        lf = (x.shape[2] - 1) // 4 + 1
        s = x[:, [c % 3 for c in range(16)]][:, :, [0] + [4 * k for k in range(1, lf)]][:, :, :, ::8, ::8]
        k = torch.tensor(K, dtype=torch.float32).view(1, 16, 1, 1, 1)
        b = torch.tensor(B, dtype=torch.float32).view(1, 16, 1, 1, 1)
        return types.SimpleNamespace(latent_dist=Dist(s * k + b))
    def decode(self, *a, **k):
        raise RuntimeError("not on the golden path (output_type latent)")

# The transformers' flow: latents*a + condition*0.5 + mask0*0.125 + text[0,0]*(t/1000), a
# 0.25 for the high-noise expert and -0.5 for the low-noise one (each op in float32).
class Transformer:
    dtype = torch.float32
    def __init__(self, expert, a, log):
        self.expert, self.a, self.log = expert, a, log
        self.config = types.SimpleNamespace(patch_size=(1, 2, 2), image_dim=None)
    def cache_context(self, name):
        return contextlib.nullcontext()
    def __call__(self, hidden_states, timestep, encoder_hidden_states, encoder_hidden_states_image=None, attention_kwargs=None, return_dict=False):
        assert encoder_hidden_states_image is None and hidden_states.shape[1] == 36
        x, m, c = hidden_states[:, :16], hidden_states[:, 16:17], hidden_states[:, 20:36]
        e = encoder_hidden_states[:, 0, 0].view(-1, 1, 1, 1, 1)
        tt = (timestep.to(torch.float32) / 1000).view(-1, 1, 1, 1, 1)
        self.log.append({"expert": self.expert, "timestep": int(timestep[0]), "text": float(encoder_hidden_states[0, 0, 0]),
                         "input_sha256": sha(hidden_states)})
        return (x * self.a + c * 0.5 + m * 0.125 + e * tt,)

BASE = {"num_train_timesteps": 1000, "solver_order": 2, "prediction_type": "flow_prediction",
        "predict_x0": True, "solver_type": "bh2", "lower_order_final": True, "disable_corrector": [],
        "use_flow_sigmas": True, "final_sigmas_type": "zero", "timestep_spacing": "linspace",
        "beta_schedule": "linear", "beta_start": 0.0001, "beta_end": 0.02, "thresholding": False}
COND, UNCOND = 0.3, -0.7

runs = []
for name, image, last, frames, h, w, steps, gs, gs2, shift, boundary, seed in (
        ("first_image", "i2v_a.png", None, 9, 32, 48, 6, 4.0, 3.0, 5.0, 0.9, 42),
        ("last_image", "i2v_b.png", "i2v_a.png", 9, 32, 48, 5, 4.0, 3.0, 5.0, 0.9, 7),
        ("no_guidance_rounded_frames", "i2v_c.png", None, 7, 32, 48, 4, 1.0, 1.0, 5.0, 0.9, 3),
        ("one_frame", "i2v_d.png", None, 1, 48, 32, 3, 3.5, 3.5, 5.0, 0.9, 11),
        ("a14b_40_steps", "i2v_a.png", None, 5, 16, 16, 40, 4.0, 3.0, 5.0, 0.9, 5)):
    log = []
    vae = VAE()
    sched = UniPCMultistepScheduler.from_config(dict(BASE, flow_shift=shift))
    pipe = WanImageToVideoPipeline(tokenizer=None, text_encoder=None, vae=vae, scheduler=sched,
                                   transformer=Transformer(1, 0.25, log), transformer_2=Transformer(2, -0.5, log),
                                   boundary_ratio=boundary)
    captured = {}
    orig = pipe.prepare_latents
    def prep(*a, **k):
        lat, cond = orig(*a, **k)
        captured["latents"], captured["condition"] = lat.clone(), cond.clone()
        return lat, cond
    pipe.prepare_latents = prep
    pe = torch.full((1, 8, 4), COND, dtype=torch.float32)
    ne = torch.full((1, 8, 4), UNCOND, dtype=torch.float32) if gs > 1 else None
    res = pipe(image=imgs[image], last_image=imgs[last] if last else None, prompt_embeds=pe, negative_prompt_embeds=ne,
               height=h, width=w, num_frames=frames, num_inference_steps=steps, guidance_scale=gs, guidance_scale_2=gs2,
               generator=torch.Generator("cpu").manual_seed(seed), output_type="latent", return_dict=False)[0]
    cond = captured["condition"]
    assert len(vae.seen) == 1
    vc = vae.seen[0]
    runs.append({"name": name, "image": image, "last_image": last, "num_frames": frames, "height": h, "width": w,
                 "steps": steps, "guidance_scale": gs, "guidance_scale_2": gs2, "flow_shift": shift, "boundary_ratio": boundary,
                 "seed": seed, "prompt_state": COND, "negative_state": UNCOND,
                 "video_condition_shape": list(vc.shape), "video_condition_sha256": sha(vc),
                 "latent_shape": list(captured["latents"].shape), "latents_sha256": sha(captured["latents"]),
                 "condition_shape": list(cond.shape), "mask_bits": bits(cond[:, :4]), "latent_condition_bits": bits(cond[:, 4:]),
                 "calls": log, "out_bits": bits(res)})

json.dump({"vae_encoder_standin": {"K": K, "B": B}, "preprocess": pre, "runs": runs},
          open(os.path.join(out, "i2v.json"), "w"), indent=1)
EOF

TORCH=$(dpkg-query -W -f='${Version}' python3-torch 2>/dev/null || echo unknown)
NUMPY=$(dpkg-query -W -f='${Version}' python3-numpy 2>/dev/null || echo unknown)
PIL=$(dpkg-query -W -f='${Version}' python3-pil 2>/dev/null || echo unknown)
sed -i "s|\"diffusers_commit\": null|\"diffusers_commit\": \"$COMMIT\"|" "$OUT/unipc.json"
cat >"$OUT/README.md" <<EOF
# Wan2.2 T2V and I2V host goldens

Made by \`scripts/gen-wan-goldens.sh\` (format 3) of tt-media-server-go from huggingface/diffusers
$COMMIT (run from a scratch directory, not stored), Debian python3-torch $TORCH, python3-numpy $NUMPY, python3-pil $PIL.

| file | what |
| --- | --- |
| \`unipc.json\` | UniPCMultistepScheduler (flow_prediction, flow sigmas, bh2, order 2) timesteps and sigmas for flow shifts x step counts; whole multistep runs (predictor + corrector) on closed-form inputs, the sample after every step (float32 bit patterns), including lower_order_final off, disable_corrector and order 3 |
| \`umt5_test.model\`, \`umt5.json\` | a Unigram model with google/umt5-xxl's id layout (pad 0, eos 1, unk 2, no bos, byte fallback) trained by Debian python3-sentencepiece on diffusers' README and pipeline_wan.py/torch_utils.py; texts through pipeline_wan.py's prompt_clean (regex module, no ftfy) and sentencepiece's encode (ids without eos) |
| \`pipeline.json\` | AutoencoderKLWan's latents_mean/latents_std and WanPipeline's un-normalisation before decoding on fixed latents; WanPipeline: num_frames rounding and latent shapes (81 frames at 832x480 and 1280x720 and others), seeded prepare_latents (sha256 of the float32 tensor), expert and guidance scale at every timestep for boundary ratios 0.875/0.9/none, and the classifier-free guidance combination on fixed inputs |
| \`i2v.json\`, \`i2v_a.png\`..\`i2v_d.png\` | Wan2.2 I2V: VideoProcessor.preprocess of the Pillow-drawn PNGs (PIL Lanczos resize, [-1, 1]) to 48x32, 32x64, 832x480 and 1280x720 (sha256 of the float32 tensor and its first values); whole WanImageToVideoPipeline.__call__ runs (pipeline_wan_i2v.py unchanged; UniPC flow_shift 5, boundary_ratio 0.9) with stand-in models (text states given as prompt_embeds, a closed-form VAE encoder and transformers): the conditioning video's sha256, the mask and normalised latent condition (bits), every transformer call's expert, timestep, text value and 36-channel input sha256, the final latents (bits), for a first image, first and last image, no guidance with num_frames 7 rounded to 5, one frame, and 40 steps |

Generated data from Apache-2.0 code.
EOF
echo "wrote $(ls "$OUT" | wc -l) files to $OUT" >&2
