"""Fake of HEAD's ImageEditRequest (ours): image-to-image plus a base64 mask."""

from domain.image_to_image_request import ImageToImageRequest


class ImageEditRequest(ImageToImageRequest):
    _fields = dict(ImageToImageRequest._fields, mask="")

    def validate(self):
        super().validate()
        if not self.mask:
            raise ValueError("mask is required")
