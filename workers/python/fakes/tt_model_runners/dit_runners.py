"""Fakes of HEAD's DiT runners (ours), at HEAD's module path with HEAD's class names.

Image (TTSD35Runner, TTFlux1Runner, TTMotifImage6BPreviewRunner, TTQwenImageRunner, also
tt-qwen-image-2512's): the SDXL fake's pictures at 1024x1024 as HEAD's tt-dit pipelines make them; like HEAD's, one
request per call.

Video (TTWan22Runner and its T2V/I2V variants, TTMochi1Runner, TTLTX23DistilledRunner,
TTMiniMaxH3Runner): like HEAD's, run() takes [VideoGenerateRequest] (I2V: VideoI2VGenerateRequest
with base64 `image_prompts`) and answers the frames as HEAD's pipelines do, a float32 array of
(1, frames, H, W, 3) in [0, 1], which HEAD's VideoManager (here: the server) encodes. The clip
is deterministic in prompt, negative prompt, seed and steps: a gradient whose colours come from
them and a bright square that moves; each I2V image is the frame at its position. Its size is
the worker's hint (_width, _height, _num_frames: the clip the server expects), else the
model's (with MOCK_VIDEO_SCALE the server asks for a smaller clip). MOCK_STEP_SECONDS per
denoising step, with progress and cancellation through
tt_worker_hooks (HEAD's runners have neither).
"""

import base64
import hashlib
import io

import tt_worker_hooks as hooks

from tt_model_runners.fake_common import FakeRunner, seconds, trigger
from tt_model_runners.sdxl_generate_runner_trace import TTSDXLGenerateRunnerTrace


class TTSD35Runner(TTSDXLGenerateRunnerTrace):
    size = 1024  # HEAD's tt-dit image pipelines make 1024x1024

    def is_request_batchable(self, request, batch=None):
        return not batch


class TTFlux1Runner(TTSD35Runner):
    pass


class TTMotifImage6BPreviewRunner(TTSD35Runner):
    pass


class TTQwenImageRunner(TTSD35Runner):
    pass


class FakeVideoRunner(FakeRunner):
    """The shared fake of HEAD's video runners."""

    size = (832, 480, 81)  # width, height, frames of the model (HEAD's Wan2.2 at 480p)
    i2v = False

    def is_request_batchable(self, request, batch=None):
        return not batch

    def run(self, requests):
        self.count_call()
        import numpy

        request = requests[0]
        trigger(request.prompt)
        images = getattr(request, "image_prompts", None) or []
        if self.i2v and not images:
            raise ValueError("image_prompts is required by an image-to-video runner")
        steps = int(request.num_inference_steps or 20)
        per_step = seconds("MOCK_STEP_SECONDS", 0.0)
        for step in range(steps):
            if hooks.stopped(request):
                raise hooks.Cancelled()
            self.sleep([request], per_step)
            hooks.progress(request, step + 1, steps)
        w = getattr(request, "_width", 0) or self.size[0]
        h = getattr(request, "_height", 0) or self.size[1]
        n = getattr(request, "_num_frames", 0) or self.size[2]
        key = "|".join(str(x) for x in (request.prompt, request.negative_prompt, request.seed, steps))
        d = hashlib.sha256(key.encode()).digest()
        t = numpy.linspace(0.0, 1.0, n, dtype=numpy.float32)[:, None, None]
        x = numpy.linspace(0.0, 1.0, w, dtype=numpy.float32)[None, None, :]
        y = numpy.linspace(0.0, 1.0, h, dtype=numpy.float32)[None, :, None]
        frames = numpy.empty((n, h, w, 3), dtype=numpy.float32)
        frames[..., 0] = (d[0] / 255.0 * x + 0.5 * t) % 1.0
        frames[..., 1] = (d[1] / 255.0 * y + 0.3 * t) % 1.0
        frames[..., 2] = d[2] / 255.0 * numpy.ones_like(x * y * t)
        side = max(2, min(w, h) // 6)
        for i in range(n):  # the moving square
            cx = int((d[3] / 255.0 + i / max(n - 1, 1)) % 1.0 * (w - side))
            cy = int(d[4] / 255.0 * (h - side))
            frames[i, cy:cy + side, cx:cx + side, :] = 1.0
        for entry in images:
            img = entry.image if hasattr(entry, "image") else entry["image"]
            pos = entry.frame_pos if hasattr(entry, "frame_pos") else entry.get("frame_pos", 0)
            if pos >= n:
                raise ValueError(f"frame_pos {pos} beyond the clip's {n} frames")
            from PIL import Image

            pic = Image.open(io.BytesIO(base64.b64decode(img))).convert("RGB").resize((w, h))
            frames[pos] = numpy.asarray(pic, dtype=numpy.float32) / 255.0
        return frames[None]


class TTWan22Runner(FakeVideoRunner):
    pass


class TTWan22T2VProdiaRunner(FakeVideoRunner):
    pass


class TTWan22I2VRunner(FakeVideoRunner):
    i2v = True


class TTWan22I2VProdiaRunner(TTWan22I2VRunner):
    pass


class TTWan22I2VAniSoraRunner(TTWan22I2VRunner):
    pass


class TTWan22I2VDistillRunner(TTWan22I2VRunner):
    pass


class TTWan22I2VLoRARunner(TTWan22I2VRunner):
    pass


class TTWan22I2VLightningRunner(TTWan22I2VRunner):
    pass


class TTMochi1Runner(FakeVideoRunner):
    size = (848, 480, 168)


class TTLTX23DistilledRunner(FakeVideoRunner):
    size = (1920, 1088, 145)


class TTMiniMaxH3Runner(FakeVideoRunner):
    size = (1366, 768, 97)
