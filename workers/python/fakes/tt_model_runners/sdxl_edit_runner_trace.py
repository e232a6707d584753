"""Fake of HEAD's SDXL inpainting runner (ours): inside the mask (white) the image-to-image
picture, outside it the input image."""

from PIL import Image

from tt_model_runners.sdxl_image_to_image_runner_trace import TTSDXLImageToImageRunner, decode


class TTSDXLEditRunner(TTSDXLImageToImageRunner):
    def finish(self, request):
        init = decode(request.image, "RGB")
        return Image.composite(super().finish(request), init, decode(request.mask, "L"))
