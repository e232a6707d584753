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

Self-encoding, as at HEAD: the Prodia runners and MiniMax (export_in_runner, their default)
and LTX-2.3 (always) encode the MP4 with HEAD's utils.video_manager.VideoManager (the plain
road: our stand-in) under TT_VIDEO_OUTPUT_DIR and answer [path]; a prompt's [[file:KIND]]
(missing, garbage, outside, symlink) spoils that path for the refusal tests.
"""

import base64
import hashlib
import io
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path

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
        return self.make_frames(requests)[None]

    def make_frames(self, requests):
        """The clip's frames, (frames, H, W, 3) float32 in [0, 1], after the denoising steps."""
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
        return frames


def soundtrack(frames, fps, rate=48000):
    """A stereo soundtrack as long as the clip, (2, samples) float in [-1, 1] as HEAD's
    pipelines answer it: a 440 Hz tone, an octave up on the right."""
    import numpy

    t = numpy.arange(int(len(frames) * rate / fps), dtype=numpy.float32) / rate
    return numpy.stack([0.3 * numpy.sin(2 * numpy.pi * 440 * t), 0.3 * numpy.sin(2 * numpy.pi * 880 * t)])


def file_fault(prompt, path):
    """The file faults of the self-encoding fakes (see ../README.md): the path the runner
    answers instead of its MP4 at path, or path."""
    m = re.search(r"\[\[file:(\w+)\]\]", prompt or "")
    if m is None:
        return path
    kind = m.group(1)
    if kind == "missing":
        os.remove(path)
        return path
    if kind == "garbage":
        with open(path, "wb") as f:
            f.write(b"this is not an MP4 " * 64)
        return path
    outside = os.path.join(os.environ.get("FAKE_OUTSIDE_DIR") or tempfile.mkdtemp(prefix="fake-outside-"),
                           os.path.basename(path))
    shutil.move(path, outside)
    if kind == "outside":
        return outside
    if kind == "symlink":
        os.symlink(outside, path)
        return path
    raise ValueError(f"unknown file fault {kind!r}")


def video_manager():
    """HEAD's VideoManager (utils/video_manager.py; the plain road's stand-in)."""
    from utils.video_manager import VideoManager

    return VideoManager()


class TTWan22Runner(FakeVideoRunner):
    pass


class ProdiaExport:
    """HEAD's Prodia runners export the MP4 inside the runner by default (export_in_runner,
    which only HEAD's video_runner.py turns off): [VideoManager().export_to_mp4(frames)], HEAD's
    own encoder at its default 16 fps, writing under TT_VIDEO_OUTPUT_DIR."""

    def __init__(self, device_id):
        super().__init__(device_id)
        self.export_in_runner = True

    def run(self, requests):
        frames = self.make_frames(requests)
        if self.export_in_runner:
            return [file_fault(requests[0].prompt, video_manager().export_to_mp4(frames))]
        return frames[None]


class TTWan22T2VProdiaRunner(ProdiaExport, FakeVideoRunner):
    pass


class TTWan22I2VRunner(FakeVideoRunner):
    i2v = True


class TTWan22I2VProdiaRunner(ProdiaExport, TTWan22I2VRunner):
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


# HEAD's LTX runner writes under TT_VIDEO_OUTPUT_DIR as its VideoManager does, read at import.
LTX_VIDEO_OUTPUT_DIR = Path(os.environ.get("TT_VIDEO_OUTPUT_DIR", "/tmp/videos"))
LTX_FPS = 24


class TTLTX23DistilledRunner(FakeVideoRunner):
    """Like HEAD's, always self-encoding: its pipeline's generate() writes an AV MP4 (H.264 and
    AAC, 24 fps) to output_path under LTX_VIDEO_OUTPUT_DIR and run() answers [path]. Here
    HEAD's VideoManager.export_to_mp4_with_audio writes it (the real pipeline's encoder is
    tt-metal's)."""

    size = (1920, 1088, 145)

    def run(self, requests):
        LTX_VIDEO_OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
        output_path = str(LTX_VIDEO_OUTPUT_DIR / f"{uuid.uuid4()}.mp4")
        frames = self.make_frames(requests)
        made = video_manager().export_to_mp4_with_audio(frames, soundtrack(frames, LTX_FPS), 48000, fps=LTX_FPS)
        os.replace(made, output_path)
        return [file_fault(requests[0].prompt, output_path)]


class TTMiniMaxH3Runner(FakeVideoRunner):
    """Like HEAD's: with export_in_runner (its default) it muxes the soundtrack itself,
    [VideoManager().export_to_mp4_with_audio(frames, audio, rate, fps=24)]."""

    size = (1366, 768, 97)

    def __init__(self, device_id):
        super().__init__(device_id)
        self.export_in_runner = True

    def run(self, requests):
        frames = self.make_frames(requests)
        if not self.export_in_runner:
            return frames[None]
        path = video_manager().export_to_mp4_with_audio(frames, soundtrack(frames, 24), 48000, fps=24)
        return [file_fault(requests[0].prompt, path)]
