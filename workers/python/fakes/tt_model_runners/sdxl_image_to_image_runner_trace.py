"""Fake of HEAD's SDXL image-to-image runner (ours): the generated picture blended over the
input image (resized to 1024x1024) by strength; steps scaled by strength as diffusers does."""

import base64
import io

from PIL import Image

from tt_model_runners.sdxl_generate_runner_trace import SIZE, TTSDXLGenerateRunnerTrace, render


def decode(b64, mode):
    return Image.open(io.BytesIO(base64.b64decode(b64))).convert(mode).resize((SIZE, SIZE), Image.LANCZOS)


class TTSDXLImageToImageRunner(TTSDXLGenerateRunnerTrace):
    def is_request_batchable(self, request, batch=None):
        return super().is_request_batchable(request, batch) and (not batch or request.strength == batch[0].strength)

    def finish(self, request):
        init = decode(request.image, "RGB")
        return Image.blend(init, render(request), float(request.strength if request.strength is not None else 0.6))

    def run(self, requests):
        super().run(requests)  # device time, progress, faults
        return [self.finish(r) for r in requests]
