"""Fake of HEAD's SDXL runner (ours): deterministic 1024x1024 PIL images, MOCK_STEP_SECONDS per
denoising step, progress and previews through tt_worker_hooks."""

import hashlib
import os
import random
import re

import tt_worker_hooks as hooks
from PIL import Image

from tt_model_runners.fake_common import FakeRunner, seconds, trigger

def resolution():
    """HEAD's SDXL_IMAGE_RESOLUTION ("(1024, 1024)" or "(512, 512)"; "512", "512x512" too)."""
    nums = re.findall(r"\d+", os.environ.get("SDXL_IMAGE_RESOLUTION", "1024"))
    return int(nums[0]) if nums else 1024


SIZE = resolution()


def render(req, size=SIZE):
    seed = req.seed if req.seed is not None else random.randrange(1 << 31)
    key = "|".join(str(x) for x in (req.prompt, req.prompt_2, req.negative_prompt, req.negative_prompt_2, seed,
                                     req.num_inference_steps, req.guidance_scale, req.guidance_rescale))
    h = hashlib.sha256(key.encode()).digest()
    grad = Image.linear_gradient("L").resize((size, size), Image.BILINEAR)
    radial = Image.radial_gradient("L").resize((size, size), Image.BILINEAR)

    def tone(img, a, b):
        return img.point(lambda v: (v * (64 + a) // 128 + b) % 256)

    return Image.merge("RGB", (tone(grad, h[0], h[1]), tone(grad.rotate(90), h[2], h[3]), tone(radial, h[4], h[5])))


class TTSDXLGenerateRunnerTrace(FakeRunner):
    size = None  # the picture's side: SDXL_IMAGE_RESOLUTION's, or the model's own

    def is_request_batchable(self, request, batch=None):
        if not batch:
            return True
        first = batch[0]
        return (request.num_inference_steps, request.guidance_scale) == (first.num_inference_steps, first.guidance_scale)

    def run(self, requests):
        self.count_call()
        for r in requests:
            trigger(r.prompt)
        if any(r.timesteps is not None and r.sigmas is not None for r in requests):
            raise ValueError("Only one of timesteps or sigmas can be passed")
        steps = int(requests[0].num_inference_steps or 20)
        per_step = seconds("MOCK_STEP_SECONDS", 0.0)
        marks = {}
        for r in requests:
            p = hooks.partial_images(r)
            marks[id(r)] = {max(1, round(steps * (i + 1) / (p + 1))): i for i in range(p)}
        finals = None
        for step in range(1, steps + 1):
            self.sleep(requests, per_step)
            for r in requests:
                hooks.progress(r, step, steps)
                index = marks[id(r)].get(step)
                if index is not None and hooks.partial_images(r):
                    if finals is None:
                        finals = [render(q, 256) for q in requests]
                    gray = Image.new("RGB", (256, 256), (128, 128, 128))
                    pic = Image.blend(gray, finals[requests.index(r)], step / steps)
                    hooks.preview(r, index, 0, step, steps, pic)
        return [render(r, self.size or SIZE) for r in requests]
