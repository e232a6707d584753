"""Fake of HEAD's ImageToImageRequest (ours): a base64 image and a strength."""

from domain.image_generate_request import ImageGenerateRequest


class ImageToImageRequest(ImageGenerateRequest):
    _fields = dict(ImageGenerateRequest._fields, image="", strength=0.6)

    def validate(self):
        super().validate()
        if self.strength is not None and not 0.0 <= float(self.strength) <= 1.0:
            raise ValueError(f"strength {self.strength} is not in [0, 1]")
        if not self.image:
            raise ValueError("image is required")
